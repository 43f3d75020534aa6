package jobs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api"
	"github.com/nikoksr/notify/service/mail"
	"github.com/nikoksr/notify/service/telegram"

	"pasarela/config"
)

// errNotConfigured marks a channel the environment does not set up: its jobs
// are dropped with one log line, never retried.
var errNotConfigured = errors.New("channel not configured")

// Channels send notifications outside the console, through nikoksr/notify.
type Channels struct {
	smtp *url.URL

	telegramToken  string
	telegramChatID int64
	telegramAPI    string
	telegramMu     sync.Mutex
	telegram       *telegram.Telegram
}

// NewChannels reads SMTP_URL and CHAT_TELEGRAM_* (see config). Nothing is
// dialled here: a Telegram client is made at the first message.
func NewChannels(cfg config.Config) (*Channels, error) {
	ch := &Channels{smtp: cfg.SMTP, telegramToken: cfg.TelegramToken, telegramAPI: strings.TrimRight(cfg.TelegramAPIURL, "/")}
	if cfg.TelegramChatID != "" {
		id, err := strconv.ParseInt(cfg.TelegramChatID, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("CHAT_TELEGRAM_CHAT_ID: %q is not a chat id: %w", cfg.TelegramChatID, err)
		}
		ch.telegramChatID = id
	}
	return ch, nil
}

// Mail sends a plain-text message to the addresses (jordan-wright/email,
// under notify, adds the Message-ID).
func (ch *Channels) Mail(ctx context.Context, to []string, subject, body string) error {
	if ch.smtp == nil {
		return errNotConfigured
	}
	from := ch.smtp.Query().Get("from")
	if from == "" {
		from = "pasarela@" + ch.smtp.Hostname()
	}
	m := mail.New(from, ch.smtp.Host)
	if user := ch.smtp.User.Username(); user != "" {
		pass, _ := ch.smtp.User.Password()
		m.AuthenticateSMTP("", user, pass, ch.smtp.Hostname())
	}
	m.BodyFormat(mail.PlainText)
	m.AddReceivers(to...)
	return m.Send(ctx, subject, body)
}

// Chat sends a message to the configured Telegram chat.
func (ch *Channels) Chat(ctx context.Context, subject, body string) error {
	if ch.telegramToken == "" {
		return errNotConfigured
	}
	t, err := ch.telegramClient()
	if err != nil {
		return err
	}
	return t.Send(ctx, subject, body)
}

// telegramClient builds notify's Telegram service once. The Bot API client it
// sits on has a fixed endpoint, so its HTTP client rewrites every request to
// CHAT_TELEGRAM_API_URL (another Bot API server, or a test's).
func (ch *Channels) telegramClient() (*telegram.Telegram, error) {
	ch.telegramMu.Lock()
	defer ch.telegramMu.Unlock()
	if ch.telegram != nil {
		return ch.telegram, nil
	}
	api, err := url.Parse(ch.telegramAPI)
	if err != nil {
		return nil, fmt.Errorf("CHAT_TELEGRAM_API_URL: %w", err)
	}
	client := &http.Client{Timeout: 10 * 1e9, Transport: rewriteHost{to: api}}
	bot, err := tgbotapi.NewBotAPIWithClient(ch.telegramToken, client)
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	t := &telegram.Telegram{}
	t.SetClient(bot)
	t.AddReceivers(ch.telegramChatID)
	ch.telegram = t
	return t, nil
}

// rewriteHost sends every request to another scheme and host, same path.
type rewriteHost struct{ to *url.URL }

func (r rewriteHost) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = r.to.Scheme, r.to.Host
	req.URL.Path = strings.TrimRight(r.to.Path, "/") + req.URL.Path
	req.Host = r.to.Host
	return http.DefaultTransport.RoundTrip(req)
}
