package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"
)

// ErrLockout is returned when a change would leave no role able to administer
// the console.
var ErrLockout = errors.New("the Administrador role must keep the Administración module")

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// RoleModules returns every role × module pair and whether it is granted,
// ordered by role then module.
func (s *Store) RoleModules(ctx context.Context, idb bun.IDB) ([]RoleModule, error) {
	var rows []RoleModule
	err := idb.NewRaw(`
		SELECT r.id AS role_id, r.name AS role_name, m.id AS module_id, m.name AS module_name,
		       rm.role_id IS NOT NULL AS enabled
		FROM roles r CROSS JOIN modules m
		LEFT JOIN role_modules rm ON rm.role_id = r.id AND rm.module_id = m.id
		ORDER BY r.name, m.name`).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("list role modules: %w", err)
	}
	return rows, nil
}

// SetRoleModule grants or withdraws a module from a role, both named. Unknown
// names wrap ErrNotFound; withdrawing Administración from Administrador is ErrLockout.
func (s *Store) SetRoleModule(ctx context.Context, idb bun.IDB, role, module string, enabled bool) error {
	if !enabled && role == RoleAdmin && module == ModuleAdmin {
		return ErrLockout
	}
	var ids struct {
		RoleID   int64 `bun:"role_id"`
		ModuleID int64 `bun:"module_id"`
	}
	err := idb.NewRaw(`SELECT r.id AS role_id, m.id AS module_id FROM roles r, modules m WHERE r.name = ? AND m.name = ?`,
		role, module).Scan(ctx, &ids)
	if isNoRows(err) {
		return fmt.Errorf("role %q or module %q: %w", role, module, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("look up role %q and module %q: %w", role, module, err)
	}
	if enabled {
		_, err = idb.NewRaw(`INSERT INTO role_modules (role_id, module_id) VALUES (?, ?) ON CONFLICT DO NOTHING`,
			ids.RoleID, ids.ModuleID).Exec(ctx)
	} else {
		_, err = idb.NewRaw(`DELETE FROM role_modules WHERE role_id = ? AND module_id = ?`, ids.RoleID, ids.ModuleID).Exec(ctx)
	}
	if err != nil {
		return fmt.Errorf("set module %q for role %q: %w", module, role, err)
	}
	return nil
}
