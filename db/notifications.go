package db

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// InboxItem is one notification in a user's inbox (the in-system channel).
type InboxItem struct {
	bun.BaseModel `bun:"table:notificaciones,alias:n"`

	ID        int64      `bun:"id,pk,autoincrement"`
	UserID    int64      `bun:"user_id"`
	Evento    string     `bun:"evento"`
	Titulo    string     `bun:"titulo"`
	Texto     string     `bun:"texto"`
	Enlace    string     `bun:"enlace"`
	CreatedAt time.Time  `bun:"created_at,nullzero,default:now()"`
	ReadAt    *time.Time `bun:"read_at"`
}

// SetEventConfig switches the channels of one event; an unknown event wraps ErrNotFound.
func (s *Store) SetEventConfig(ctx context.Context, idb bun.IDB, c NotifEventConfig) error {
	res, err := idb.NewUpdate().Model(&c).Column("canal_email", "canal_chat", "canal_sistema").
		Set("updated_at = now()").WherePK().Exec(ctx)
	if err != nil {
		return fmt.Errorf("save notification settings of %s: %w", c.Evento, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("notification event %q: %w", c.Evento, ErrNotFound)
	}
	return nil
}

// EventConfig returns the channels of one event.
func (s *Store) EventConfig(ctx context.Context, idb bun.IDB, evento string) (NotifEventConfig, error) {
	var c NotifEventConfig
	err := idb.NewSelect().Model(&c).Where("evento = ?", evento).Scan(ctx)
	if isNoRows(err) {
		return c, fmt.Errorf("notification event %q: %w", evento, ErrNotFound)
	}
	if err != nil {
		return c, fmt.Errorf("load notification settings of %s: %w", evento, err)
	}
	return c, nil
}

// AddToInbox puts one notification in each user's inbox.
func (s *Store) AddToInbox(ctx context.Context, idb bun.IDB, userIDs []int64, item InboxItem) error {
	if len(userIDs) == 0 {
		return nil
	}
	rows := make([]InboxItem, len(userIDs))
	for i, id := range userIDs {
		rows[i] = item
		rows[i].UserID = id
	}
	if _, err := idb.NewInsert().Model(&rows).Exec(ctx); err != nil {
		return fmt.Errorf("add %s to %d inboxes: %w", item.Evento, len(userIDs), err)
	}
	return nil
}

// Inbox returns page (1-based) of a user's notifications, unread first, then
// newest, and how many there are in all.
func (s *Store) Inbox(ctx context.Context, idb bun.IDB, userID int64, page int) ([]InboxItem, int, error) {
	var rows []InboxItem
	total, err := idb.NewSelect().Model(&rows).Where("user_id = ?", userID).
		OrderExpr("(read_at IS NOT NULL), id DESC").Limit(PageSize).Offset((page - 1) * PageSize).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("inbox of user %d: %w", userID, err)
	}
	return rows, total, nil
}

// UnreadCount is how many unread notifications a user has.
func (s *Store) UnreadCount(ctx context.Context, idb bun.IDB, userID int64) (int, error) {
	n, err := idb.NewSelect().Model((*InboxItem)(nil)).Where("user_id = ? AND read_at IS NULL", userID).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("unread notifications of user %d: %w", userID, err)
	}
	return n, nil
}

// MarkRead marks one of the user's notifications read; another user's, or
// none, wraps ErrNotFound. Marking a read one again changes nothing.
func (s *Store) MarkRead(ctx context.Context, idb bun.IDB, userID, id int64) error {
	res, err := idb.NewUpdate().Model((*InboxItem)(nil)).Set("read_at = COALESCE(read_at, now())").
		Where("id = ? AND user_id = ?", id, userID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("mark notification %d read: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("notification %d of user %d: %w", id, userID, ErrNotFound)
	}
	return nil
}

// MarkAllRead marks every unread notification of the user read.
func (s *Store) MarkAllRead(ctx context.Context, idb bun.IDB, userID int64) error {
	_, err := idb.NewUpdate().Model((*InboxItem)(nil)).Set("read_at = now()").
		Where("user_id = ? AND read_at IS NULL", userID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("mark notifications of user %d read: %w", userID, err)
	}
	return nil
}

// UserEmails returns the e-mail addresses of the users, in id order.
func (s *Store) UserEmails(ctx context.Context, idb bun.IDB, userIDs []int64) ([]string, error) {
	var emails []string
	if len(userIDs) == 0 {
		return nil, nil
	}
	err := idb.NewSelect().TableExpr("users").Column("email").Where("id IN (?)", bun.In(userIDs)).
		OrderExpr("id").Scan(ctx, &emails)
	if err != nil {
		return nil, fmt.Errorf("e-mail addresses of %d users: %w", len(userIDs), err)
	}
	return emails, nil
}
