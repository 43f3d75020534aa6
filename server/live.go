package server

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"pasarela/db"
)

// Live updates. Triggers NOTIFY db.LiveChannel when the board or an inbox
// changes (migration 20261129000001_live); each web process keeps one
// LISTEN connection (liveHub) and tells its open pages over Server-Sent
// Events (GET /app/eventos), which htmx-ext-sse turns into swaps and
// requests. No broker: any number of web processes each hear every notice.
//
// Catching up: every event carries a token (this process's id and the count
// of notices it has heard). A page is rendered with the current token and
// connects with ?desde=<token>; a browser reconnecting by itself sends the
// last token it saw in Last-Event-ID. A stream that starts from an older
// token, or from another process's, first tells the page to refresh all:
// whatever happened while it was away is then on screen.

// liveTopics is what changed, as bits: a page refreshes each at most once
// however many notices arrived while it was busy.
type liveTopics uint8

const (
	topicBoard liveTopics = 1 << iota
	topicInbox
	topicAll = topicBoard | topicInbox
)

// liveEventsPath is the page's event stream.
const liveEventsPath = "/app/eventos"

const (
	// liveHeartbeat keeps proxies from closing an idle stream and finds
	// browsers that went away.
	liveHeartbeat = 15 * time.Second
	// liveWriteTimeout cuts a stream whose browser stopped reading.
	liveWriteTimeout = 20 * time.Second
	// liveMaxAge ends a stream now and then: the browser reconnects at once
	// (with its Last-Event-ID, which every heartbeat keeps current, so
	// without a refresh), and the reconnection checks the session again.
	liveMaxAge = 5 * time.Minute
	// liveBadgeQueries bounds the unread counts run at once: a notice to
	// every inbox ('bandeja:*') wakes every stream together.
	liveBadgeQueries = 4
)

type liveClient struct {
	userID  int64
	pending liveTopics    // guarded by liveHub.mu
	wake    chan struct{} // capacity 1: "pending has something"
}

type liveHub struct {
	connConfig *pgx.ConnConfig
	log        *slog.Logger
	instance   string
	cancel     context.CancelFunc
	stopped    chan struct{} // closed when the listener has stopped

	mu      sync.Mutex
	seq     uint64
	clients map[*liveClient]struct{}
}

// startLiveHub starts listening before the first page is rendered, so that a
// page's token never predates what the hub has heard.
func startLiveHub(connConfig *pgx.ConnConfig, log *slog.Logger) (*liveHub, error) {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	h := &liveHub{connConfig: connConfig, log: log, instance: hex.EncodeToString(b),
		stopped: make(chan struct{}), clients: map[*liveClient]struct{}{}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := h.connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("live updates: %w", err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	h.cancel = stop
	go h.run(runCtx, conn)
	return h, nil
}

// token is the catch-up mark of what this process has heard so far.
func (h *liveHub) token() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tokenLocked()
}

func (h *liveHub) tokenLocked() string {
	return h.instance + "-" + strconv.FormatUint(h.seq, 10)
}

// subscribe adds a stream; one that starts from another mark than the
// current one is told to refresh all at once.
func (h *liveHub) subscribe(userID int64, since string) *liveClient {
	cl := &liveClient{userID: userID, wake: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clients[cl] = struct{}{}
	if since != h.tokenLocked() {
		h.notifyLocked(cl, topicAll)
	}
	return cl
}

func (h *liveHub) unsubscribe(cl *liveClient) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.clients, cl)
}

// take returns what changed for cl since the last take, and the token that
// covers it: a stream that drops after writing it has missed nothing before.
func (h *liveHub) take(cl *liveClient) (liveTopics, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := cl.pending
	cl.pending = 0
	return t, h.tokenLocked()
}

func (h *liveHub) notifyLocked(cl *liveClient, t liveTopics) {
	cl.pending |= t
	select {
	case cl.wake <- struct{}{}:
	default: // already awake
	}
}

// publish hands one notice to the streams it concerns.
func (h *liveHub) publish(payload string) {
	var t liveTopics
	var users map[int64]bool // nil: every user
	switch {
	case payload == "tablero":
		t = topicBoard
	case strings.HasPrefix(payload, "bandeja:"):
		t = topicInbox
		if ids := strings.TrimPrefix(payload, "bandeja:"); ids != "*" {
			users = map[int64]bool{}
			for _, s := range strings.Split(ids, ",") {
				if id, err := strconv.ParseInt(s, 10, 64); err == nil {
					users[id] = true
				}
			}
		}
	default:
		t = topicAll // a notice from a newer release: refresh rather than miss it
	}
	h.broadcast(t, users)
}

func (h *liveHub) broadcast(t liveTopics, users map[int64]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	for cl := range h.clients {
		if users == nil || users[cl.userID] {
			h.notifyLocked(cl, t)
		}
	}
}

func (h *liveHub) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, h.connConfig)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{db.LiveChannel}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("listen: %w", err)
	}
	return conn, nil
}

// run receives notices until close, reconnecting with backoff. Notices sent
// while the connection was down are lost, so a reconnection tells every open
// page to refresh all.
func (h *liveHub) run(ctx context.Context, conn *pgx.Conn) {
	defer close(h.stopped)
	for {
		err := h.receive(ctx, conn)
		if ctx.Err() != nil {
			return
		}
		h.log.Warn("live updates: lost the LISTEN connection; reconnecting", "error", err)
		for backoff := 100 * time.Millisecond; ; backoff = min(backoff*2, 5*time.Second) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			if conn, err = h.connect(ctx); err == nil {
				break
			}
		}
		h.log.Info("live updates: listening again")
		h.broadcast(topicAll, nil)
	}
}

func (h *liveHub) receive(ctx context.Context, conn *pgx.Conn) error {
	defer conn.Close(context.Background())
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		h.publish(n.Payload)
	}
}

// close stops the listener and waits for it.
func (h *liveHub) close() {
	h.cancel()
	<-h.stopped
}

// liveEvents is GET /app/eventos: the page's event stream. Events:
// "tablero" (the board changed: the board reloads itself) and "bandeja"
// (the user's unread badge, as HTML to swap in).
func (s *Server) liveEvents(c *fiber.Ctx) error {
	u := currentUser(c)
	if u == nil {
		// No session (it expired, or the user logged out elsewhere): 204 tells
		// the browser to stop reconnecting, where a redirect to the login
		// page would be retried forever. The page's next action goes to login.
		return c.SendStatus(fiber.StatusNoContent)
	}
	since := c.Get("Last-Event-ID")
	if since == "" {
		since = c.Query("desde")
	}
	cl := s.live.subscribe(u.ID, since)
	// Captured now: the request's context is recycled once the handler returns.
	shutdown := c.Context().Done()
	conn := c.Context().Conn()
	log := requestLogger(c, s.log)

	c.Set(fiber.HeaderContentType, "text/event-stream; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer s.live.unsubscribe(cl)
		heartbeat := time.NewTicker(liveHeartbeat)
		defer heartbeat.Stop()
		maxAge := time.NewTimer(liveMaxAge)
		defer maxAge.Stop()
		// Reconnect after 2 s when the stream ends (the browser's default is 3 s).
		_, _ = w.WriteString("retry: 2000\n\n")
		for {
			_ = conn.SetWriteDeadline(time.Now().Add(liveWriteTimeout))
			if err := w.Flush(); err != nil {
				return // the browser went away
			}
			select {
			case <-shutdown:
				return
			case <-s.live.stopped:
				return
			case <-maxAge.C:
				topics, token := s.live.take(cl)
				if topics == 0 {
					fmt.Fprintf(w, "id: %s\n\n", token)
				} else {
					s.writeLive(w, u.ID, topics, token, log)
				}
				_ = conn.SetWriteDeadline(time.Now().Add(liveWriteTimeout))
				_ = w.Flush()
				return
			case <-heartbeat.C:
				// An event with an id and no data moves the browser's
				// Last-Event-ID to what this stream has covered (notices for
				// other users included), so a reconnection asks for no refresh.
				topics, token := s.live.take(cl)
				if topics == 0 {
					fmt.Fprintf(w, "id: %s\n\n", token)
					continue
				}
				s.writeLive(w, u.ID, topics, token, log)
			case <-cl.wake:
				topics, token := s.live.take(cl)
				s.writeLive(w, u.ID, topics, token, log)
			}
		}
	})
	return nil
}

// writeLive writes the events of what changed.
func (s *Server) writeLive(w *bufio.Writer, userID int64, topics liveTopics, token string, log *slog.Logger) {
	if topics&topicBoard != 0 {
		writeEvent(w, token, "tablero", token)
	}
	if topics&topicInbox != 0 {
		badge, err := s.unreadBadge(userID)
		if err != nil {
			log.Error("live updates: unread badge", "error", err)
			return
		}
		writeEvent(w, token, "bandeja", badge)
	}
}

// writeEvent writes one event; data may span lines.
func writeEvent(w *bufio.Writer, id, event, data string) {
	fmt.Fprintf(w, "id: %s\nevent: %s\n", id, event)
	for _, line := range strings.Split(data, "\n") {
		fmt.Fprintf(w, "data: %s\n", line)
	}
	_ = w.WriteByte('\n')
}

// unreadBadge renders the layout's unread badge for the user, as the
// notification list swaps it too.
func (s *Server) unreadBadge(userID int64) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	select {
	case s.badgeQueries <- struct{}{}:
		defer func() { <-s.badgeQueries }()
	case <-ctx.Done():
		return "", ctx.Err()
	}
	n, err := s.store.UnreadCount(ctx, s.db, userID)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := s.views.Render(&b, "partials/unread", map[string]any{"Unread": n, "OOB": false}); err != nil {
		return "", fmt.Errorf("render the unread badge: %w", err)
	}
	if err := s.views.Render(&b, "partials/unread_menu", map[string]any{"Unread": n, "OOB": true}); err != nil {
		return "", fmt.Errorf("render the unread count of the menu: %w", err)
	}
	return b.String(), nil
}
