// Package config reads Pasarela's settings from the environment (CONTRACT §1).
//
// Load only parses and validates; it never reads a global. main passes the
// resulting Config down to whatever needs a piece of it.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Defaults for the optional variables, kept in one place.
const (
	DefaultPort           = 3000
	DefaultUploadDir      = "uploads"
	DefaultUploadMaxBytes = 10 << 20
	DefaultTelegramAPIURL = "https://api.telegram.org"
	// MinSecretBytes is the shortest APP_SECRET accepted: it keys HMACs and AES-256.
	MinSecretBytes = 32
	// MinPasswordLen is the shortest password accepted for any user.
	MinPasswordLen = 8
)

// Config is the validated environment of one process.
type Config struct {
	// DatabaseURL is empty only for `pasarela dev`, which then starts a private cluster.
	DatabaseURL string
	Port        int
	// AppSecret is nil when APP_SECRET is unset; see RequireSecret.
	AppSecret []byte
	// BaseURL is the public address of the app, without a trailing slash.
	BaseURL        string
	AdminEmail     string
	AdminPassword  string
	SMTP           *url.URL
	TelegramToken  string
	TelegramChatID string
	TelegramAPIURL string
	UploadDir      string
	UploadMaxBytes int64
	TrustedProxies []netip.Prefix
	LogLevel       slog.Level
}

// SecureCookies reports whether cookies must carry the Secure flag: the app is
// served over https.
func (c Config) SecureCookies() bool {
	return strings.HasPrefix(c.BaseURL, "https://")
}

// Load parses the environment through getenv (os.Getenv in production, a map in
// tests). Every problem found is reported in one line, each naming its variable.
func Load(getenv func(string) string) (Config, error) {
	c := Config{
		DatabaseURL:    strings.TrimSpace(getenv("DATABASE_URL")),
		Port:           DefaultPort,
		AdminEmail:     strings.TrimSpace(getenv("ADMIN_EMAIL")),
		AdminPassword:  getenv("ADMIN_PASSWORD"),
		TelegramToken:  strings.TrimSpace(getenv("CHAT_TELEGRAM_TOKEN")),
		TelegramChatID: strings.TrimSpace(getenv("CHAT_TELEGRAM_CHAT_ID")),
		TelegramAPIURL: DefaultTelegramAPIURL,
		UploadDir:      DefaultUploadDir,
		UploadMaxBytes: DefaultUploadMaxBytes,
		LogLevel:       slog.LevelInfo,
	}
	var errs []string
	bad := func(name, format string, args ...any) {
		errs = append(errs, name+": "+fmt.Sprintf(format, args...))
	}

	if c.DatabaseURL != "" {
		if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			bad("DATABASE_URL", "must be a postgres:// URL")
		}
	}
	if v := getenv("PORT"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 || p > 65535 {
			bad("PORT", "%q is not a port number (1-65535)", v)
		}
		c.Port = p
	}
	if v := getenv("APP_SECRET"); v != "" {
		if len(v) < MinSecretBytes {
			bad("APP_SECRET", "must be at least %d bytes long, got %d", MinSecretBytes, len(v))
		}
		c.AppSecret = []byte(v)
	}
	c.BaseURL = fmt.Sprintf("http://localhost:%d", c.Port)
	if v := strings.TrimSpace(getenv("BASE_URL")); v != "" {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("BASE_URL", "%q is not an absolute http(s) URL", v)
		}
		c.BaseURL = strings.TrimRight(v, "/")
	}
	switch {
	case (c.AdminEmail == "") != (c.AdminPassword == ""):
		bad("ADMIN_EMAIL", "ADMIN_EMAIL and ADMIN_PASSWORD must be set together")
	case c.AdminEmail != "":
		if _, err := mail.ParseAddress(c.AdminEmail); err != nil {
			bad("ADMIN_EMAIL", "%q is not an e-mail address", c.AdminEmail)
		}
		if len(c.AdminPassword) < MinPasswordLen {
			bad("ADMIN_PASSWORD", "must be at least %d characters", MinPasswordLen)
		}
	}
	if v := strings.TrimSpace(getenv("SMTP_URL")); v != "" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Hostname() == "" {
			bad("SMTP_URL", "must look like smtp://user:pass@host:port?from=addr")
		} else {
			c.SMTP = u
		}
	}
	if (c.TelegramToken == "") != (c.TelegramChatID == "") {
		bad("CHAT_TELEGRAM_TOKEN", "CHAT_TELEGRAM_TOKEN and CHAT_TELEGRAM_CHAT_ID must be set together")
	}
	if v := strings.TrimSpace(getenv("CHAT_TELEGRAM_API_URL")); v != "" {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("CHAT_TELEGRAM_API_URL", "%q is not an absolute http(s) URL", v)
		}
		c.TelegramAPIURL = strings.TrimRight(v, "/")
	}
	if v := strings.TrimSpace(getenv("UPLOAD_DIR")); v != "" {
		c.UploadDir = v
	}
	if v := strings.TrimSpace(getenv("UPLOAD_MAX_BYTES")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			bad("UPLOAD_MAX_BYTES", "%q is not a positive number of bytes", v)
		}
		c.UploadMaxBytes = n
	}
	if v := strings.TrimSpace(getenv("TRUSTED_PROXIES")); v != "" {
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			p, err := parsePrefix(part)
			if err != nil {
				bad("TRUSTED_PROXIES", "%q is not a CIDR or IP address", part)
				continue
			}
			c.TrustedProxies = append(c.TrustedProxies, p)
		}
	}
	if v := strings.TrimSpace(getenv("LOG_LEVEL")); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			bad("LOG_LEVEL", "%q is not one of debug, info, warn, error", v)
		}
	}

	if len(errs) > 0 {
		return Config{}, errors.New("invalid configuration: " + strings.Join(errs, "; "))
	}
	return c, nil
}

// RequireDatabase reports the missing DATABASE_URL for the commands that cannot
// start a private cluster.
func (c Config) RequireDatabase() error {
	if c.DatabaseURL == "" {
		return errors.New("invalid configuration: DATABASE_URL: required (postgres://user:pass@host:port/db), or a private cluster made by `pasarela dev` under .data/postgres")
	}
	return nil
}

// RequireSecret reports a missing APP_SECRET for the commands that sign or encrypt.
func (c Config) RequireSecret() error {
	if c.AppSecret == nil {
		return fmt.Errorf("invalid configuration: APP_SECRET: required, at least %d bytes", MinSecretBytes)
	}
	return nil
}

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}
