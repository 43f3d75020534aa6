package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/uptrace/bun"

	"pasarela/db"
)

// Notification channels (CONTRACT §6), as notif_evento_config names them.
const (
	ChannelEmail  = "email"
	ChannelChat   = "chat"
	ChannelSystem = "sistema"
)

// Event is something people should hear about: one of the ten events, a short
// Spanish title and text, a link to the thing, and who it is for.
type Event struct {
	Evento  string  `json:"evento"`
	Titulo  string  `json:"titulo"`
	Texto   string  `json:"texto"`
	Enlace  string  `json:"enlace"` // a path of the console, e.g. /tarea/12
	UserIDs []int64 `json:"user_ids"`
	// Key, when set, makes the event's deliveries unique: a second emission
	// with the same key (a retry, a second worker) delivers nothing more,
	// whatever else changed meanwhile (a title, a state, the recipients).
	Key string `json:"key,omitempty" river:"unique"`
}

// Recipients are the distinct users among ids, without actor (the one who
// caused the event; 0 for none): nobody is told of what they did themselves.
func Recipients(actor int64, ids ...*int64) []int64 {
	var out []int64
	for _, id := range ids {
		if id != nil && *id != actor && !slices.Contains(out, *id) {
			out = append(out, *id)
		}
	}
	return out
}

// NotifyArgs delivers one event on one channel.
type NotifyArgs struct {
	Event
	Canal string `json:"canal" river:"unique"` // with Key: once per channel
}

// Kind is the job's name in River's tables.
func (NotifyArgs) Kind() string { return "notificacion" }

// Emit turns an event into one delivery job per channel switched on for it,
// inside tx: the jobs exist if and only if the change that caused the event
// commits. Each channel is its own job, so one that fails does not hold back
// the others.
func (q *Queue) Emit(ctx context.Context, tx bun.Tx, store *db.Store, e Event) error {
	cfg, err := store.EventConfig(ctx, tx, e.Evento)
	if err != nil {
		return fmt.Errorf("emit %s: %w", e.Evento, err)
	}
	for _, p := range deliveries(cfg, e) {
		if _, err := q.InsertTx(ctx, tx, p.Args, p.InsertOpts); err != nil {
			return err
		}
	}
	return nil
}

// deliveries are the jobs of an event: one per channel switched on.
func deliveries(cfg db.NotifEventConfig, e Event) []river.InsertManyParams {
	var opts *river.InsertOpts
	if e.Key != "" {
		opts = &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
	}
	var out []river.InsertManyParams
	for _, ch := range []struct {
		name string
		on   bool
	}{{ChannelEmail, cfg.CanalEmail}, {ChannelChat, cfg.CanalChat}, {ChannelSystem, cfg.CanalSistema}} {
		if ch.on {
			out = append(out, river.InsertManyParams{Args: NotifyArgs{Event: e, Canal: ch.name}, InsertOpts: opts})
		}
	}
	return out
}

// NotifyWorker works NotifyArgs.
type NotifyWorker struct {
	river.WorkerDefaults[NotifyArgs]
	db       *bun.DB
	store    *db.Store
	channels *Channels
	baseURL  string
	log      *slog.Logger
}

// Timeout bounds one delivery (an SMTP exchange or a Bot API call).
func (w *NotifyWorker) Timeout(*river.Job[NotifyArgs]) time.Duration { return 30 * time.Second }

// NextRetry backs off quickly at first (a chat server's hiccup), then up to
// ten minutes; River's default waits attempt⁴ seconds.
func (w *NotifyWorker) NextRetry(job *river.Job[NotifyArgs]) time.Time {
	d := time.Second << min(job.Attempt, 10)
	return time.Now().Add(min(d, 10*time.Minute))
}

// Work delivers on the job's channel. A channel the environment does not set
// up is skipped with one log line: retrying cannot make it work.
func (w *NotifyWorker) Work(ctx context.Context, job *river.Job[NotifyArgs]) error {
	e := job.Args.Event
	link := e.Enlace
	if strings.HasPrefix(link, "/") {
		link = w.baseURL + link
	}
	var err error
	switch job.Args.Canal {
	case ChannelSystem:
		err = w.store.AddToInbox(ctx, w.db, e.UserIDs, db.InboxItem{Evento: e.Evento, Titulo: e.Titulo, Texto: e.Texto, Enlace: e.Enlace})
	case ChannelEmail:
		var to []string
		if to, err = w.store.UserEmails(ctx, w.db, e.UserIDs); err == nil && len(to) > 0 {
			err = w.channels.Mail(ctx, to, "Pasarela: "+e.Titulo, e.Texto, link)
		}
	case ChannelChat:
		err = w.channels.Chat(ctx, e.Titulo, e.Texto+"\n"+link)
	default:
		return river.JobCancel(fmt.Errorf("unknown channel %q", job.Args.Canal))
	}
	if errors.Is(err, errNotConfigured) {
		w.log.Info("notification channel not configured; delivery skipped", "canal", job.Args.Canal, "evento", e.Evento)
		return nil
	}
	if err != nil {
		return fmt.Errorf("deliver %s by %s: %w", e.Evento, job.Args.Canal, err)
	}
	return nil
}
