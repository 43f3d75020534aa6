package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// validSignature checks X-Signature against HMAC-SHA256(secret, body): the
// value is `sha256=<hex>` or bare `<hex>`, in either case. The comparison is
// constant-time; the raw body is what was signed, never a re-serialisation.
func validSignature(secret string, body []byte, header string) bool {
	header = strings.TrimSpace(header)
	if len(header) > 7 && strings.EqualFold(header[:7], "sha256=") {
		header = header[7:]
	}
	got, err := hex.DecodeString(strings.ToLower(header))
	if err != nil || len(got) != sha256.Size {
		return false
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hmac.Equal(got, m.Sum(nil))
}
