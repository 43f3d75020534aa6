package db

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// SeedInput is what the seed needs from the environment: the first admin,
// created only while no user exists. Both empty: no admin is created.
type SeedInput struct {
	AdminEmail    string
	AdminPassword string
}

// Events are the ten notification events of CONTRACT §6 with their default
// channels, chosen so that what needs a person now (a server down, an
// assignment) reaches them outside the console too.
var Events = []NotifEventConfig{
	{Evento: "tarea_asignada", CanalEmail: true, CanalSistema: true},
	{Evento: "tarea_estado", CanalSistema: true},
	{Evento: "tarea_comentario", CanalSistema: true},
	{Evento: "tarea_vencida", CanalEmail: true, CanalSistema: true},
	{Evento: "ticket_creado", CanalEmail: true, CanalSistema: true},
	{Evento: "ticket_respondido", CanalEmail: true, CanalSistema: true},
	{Evento: "servidor_caido", CanalEmail: true, CanalChat: true, CanalSistema: true},
	{Evento: "servidor_recuperado", CanalChat: true, CanalSistema: true},
	{Evento: "servidor_umbral", CanalChat: true, CanalSistema: true},
	{Evento: "url_monitor_estado", CanalChat: true, CanalSistema: true},
}

var seedModules = []Module{
	{Name: ModuleAdmin, Description: "Pasarelas de pago, tareas, notificaciones y usuarios"},
	{Name: ModuleServers, Description: "Servidores, métricas y monitor de URLs"},
	{Name: ModuleCards, Description: "API de tarjetas virtuales: configuración y consultas"},
}

// Seed inserts what the console needs to start, leaving alone anything an
// administrator has changed since: it only adds what is missing. It reports
// whether it created the first admin.
func (s *Store) Seed(ctx context.Context, bdb *bun.DB, in SeedInput) (adminCreated bool, err error) {
	err = bdb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, name := range []string{RoleAdmin, RoleOperator} {
			if _, err := tx.NewInsert().Model(&Role{Name: name}).On("CONFLICT (name) DO NOTHING").Exec(ctx); err != nil {
				return fmt.Errorf("seed role %s: %w", name, err)
			}
		}
		for i := range seedModules {
			m := seedModules[i]
			if _, err := tx.NewInsert().Model(&m).On("CONFLICT (name) DO NOTHING").Exec(ctx); err != nil {
				return fmt.Errorf("seed module %s: %w", m.Name, err)
			}
		}
		_, err := tx.NewRaw(`
			INSERT INTO role_modules (role_id, module_id)
			SELECT r.id, m.id FROM roles r, modules m WHERE r.name = ? AND m.name IN (?)
			ON CONFLICT DO NOTHING`, RoleAdmin, bun.In([]string{ModuleAdmin, ModuleServers, ModuleCards})).Exec(ctx)
		if err != nil {
			return fmt.Errorf("seed admin modules: %w", err)
		}
		events := append([]NotifEventConfig(nil), Events...)
		if _, err := tx.NewInsert().Model(&events).On("CONFLICT (evento) DO NOTHING").Exec(ctx); err != nil {
			return fmt.Errorf("seed notification events: %w", err)
		}
		if in.AdminEmail == "" {
			return nil
		}
		// The lock makes "no user yet" and the insert one step across processes.
		if _, err := tx.ExecContext(ctx, "LOCK TABLE users IN SHARE ROW EXCLUSIVE MODE"); err != nil {
			return fmt.Errorf("lock users: %w", err)
		}
		n, err := s.CountUsers(ctx, tx)
		if err != nil || n > 0 {
			return err
		}
		if _, err := s.UpsertUser(ctx, tx, in.AdminEmail, in.AdminPassword, RoleAdmin); err != nil {
			return fmt.Errorf("seed first admin: %w", err)
		}
		adminCreated = true
		return nil
	})
	return adminCreated && err == nil, err
}

// EventConfigs lists the notification settings in seed order.
func (s *Store) EventConfigs(ctx context.Context, idb bun.IDB) ([]NotifEventConfig, error) {
	var rows []NotifEventConfig
	if err := idb.NewSelect().Model(&rows).OrderExpr("evento").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list notification settings: %w", err)
	}
	return rows, nil
}
