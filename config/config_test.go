package config

import (
	"log/slog"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadAppliesDefaultsWhenNothingIsSet(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatalf("Load with empty environment: %v", err)
	}
	if c.Port != 3000 || c.UploadDir != "uploads" || c.UploadMaxBytes != 10<<20 || c.LogLevel != slog.LevelInfo {
		t.Errorf("defaults = port %d, dir %q, max %d, level %v", c.Port, c.UploadDir, c.UploadMaxBytes, c.LogLevel)
	}
	if c.BaseURL != "http://localhost:3000" {
		t.Errorf("BaseURL default = %q, want http://localhost:3000", c.BaseURL)
	}
	if c.SecureCookies() {
		t.Error("SecureCookies over http should be false")
	}
	if c.RequireSecret() == nil || c.RequireDatabase() == nil {
		t.Error("an unset APP_SECRET and DATABASE_URL should be reported by the Require methods")
	}
}

func TestLoadParsesEveryVariable(t *testing.T) {
	c, err := Load(env(map[string]string{
		"DATABASE_URL":          "postgres://u:p@db:5432/pasarela",
		"PORT":                  "8080",
		"APP_SECRET":            strings.Repeat("s", 32),
		"BASE_URL":              "https://console.example.com/",
		"ADMIN_EMAIL":           "admin@example.com",
		"ADMIN_PASSWORD":        "correct horse",
		"SMTP_URL":              "smtp://u:p@mail:25?from=ops@example.com",
		"CHAT_TELEGRAM_TOKEN":   "123:abc",
		"CHAT_TELEGRAM_CHAT_ID": "-100",
		"CHAT_TELEGRAM_API_URL": "http://127.0.0.1:9999/",
		"UPLOAD_DIR":            "/var/uploads",
		"UPLOAD_MAX_BYTES":      "2048",
		"TRUSTED_PROXIES":       "10.0.0.0/8, 192.168.1.7",
		"LOG_LEVEL":             "debug",
	}))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.Port != 8080 || c.BaseURL != "https://console.example.com" || !c.SecureCookies() {
		t.Errorf("port %d base %q secure %v", c.Port, c.BaseURL, c.SecureCookies())
	}
	if c.SMTP == nil || c.SMTP.Hostname() != "mail" || c.TelegramAPIURL != "http://127.0.0.1:9999" {
		t.Errorf("smtp %v telegram api %q", c.SMTP, c.TelegramAPIURL)
	}
	if len(c.TrustedProxies) != 2 || c.TrustedProxies[1].String() != "192.168.1.7/32" {
		t.Errorf("trusted proxies = %v", c.TrustedProxies)
	}
	if c.UploadMaxBytes != 2048 || c.LogLevel != slog.LevelDebug {
		t.Errorf("max %d level %v", c.UploadMaxBytes, c.LogLevel)
	}
}

func TestLoadRejectsInvalidValuesNamingTheVariable(t *testing.T) {
	cases := []struct {
		name, key, value string
	}{
		{"port not a number", "PORT", "abc"},
		{"port out of range", "PORT", "70000"},
		{"short secret", "APP_SECRET", "short"},
		{"relative base url", "BASE_URL", "console.example.com"},
		{"database url of another scheme", "DATABASE_URL", "mysql://x"},
		{"smtp url without host", "SMTP_URL", "smtp://"},
		{"upload size negative", "UPLOAD_MAX_BYTES", "-1"},
		{"upload size with unit", "UPLOAD_MAX_BYTES", "10MB"},
		{"proxy not a cidr", "TRUSTED_PROXIES", "10.0.0.0/99"},
		{"unknown log level", "LOG_LEVEL", "loud"},
		{"admin email without password", "ADMIN_EMAIL", "admin@example.com"},
		{"telegram token without chat", "CHAT_TELEGRAM_TOKEN", "123:abc"},
		{"telegram api not a url", "CHAT_TELEGRAM_API_URL", "ftp://x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(env(map[string]string{tc.key: tc.value}))
			if err == nil {
				t.Fatalf("%s=%q was accepted", tc.key, tc.value)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.key+":") || strings.Contains(msg, "\n") {
				t.Errorf("error %q should be one line naming %s", msg, tc.key)
			}
		})
	}
}

func TestLoadRejectsAShortAdminPassword(t *testing.T) {
	_, err := Load(env(map[string]string{"ADMIN_EMAIL": "a@example.com", "ADMIN_PASSWORD": "short"}))
	if err == nil || !strings.Contains(err.Error(), "ADMIN_PASSWORD:") {
		t.Fatalf("err = %v, want one naming ADMIN_PASSWORD", err)
	}
}
