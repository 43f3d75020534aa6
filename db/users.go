package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/uptrace/bun"
	"golang.org/x/crypto/bcrypt"
)

// Store runs Pasarela's queries. Every method takes the bun.IDB to run on, so
// a caller can pass a transaction.
type Store struct{}

// ErrBadCredentials is returned by Authenticate for an unknown e-mail or a wrong
// password alike, so that callers cannot tell the two apart.
var ErrBadCredentials = errors.New("bad credentials")

// ErrPasswordTooLong: bcrypt reads at most 72 bytes; longer would be silently cut.
var ErrPasswordTooLong = errors.New("password longer than 72 bytes")

// passwordCost is bcrypt's work factor: about 60 ms a check on the target machine.
const passwordCost = bcrypt.DefaultCost

// dummyHash is compared against when the e-mail is unknown, so that a login
// takes as long whether or not the account exists.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("pasarela-timing-equaliser"), passwordCost)

const userColumns = `u.*, r.name AS role_name,
	ARRAY(SELECT m.name FROM role_modules rm JOIN modules m ON m.id = rm.module_id
	      WHERE rm.role_id = u.role_id ORDER BY m.name) AS modules`

// HashPassword returns the bcrypt hash stored for a password.
func HashPassword(password string) (string, error) {
	if len(password) > 72 {
		return "", ErrPasswordTooLong
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), passwordCost)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return string(h), nil
}

// UpsertUser creates the user with that e-mail, or resets the password and role
// of the existing one (`pasarela user create`).
func (s *Store) UpsertUser(ctx context.Context, idb bun.IDB, email, password, role string) (*User, error) {
	hash, err := HashPassword(password)
	if err != nil {
		return nil, err
	}
	var roleID int64
	if err := idb.NewSelect().Table("roles").Column("id").Where("name = ?", role).Scan(ctx, &roleID); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("role %q: %w", role, ErrNotFound)
		}
		return nil, fmt.Errorf("look up role %q: %w", role, err)
	}
	u := &User{Email: strings.TrimSpace(email), PasswordHash: hash, RoleID: roleID, TimeZone: "UTC"}
	_, err = idb.NewInsert().Model(u).
		On("CONFLICT (lower(email)) DO UPDATE").
		Set("password_hash = EXCLUDED.password_hash, role_id = EXCLUDED.role_id, updated_at = now()").
		Returning("id, created_at").
		Exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("upsert user %s: %w", email, err)
	}
	return u, nil
}

// CountUsers returns how many users exist.
func (s *Store) CountUsers(ctx context.Context, idb bun.IDB) (int, error) {
	n, err := idb.NewSelect().Model((*User)(nil)).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count users: %w", err)
	}
	return n, nil
}

// Authenticate returns the user whose e-mail and password match, or ErrBadCredentials.
func (s *Store) Authenticate(ctx context.Context, idb bun.IDB, email, password string) (*User, error) {
	u := new(User)
	err := idb.NewSelect().ColumnExpr(userColumns).TableExpr("users AS u").
		Join("JOIN roles AS r ON r.id = u.role_id").
		Where("lower(u.email) = lower(?)", strings.TrimSpace(email)).
		Scan(ctx, u)
	if errors.Is(err, sql.ErrNoRows) {
		_ = bcrypt.CompareHashAndPassword(dummyHash, []byte(password))
		return nil, ErrBadCredentials
	}
	if err != nil {
		return nil, fmt.Errorf("look up user %s: %w", email, err)
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
		return nil, ErrBadCredentials
	}
	return u, nil
}

// SetTimeZone stores the IANA time zone a user reads dates in.
func (s *Store) SetTimeZone(ctx context.Context, idb bun.IDB, userID int64, tz string) error {
	if _, err := idb.NewUpdate().Model((*User)(nil)).Set("time_zone = ?, updated_at = now()", tz).Where("id = ?", userID).Exec(ctx); err != nil {
		return fmt.Errorf("set time zone of user %d: %w", userID, err)
	}
	return nil
}
