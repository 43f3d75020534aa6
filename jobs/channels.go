package jobs

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/smtp"
	"net/url"
	"strconv"
	"strings"
	"sync"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api"
	"github.com/jordan-wright/email"
	"github.com/nikoksr/notify"
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

// Mail sends a message to the addresses, as plain text and as HTML, through
// notify. The HTML part says the same as the text, escaped, with the link as
// a link.
func (ch *Channels) Mail(ctx context.Context, to []string, subject, text, link string) error {
	if ch.smtp == nil {
		return errNotConfigured
	}
	from := ch.smtp.Query().Get("from")
	if from == "" {
		from = "pasarela@" + ch.smtp.Hostname()
	}
	var html strings.Builder
	if err := mailHTML.Execute(&html, map[string]string{"Title": subject, "Text": text, "Link": link}); err != nil {
		return fmt.Errorf("render the e-mail: %w", err)
	}
	m := mailService{addr: ch.smtp.Host, from: from, to: to, html: html.String()}
	if user := ch.smtp.User.Username(); user != "" {
		pass, _ := ch.smtp.User.Password()
		m.auth = smtp.PlainAuth("", user, pass, ch.smtp.Hostname())
	}
	body := text
	if link != "" {
		body += "\n\n" + link + "\n"
	}
	n := notify.New()
	n.UseServices(m)
	return n.Send(ctx, subject, body)
}

// mailService is a notify service for e-mail with both a plain-text and an
// HTML part: notify's own mail service sends one or the other. It sits on the
// same library (jordan-wright/email), which adds Message-Id and Date, and
// speaks STARTTLS when the server offers it.
type mailService struct {
	addr, from string
	to         []string
	auth       smtp.Auth
	html       string
}

func (m mailService) Send(ctx context.Context, subject, text string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e := email.NewEmail()
	e.From, e.To, e.Subject = m.from, m.to, subject
	e.Text, e.HTML = []byte(text), []byte(m.html)
	if err := e.Send(m.addr, m.auth); err != nil {
		return fmt.Errorf("send e-mail: %w", err)
	}
	return nil
}

var mailHTML = template.Must(template.New("mail").Parse(`<!DOCTYPE html>
<html lang="es"><head><meta charset="utf-8"><title>{{.Title}}</title></head>
<body style="font-family: system-ui, sans-serif; color: #111827; line-height: 1.5">
<p style="white-space: pre-line">{{.Text}}</p>
{{if .Link}}<p><a href="{{.Link}}" style="color: #3730a3">Abrir en Pasarela</a></p>{{end}}
<p style="color: #6b7280; font-size: 0.875em">Pasarela · aviso automático</p>
</body></html>
`))

// Chat sends a message to the configured Telegram chat.
func (ch *Channels) Chat(ctx context.Context, subject, body string) error {
	if ch.telegramToken == "" {
		return errNotConfigured
	}
	t, err := ch.telegramClient()
	if err == nil {
		err = t.Send(ctx, subject, body)
	}
	if err != nil {
		// The Bot API's URLs carry the token (/bot<token>/sendMessage), and
		// this error is kept in River's job rows and in the logs.
		return errors.New(strings.ReplaceAll(err.Error(), ch.telegramToken, "<token>"))
	}
	return nil
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
