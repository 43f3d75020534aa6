package server

import (
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// clientIP is the address of the client. X-Forwarded-For is believed only when
// the connection comes from TRUSTED_PROXIES, and then read from the right:
// the first address that is not itself a trusted proxy is the client, so a
// client cannot pass itself off as another by sending the header.
func (s *Server) clientIP(c *fiber.Ctx) netip.Addr {
	remote, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	remote = remote.Unmap()
	if !s.trusted(remote) {
		return remote
	}
	hops := strings.Split(c.Get(fiber.HeaderXForwardedFor), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		a = a.Unmap()
		if !s.trusted(a) {
			return a
		}
		remote = a
	}
	return remote
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
