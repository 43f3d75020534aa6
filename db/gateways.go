package db

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"pasarela/db/secretbox"
)

// Gateways and their environments (CONTRACT §3).
const (
	GatewayCheckout     = "gwa"
	GatewaySubscription = "gwb"
	// CardService is the virtual-card API's settings (CONTRACT §7), kept as a gateway's.
	CardService = "tarjetas"

	EnvTest       = "test"
	EnvProduction = "production"
	EnvSandbox    = "sandbox"
)

// GatewayField is one setting of a gateway; Secret ones are encrypted at rest
// and shown masked.
type GatewayField struct {
	Name   string
	Secret bool
}

// GatewayFields lists each gateway's settings in the order the page shows them.
var GatewayFields = map[string][]GatewayField{
	GatewayCheckout: {
		{Name: "environment"},
		{Name: "api_key_test", Secret: true},
		{Name: "api_key_production", Secret: true},
		{Name: "secret_key_test", Secret: true},
		{Name: "secret_key_production", Secret: true},
		{Name: "callback_url"},
	},
	GatewaySubscription: {
		{Name: "environment"},
		{Name: "access_key_production", Secret: true},
		{Name: "access_key_sandbox", Secret: true},
		{Name: "url_production"},
		{Name: "url_sandbox"},
	},
	CardService: {
		{Name: "base_url"},
		{Name: "api_key", Secret: true},
	},
}

// GatewayEnvironments are the allowed environments, the default first.
var GatewayEnvironments = map[string][]string{
	GatewayCheckout:     {EnvTest, EnvProduction},
	GatewaySubscription: {EnvSandbox, EnvProduction},
}

// GatewaySettings are one gateway's decrypted values; a missing field is "".
type GatewaySettings struct {
	Gateway string
	Values  map[string]string
}

// Environment is the active environment (the gateway's default when unset).
func (g GatewaySettings) Environment() string {
	if v := g.Values["environment"]; v != "" {
		return v
	}
	return GatewayEnvironments[g.Gateway][0]
}

// Active returns the field of the active environment, e.g. Active("secret_key")
// is secret_key_test while the environment is test.
func (g GatewaySettings) Active(prefix string) string {
	return g.Values[prefix+"_"+g.Environment()]
}

// FieldChange is one field of a settings form: a new value, or Clear.
type FieldChange struct {
	Field string
	Value string
	Clear bool
}

// SettingChange is one line of a gateway's change history.
type SettingChange struct {
	bun.BaseModel `bun:"table:gateway_setting_changes"`

	ID        int64     `bun:"id,pk,autoincrement"`
	Gateway   string    `bun:"gateway"`
	Field     string    `bun:"field"`
	Action    string    `bun:"action"`
	UserID    *int64    `bun:"user_id"`
	UserEmail string    `bun:"user_email"`
	ChangedAt time.Time `bun:"changed_at,nullzero,default:now()"`
}

type gatewaySetting struct {
	bun.BaseModel `bun:"table:gateway_settings"`

	Gateway   string    `bun:"gateway,pk"`
	Field     string    `bun:"field,pk"`
	Value     []byte    `bun:"value"`
	Encrypted bool      `bun:"encrypted"`
	UpdatedAt time.Time `bun:"updated_at,nullzero,default:now()"`
}

func settingLabel(gateway, field string) string { return gateway + "/" + field }

// GatewaySettings loads and decrypts one gateway's settings.
func (s *Store) GatewaySettings(ctx context.Context, idb bun.IDB, box *secretbox.Box, gateway string) (GatewaySettings, error) {
	var rows []gatewaySetting
	if err := idb.NewSelect().Model(&rows).Where("gateway = ?", gateway).Scan(ctx); err != nil {
		return GatewaySettings{}, fmt.Errorf("load %s settings: %w", gateway, err)
	}
	g := GatewaySettings{Gateway: gateway, Values: map[string]string{}}
	for _, r := range rows {
		v := string(r.Value)
		if r.Encrypted {
			plain, err := box.Open(r.Value, settingLabel(gateway, r.Field))
			if err != nil {
				return GatewaySettings{}, fmt.Errorf("decrypt %s/%s: %w", gateway, r.Field, err)
			}
			v = plain
		}
		g.Values[r.Field] = v
	}
	return g, nil
}

// SaveGatewaySettings applies the changes that differ from what is stored, in
// one transaction, and records each changed field (not its value) with the user.
// It returns the fields that changed.
func (s *Store) SaveGatewaySettings(ctx context.Context, bdb *bun.DB, box *secretbox.Box, gateway string, changes []FieldChange, by *User) ([]string, error) {
	secret := map[string]bool{}
	for _, f := range GatewayFields[gateway] {
		secret[f.Name] = f.Secret
	}
	var changed []string
	err := bdb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		changed = nil
		// Serialises two admins saving the same gateway at once.
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext(?))", "gateway_settings/"+gateway); err != nil {
			return fmt.Errorf("lock %s settings: %w", gateway, err)
		}
		current, err := s.GatewaySettings(ctx, tx, box, gateway)
		if err != nil {
			return err
		}
		for _, ch := range changes {
			old, had := current.Values[ch.Field]
			action := "set"
			switch {
			case ch.Clear || ch.Value == "":
				if !had {
					continue
				}
				action = "cleared"
				if _, err := tx.NewDelete().Model((*gatewaySetting)(nil)).
					Where("gateway = ? AND field = ?", gateway, ch.Field).Exec(ctx); err != nil {
					return fmt.Errorf("clear %s/%s: %w", gateway, ch.Field, err)
				}
			case had && old == ch.Value:
				continue
			default:
				row := &gatewaySetting{Gateway: gateway, Field: ch.Field, Value: []byte(ch.Value), Encrypted: secret[ch.Field]}
				if row.Encrypted {
					row.Value = box.Seal(ch.Value, settingLabel(gateway, ch.Field))
				}
				if _, err := tx.NewInsert().Model(row).
					On("CONFLICT (gateway, field) DO UPDATE").
					Set("value = EXCLUDED.value, encrypted = EXCLUDED.encrypted, updated_at = now()").
					Exec(ctx); err != nil {
					return fmt.Errorf("save %s/%s: %w", gateway, ch.Field, err)
				}
			}
			entry := &SettingChange{Gateway: gateway, Field: ch.Field, Action: action, UserEmail: by.Email, UserID: &by.ID}
			if _, err := tx.NewInsert().Model(entry).Exec(ctx); err != nil {
				return fmt.Errorf("record change of %s/%s: %w", gateway, ch.Field, err)
			}
			changed = append(changed, ch.Field)
		}
		return nil
	})
	return changed, err
}

// SettingChanges returns a gateway's latest changes, newest first.
func (s *Store) SettingChanges(ctx context.Context, idb bun.IDB, gateway string, limit int) ([]SettingChange, error) {
	var rows []SettingChange
	if err := idb.NewSelect().Model(&rows).Where("gateway = ?", gateway).OrderExpr("id DESC").Limit(limit).Scan(ctx); err != nil {
		return nil, fmt.Errorf("list %s setting changes: %w", gateway, err)
	}
	return rows, nil
}
