package db_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"pasarela/db"
	"pasarela/db/dbtest"
)

func TestMigrateTwiceIsHarmlessAndSeedsOnce(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	ctx := context.Background()
	seed := db.SeedInput{AdminEmail: "Admin@Example.com", AdminPassword: "first-password"}

	// Two processes migrating at the same moment: one waits for the other.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); _, errs[i] = db.Migrate(ctx, env.DB, env.Pool, seed) }()
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	// A later run with another admin does not add a second first admin.
	created, err := db.Migrate(ctx, env.DB, env.Pool, db.SeedInput{AdminEmail: "other@example.com", AdminPassword: "other-password"})
	require.NoError(t, err)
	require.False(t, created)

	s := &db.Store{}
	n, err := s.CountUsers(ctx, env.DB)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the first admin is created only while no user exists")

	u, err := s.Authenticate(ctx, env.DB, "admin@example.com", "first-password")
	require.NoError(t, err, "login is case-insensitive on the e-mail")
	require.Equal(t, db.RoleAdmin, u.RoleName)
	require.ElementsMatch(t, []string{db.ModuleAdmin, db.ModuleServers, db.ModuleCards}, u.Modules)

	events, err := s.EventConfigs(ctx, env.DB)
	require.NoError(t, err)
	require.Len(t, events, 10)
}

func TestSeedKeepsAnAdministratorsChanges(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	ctx := context.Background()
	s := &db.Store{}
	require.NoError(t, s.SetRoleModule(ctx, env.DB, db.RoleOperator, db.ModuleServers, true))
	_, err := env.DB.NewUpdate().Model((*db.NotifEventConfig)(nil)).Set("canal_sistema = false").Where("evento = 'tarea_estado'").Exec(ctx)
	require.NoError(t, err)

	_, err = s.Seed(ctx, env.DB, db.SeedInput{})
	require.NoError(t, err)

	rows, err := s.RoleModules(ctx, env.DB)
	require.NoError(t, err)
	require.Len(t, rows, 6, "two roles × three modules")
	for _, r := range rows {
		if r.RoleName == db.RoleOperator && r.ModuleName == db.ModuleServers {
			require.True(t, r.Enabled, "seed must not withdraw a module granted by hand")
		}
	}
	var on bool
	require.NoError(t, env.DB.NewSelect().Table("notif_evento_config").Column("canal_sistema").Where("evento = 'tarea_estado'").Scan(ctx, &on))
	require.False(t, on, "seed must not switch a channel back on")
}

func TestSetRoleModuleRefusesToLockAdministratorsOut(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	s := &db.Store{}
	err := s.SetRoleModule(context.Background(), env.DB, db.RoleAdmin, db.ModuleAdmin, false)
	require.ErrorIs(t, err, db.ErrLockout)
	err = s.SetRoleModule(context.Background(), env.DB, "Nadie", db.ModuleAdmin, true)
	require.ErrorIs(t, err, db.ErrNotFound)
}

func TestAuthenticateRejectsWrongPasswordAndUnknownUserAlike(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	ctx := context.Background()
	s := &db.Store{}
	_, err := s.UpsertUser(ctx, env.DB, "op@example.com", "good-password", db.RoleOperator)
	require.NoError(t, err)

	_, err = s.Authenticate(ctx, env.DB, "op@example.com", "bad-password")
	require.ErrorIs(t, err, db.ErrBadCredentials)
	_, err = s.Authenticate(ctx, env.DB, "nobody@example.com", "good-password")
	require.ErrorIs(t, err, db.ErrBadCredentials)

	// Upsert resets the password of an existing user.
	_, err = s.UpsertUser(ctx, env.DB, "OP@example.com", "new-password", db.RoleAdmin)
	require.NoError(t, err)
	u, err := s.Authenticate(ctx, env.DB, "op@example.com", "new-password")
	require.NoError(t, err)
	require.Equal(t, db.RoleAdmin, u.RoleName)

	_, err = s.UpsertUser(ctx, env.DB, "x@example.com", "password", "Jefe")
	require.ErrorIs(t, err, db.ErrNotFound)
}

func TestSessionLivesUntilDeletedOrExpired(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	ctx := context.Background()
	s := &db.Store{}
	u, err := s.UpsertUser(ctx, env.DB, "a@example.com", "password1", db.RoleAdmin)
	require.NoError(t, err)

	live := sha256.Sum256([]byte("live"))
	old := sha256.Sum256([]byte("old"))
	require.NoError(t, s.CreateSession(ctx, env.DB, &db.Session{TokenHash: live[:], UserID: u.ID}))
	require.NoError(t, s.CreateSession(ctx, env.DB, &db.Session{TokenHash: old[:], UserID: u.ID}))
	_, err = env.DB.NewUpdate().Table("sessions").Set("expires_at = now() - interval '1 second'").Where("token_hash = ?", old[:]).Exec(ctx)
	require.NoError(t, err)

	got, err := s.UserBySession(ctx, env.DB, live[:], true)
	require.NoError(t, err)
	require.Equal(t, "a@example.com", got.Email)
	require.Contains(t, got.Modules, db.ModuleAdmin)

	_, err = s.UserBySession(ctx, env.DB, old[:], true)
	require.ErrorIs(t, err, db.ErrNotFound)

	n, err := s.PurgeExpired(ctx, env.DB)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)

	require.NoError(t, s.DeleteSession(ctx, env.DB, live[:]))
	_, err = s.UserBySession(ctx, env.DB, live[:], true)
	require.True(t, errors.Is(err, db.ErrNotFound))
}

func TestThrottleBlocksAtTheLimitAndResets(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	ctx := context.Background()
	s := &db.Store{}
	limits := map[string]int{"email:a": 3, "ip:1.2.3.4": 10}
	for i := 0; i < 2; i++ {
		require.NoError(t, s.ThrottleFail(ctx, env.DB, "email:a", "ip:1.2.3.4"))
	}
	wait, err := s.ThrottleBlocked(ctx, env.DB, limits)
	require.NoError(t, err)
	require.Zero(t, wait, "two failures are under the limit of three")

	require.NoError(t, s.ThrottleFail(ctx, env.DB, "email:a", "ip:1.2.3.4"))
	wait, err = s.ThrottleBlocked(ctx, env.DB, limits)
	require.NoError(t, err)
	require.Greater(t, wait, 14*time.Minute)

	require.NoError(t, s.ThrottleReset(ctx, env.DB, "email:a"))
	wait, err = s.ThrottleBlocked(ctx, env.DB, limits)
	require.NoError(t, err)
	require.Zero(t, wait)
}

// JIT compiled the 4-row /modules query for 144 ms: every connection turns it
// off itself, whatever the server's configuration (the setting's source is the
// connection: 'client' or 'session', not the server's command line or file).
func TestEveryConnectionRunsWithoutJIT(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	ctx := context.Background()
	const q = "SELECT setting || ' by ' || CASE WHEN source IN ('client', 'session') THEN 'connection' ELSE source END FROM pg_settings WHERE name = 'jit'"
	var viaBun, viaPgx string
	require.NoError(t, env.DB.NewRaw(q).Scan(ctx, &viaBun))
	require.NoError(t, env.Pool.QueryRow(ctx, q).Scan(&viaPgx))
	require.Equal(t, [2]string{"off by connection", "off by connection"}, [2]string{viaBun, viaPgx})
}

func TestRoleModulesListsEveryPairWithItsGrant(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	pairs, err := (&db.Store{}).RoleModules(context.Background(), env.DB)
	require.NoError(t, err)
	got := map[string]bool{}
	for _, p := range pairs {
		got[p.RoleName+"/"+p.ModuleName] = p.Enabled
	}
	require.Equal(t, map[string]bool{
		"Administrador/Administración": true, "Administrador/Servidores": true, "Administrador/Tarjetas": true,
		"Operador/Tarjetas":       false,
		"Operador/Administración": false, "Operador/Servidores": false,
	}, got)
}
