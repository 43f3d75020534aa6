package db

import (
	"time"

	"github.com/uptrace/bun"
)

// Role names seeded by migrate.
const (
	RoleAdmin    = "Administrador"
	RoleOperator = "Operador"
)

// Module names seeded by migrate. A route guarded by a module is open to the
// roles that have it.
const (
	ModuleAdmin   = "Administración"
	ModuleServers = "Servidores"
	ModuleCards   = "Tarjetas"
)

// Role groups users; its modules decide what they may open.
type Role struct {
	bun.BaseModel `bun:"table:roles"`

	ID        int64     `bun:"id,pk,autoincrement"`
	Name      string    `bun:"name"`
	CreatedAt time.Time `bun:"created_at,nullzero,default:now()"`
}

// Module is an area of the console that can be granted to a role.
type Module struct {
	bun.BaseModel `bun:"table:modules"`

	ID          int64     `bun:"id,pk,autoincrement"`
	Name        string    `bun:"name"`
	Description string    `bun:"description"`
	CreatedAt   time.Time `bun:"created_at,nullzero,default:now()"`
}

// User is a person who logs in to the console.
type User struct {
	bun.BaseModel `bun:"table:users"`

	ID           int64     `bun:"id,pk,autoincrement"`
	Email        string    `bun:"email"`
	Name         string    `bun:"name"`
	PasswordHash string    `bun:"password_hash"`
	RoleID       int64     `bun:"role_id"`
	TimeZone     string    `bun:"time_zone"`
	CreatedAt    time.Time `bun:"created_at,nullzero,default:now()"`
	UpdatedAt    time.Time `bun:"updated_at,nullzero,default:now()"`

	// Filled by UserBySession and UserByEmail.
	RoleName string   `bun:"role_name,scanonly"`
	Modules  []string `bun:"modules,array,scanonly"`
}

// HasModule reports whether the user's role has the named module.
func (u *User) HasModule(name string) bool {
	for _, m := range u.Modules {
		if m == name {
			return true
		}
	}
	return false
}

// Session is a logged-in browser, identified by the hash of its cookie token.
type Session struct {
	bun.BaseModel `bun:"table:sessions"`

	TokenHash  []byte    `bun:"token_hash,pk"`
	UserID     int64     `bun:"user_id"`
	IP         string    `bun:"ip"`
	UserAgent  string    `bun:"user_agent"`
	CreatedAt  time.Time `bun:"created_at,nullzero,default:now()"`
	LastSeenAt time.Time `bun:"last_seen_at,nullzero,default:now()"`
	ExpiresAt  time.Time `bun:"expires_at"`
}

// NotifEventConfig says on which channels one event is delivered (CONTRACT §6).
type NotifEventConfig struct {
	bun.BaseModel `bun:"table:notif_evento_config"`

	Evento       string    `bun:"evento,pk"`
	CanalEmail   bool      `bun:"canal_email"`
	CanalChat    bool      `bun:"canal_chat"`
	CanalSistema bool      `bun:"canal_sistema"`
	UpdatedAt    time.Time `bun:"updated_at,nullzero,default:now()"`
}

// RoleModule is one row of the role × module matrix shown on /modules.
type RoleModule struct {
	RoleID     int64  `bun:"role_id"`
	RoleName   string `bun:"role_name"`
	ModuleID   int64  `bun:"module_id"`
	ModuleName string `bun:"module_name"`
	Enabled    bool   `bun:"enabled"`
}
