package jobs_test

import (
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"pasarela/config"
	"pasarela/db"
	"pasarela/db/dbtest"
	"pasarela/jobs"
)

// mailbox is a real SMTP server in the test process that keeps what it receives.
type mailbox struct {
	mu   sync.Mutex
	msgs []string
}

func (m *mailbox) NewSession(*smtp.Conn) (smtp.Session, error) { return &mailSession{box: m}, nil }

type mailSession struct {
	box *mailbox
	to  []string
}

func (s *mailSession) Reset()        { s.to = nil }
func (s *mailSession) Logout() error { return nil }
func (s *mailSession) Mail(string, *smtp.MailOptions) error {
	return nil
}
func (s *mailSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = append(s.to, to)
	return nil
}
func (s *mailSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.box.mu.Lock()
	s.box.msgs = append(s.box.msgs, "To: "+strings.Join(s.to, ",")+"\n"+string(b))
	s.box.mu.Unlock()
	return nil
}

func (m *mailbox) all() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.msgs...)
}

// mailParts is the decoded body of each part of a multipart message, by type.
func mailParts(t *testing.T, msg *mail.Message) map[string]string {
	t.Helper()
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	require.NoError(t, err)
	require.Equal(t, "multipart/alternative", mediaType, "text and HTML, for the reader to choose")
	parts := map[string]string{}
	r := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := r.NextPart() // decodes quoted-printable
		if errors.Is(err, io.EOF) {
			return parts
		}
		require.NoError(t, err)
		b, err := io.ReadAll(p)
		require.NoError(t, err)
		typ, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		parts[typ] = string(b)
	}
}

func startSMTP(t *testing.T) (*mailbox, string) {
	t.Helper()
	box := &mailbox{}
	srv := smtp.NewServer(box)
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return box, ln.Addr().String()
}

// fakeTelegram is a Bot API that fails its first `failures` messages.
type fakeTelegram struct {
	failures  int32
	attempts  atomic.Int32
	delivered atomic.Int32
	lastText  atomic.Value
}

func (f *fakeTelegram) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.HasSuffix(r.URL.Path, "/getMe"):
		_, _ = io.WriteString(w, `{"ok":true,"result":{"id":42,"is_bot":true,"first_name":"Pasarela","username":"pasarela_bot"}}`)
	case strings.HasSuffix(r.URL.Path, "/sendMessage"):
		if f.attempts.Add(1) <= f.failures {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, `{"ok":false,"error_code":500,"description":"Internal Server Error"}`)
			return
		}
		_ = r.ParseForm()
		f.lastText.Store(r.Form.Get("text"))
		f.delivered.Add(1)
		_, _ = io.WriteString(w, `{"ok":true,"result":{"message_id":1,"date":0,"chat":{"id":-100123,"type":"group"},"text":"ok"}}`)
	default:
		http.NotFound(w, r)
	}
}

type notifyEnv struct {
	env   *dbtest.Env
	store *db.Store
	queue *jobs.Queue
	box   *mailbox
	chat  *fakeTelegram
	admin *db.User
}

func setupNotify(t *testing.T, chatFailures int32) *notifyEnv {
	t.Helper()
	env := dbtest.New(t)
	ctx := context.Background()
	store := &db.Store{}
	admin, err := store.UpsertUser(ctx, env.DB, "admin@example.com", "a-good-password", db.RoleAdmin)
	require.NoError(t, err)
	box, smtpAddr := startSMTP(t)
	chat := &fakeTelegram{failures: chatFailures}
	api := httptest.NewServer(chat)
	t.Cleanup(api.Close)
	smtpURL, _ := url.Parse("smtp://" + smtpAddr + "?from=avisos@pasarela.example")
	channels, err := jobs.NewChannels(config.Config{SMTP: smtpURL, TelegramToken: "123:abc", TelegramChatID: "-100123", TelegramAPIURL: api.URL})
	require.NoError(t, err)
	workers, _ := jobs.Register(jobs.Deps{DB: env.DB, Pool: env.Pool, Store: store, Channels: channels,
		BaseURL: "https://consola.example.cl", Logger: quiet})
	queue, err := jobs.NewQueue(env.DB, env.Pool, workers, quiet)
	require.NoError(t, err)
	startWorker(t, env, "w-notify", workers, nil)
	return &notifyEnv{env: env, store: store, queue: queue, box: box, chat: chat, admin: admin}
}

func (n *notifyEnv) emit(t *testing.T, e jobs.Event, commit bool) {
	t.Helper()
	errRollBack := errors.New("roll back")
	err := n.env.DB.RunInTx(context.Background(), nil, func(ctx context.Context, tx bun.Tx) error {
		if err := n.queue.Emit(ctx, tx, n.store, e); err != nil || commit {
			return err
		}
		return errRollBack
	})
	if commit {
		require.NoError(t, err)
	} else {
		require.ErrorIs(t, err, errRollBack)
	}
}

func TestAnEventReachesEveryChannelSwitchedOnOnce(t *testing.T) {
	t.Parallel()
	// The chat server fails twice before it takes the message.
	n := setupNotify(t, 2)
	ctx := context.Background()
	n.emit(t, jobs.Event{Evento: "servidor_caido", Titulo: "El servidor pagos-01 <no> responde",
		Texto: "Sin latido desde hace 90 s & más.", Enlace: "/app/servidor/1", UserIDs: []int64{n.admin.ID}}, true)

	require.Eventually(t, func() bool {
		unread, err := n.store.UnreadCount(ctx, n.env.DB, n.admin.ID)
		return err == nil && unread == 1 && len(n.box.all()) == 1 && n.chat.delivered.Load() == 1
	}, 30*time.Second, 50*time.Millisecond, "e-mail, chat and inbox each get the event")
	raw := n.box.all()[0]
	require.Contains(t, raw, "To: admin@example.com")
	msg, err := mail.ReadMessage(strings.NewReader(strings.SplitN(raw, "\n", 2)[1]))
	require.NoError(t, err)
	require.Equal(t, "Pasarela: El servidor pagos-01 <no> responde", msg.Header.Get("Subject"))
	require.NotEmpty(t, msg.Header.Get("Message-Id"))
	parts := mailParts(t, msg)
	require.Contains(t, parts["text/plain"], "Sin latido desde hace 90 s & más.\r\n\r\nhttps://consola.example.cl/app/servidor/1", "the link is whole")
	require.Contains(t, parts["text/html"], "Sin latido desde hace 90 s &amp; más.", "the HTML part is escaped")
	require.Contains(t, parts["text/html"], `<a href="https://consola.example.cl/app/servidor/1"`)
	require.NotContains(t, parts["text/html"], "<no>")
	require.Contains(t, n.chat.lastText.Load(), "El servidor pagos-01 <no> responde")
	require.Equal(t, int32(3), n.chat.attempts.Load(), "two failures, then one delivery")

	time.Sleep(time.Second)
	require.Len(t, n.box.all(), 1, "no channel delivers twice")
	require.Equal(t, int32(1), n.chat.delivered.Load())
}

func TestASwitchedOffChannelAndARolledBackChangeSendNothing(t *testing.T) {
	t.Parallel()
	n := setupNotify(t, 0)
	ctx := context.Background()
	// tarea_estado goes to the inbox only (the seed's default).
	require.NoError(t, n.store.SetEventConfig(ctx, n.env.DB, db.NotifEventConfig{Evento: "tarea_estado", CanalSistema: true}))
	n.emit(t, jobs.Event{Evento: "tarea_estado", Titulo: "Tarea 7 en revisión", UserIDs: []int64{n.admin.ID}}, true)
	n.emit(t, jobs.Event{Evento: "servidor_caido", Titulo: "Nunca ocurrió", UserIDs: []int64{n.admin.ID}}, false)

	require.Eventually(t, func() bool {
		unread, err := n.store.UnreadCount(ctx, n.env.DB, n.admin.ID)
		return err == nil && unread == 1
	}, 15*time.Second, 50*time.Millisecond)
	time.Sleep(1500 * time.Millisecond)
	require.Empty(t, n.box.all(), "e-mail is off for tarea_estado, and the rolled-back event never happened")
	require.Zero(t, n.chat.attempts.Load())
	var jobsLeft int
	require.NoError(t, n.env.DB.NewRaw(`SELECT count(*) FROM river_job WHERE kind = 'notificacion'`).Scan(ctx, &jobsLeft))
	require.Equal(t, 1, jobsLeft, "one job: the inbox of the committed event")

	// A task assigned and then rolled back: neither the task nor its notice.
	errUndo := errors.New("undo")
	err := n.env.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		task := &db.Task{Titulo: "Nunca asignada", Prioridad: "media", AsignadoID: &n.admin.ID}
		if err := n.store.CreateTask(ctx, tx, task, n.admin.ID); err != nil {
			return err
		}
		if err := n.queue.Emit(ctx, tx, n.store, jobs.Event{Evento: "tarea_asignada", Titulo: "Le asignaron «Nunca asignada»",
			UserIDs: []int64{n.admin.ID}}); err != nil {
			return err
		}
		return errUndo
	})
	require.ErrorIs(t, err, errUndo)
	var tasks, notices int
	require.NoError(t, n.env.DB.NewRaw(`SELECT count(*) FROM tareas`).Scan(ctx, &tasks))
	require.NoError(t, n.env.DB.NewRaw(`SELECT count(*) FROM river_job WHERE args->>'evento' = 'tarea_asignada'`).Scan(ctx, &notices))
	require.Zero(t, tasks)
	require.Zero(t, notices, "a rolled-back task change sends nothing")
}

func TestAnUnconfiguredChannelIsSkippedNotRetried(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	ctx := context.Background()
	store := &db.Store{}
	admin, err := store.UpsertUser(ctx, env.DB, "admin@example.com", "a-good-password", db.RoleAdmin)
	require.NoError(t, err)
	workers, _ := jobs.Register(jobs.Deps{DB: env.DB, Pool: env.Pool, Store: store, Logger: quiet}) // no SMTP, no chat
	queue, err := jobs.NewQueue(env.DB, env.Pool, workers, quiet)
	require.NoError(t, err)
	startWorker(t, env, "w-unconfigured", workers, nil)
	require.NoError(t, env.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		return queue.Emit(ctx, tx, store, jobs.Event{Evento: "servidor_caido", Titulo: "x", UserIDs: []int64{admin.ID}})
	}))
	require.Eventually(t, func() bool {
		var open int
		err := env.DB.NewRaw(`SELECT count(*) FROM river_job WHERE kind = 'notificacion' AND state <> 'completed'`).Scan(ctx, &open)
		return err == nil && open == 0
	}, 15*time.Second, 50*time.Millisecond, "every delivery completes: skipped channels are not retried")
}

func TestAnOverdueTaskIsAnnouncedOnceADayHoweverOftenTheJobRuns(t *testing.T) {
	t.Parallel()
	n := setupNotify(t, 0)
	ctx := context.Background()
	yesterday := time.Now().AddDate(0, 0, -2)
	for _, task := range []*db.Task{
		{Titulo: "Vencida", Prioridad: "alta", AsignadoID: &n.admin.ID, FechaLimite: &yesterday},
		{Titulo: "Sin fecha", Prioridad: "baja"},
	} {
		require.NoError(t, n.env.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			return n.store.CreateTask(ctx, tx, task, n.admin.ID)
		}))
	}
	for i := 0; i < 2; i++ { // the daily job, run twice (a retry, a second leader)
		if i == 1 { // and the task renamed and moved in between: its message differs, not its key
			_, err := n.env.DB.ExecContext(ctx, "UPDATE tareas SET titulo = 'Vencida, renombrada', estado = 'revisión' WHERE titulo = 'Vencida'")
			require.NoError(t, err)
		}
		require.NoError(t, n.env.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			_, err := n.queue.InsertTx(ctx, tx, jobs.OverdueTasksArgs{}, nil)
			return err
		}))
		require.Eventually(t, func() bool {
			var open int
			err := n.env.DB.NewRaw(`SELECT count(*) FROM river_job WHERE state <> 'completed'`).Scan(ctx, &open)
			return err == nil && open == 0
		}, 20*time.Second, 50*time.Millisecond)
	}
	var deliveries int
	require.NoError(t, n.env.DB.NewRaw(`SELECT count(*) FROM river_job WHERE kind = 'notificacion' AND args->>'evento' = 'tarea_vencida'`).
		Scan(ctx, &deliveries))
	require.Equal(t, 2, deliveries, "e-mail and inbox (tarea_vencida's channels), once, for the one overdue task")
	require.Len(t, n.box.all(), 1)
	unread, err := n.store.UnreadCount(ctx, n.env.DB, n.admin.ID)
	require.NoError(t, err)
	require.Equal(t, 1, unread)
}

func TestAChatErrorNeverCarriesTheBotToken(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	const token = "987654:SECRET-bot-token"
	channels, err := jobs.NewChannels(config.Config{TelegramToken: token, TelegramChatID: "-100123", TelegramAPIURL: down})
	require.NoError(t, err)
	err = channels.Chat(context.Background(), "Aviso", "texto")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "SECRET", "the error is stored in River's job row and logged")
	require.Contains(t, err.Error(), "<token>")
}
