package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"pasarela/db"
	"pasarela/jobs"
)

func TestASilentServerIsMarkedOfflineAndAnnouncedOnce(t *testing.T) {
	t.Parallel()
	n := setupNotify(t, 0)
	ctx := context.Background()
	for _, s := range []struct {
		name, estado string
		silentFor    time.Duration
	}{
		{"silencioso", db.ServerOnline, 2 * time.Minute}, // interval 30 s: three missed
		{"al-dia", db.ServerOnline, 40 * time.Second},    // one missed: still online
		{"nuevo", db.ServerPending, time.Hour},           // never reported: not "down"
	} {
		_, err := n.env.DB.NewRaw(`INSERT INTO servidores (nombre, host, token_hash, token_prefix, estado, ultimo_latido)
			VALUES (?, 'h', ?, 'pag_x', ?, now() - ?::interval)`, s.name, []byte(s.name), s.estado,
			s.silentFor.String()).Exec(ctx)
		require.NoError(t, err)
	}
	for i := 0; i < 2; i++ { // the periodic job, twice: the second finds nothing new
		require.NoError(t, n.env.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			_, err := n.queue.InsertTx(ctx, tx, jobs.SilentServersArgs{}, nil)
			return err
		}))
		require.Eventually(t, func() bool {
			var open int
			err := n.env.DB.NewRaw(`SELECT count(*) FROM river_job WHERE state <> 'completed'`).Scan(ctx, &open)
			return err == nil && open == 0
		}, 20*time.Second, 50*time.Millisecond)
	}
	var states []string
	require.NoError(t, n.env.DB.NewRaw(`SELECT nombre || '=' || estado FROM servidores ORDER BY nombre`).Scan(ctx, &states))
	require.Equal(t, []string{"al-dia=online", "nuevo=pendiente", "silencioso=offline"}, states)
	var deliveries []string
	require.NoError(t, n.env.DB.NewRaw(`SELECT args->>'canal' FROM river_job WHERE kind = 'notificacion'
		AND args->>'evento' = 'servidor_caido' ORDER BY 1`).Scan(ctx, &deliveries))
	require.Equal(t, []string{"chat", "email", "sistema"}, deliveries, "one alert per channel switched on, once")
	require.Eventually(t, func() bool { return n.chat.delivered.Load() == 1 }, 10*time.Second, 50*time.Millisecond)
	text, _ := n.chat.lastText.Load().(string)
	require.Contains(t, text, "silencioso")
}
