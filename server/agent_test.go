package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"pasarela/server/agent"
)

func TestTheAgentSendsThisMachinesMetricsToARunningConsole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	base := serve(t, b)
	br := b.browser(t)
	br.login(adminEmail)
	id, token := addServer(t, br, "esta-maquina")

	ctx, cancel := context.WithCancel(context.Background())
	var logs syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- agent.Run(ctx, agent.Options{URL: base, Token: token, Interval: time.Hour,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	}()
	var row struct {
		CPU, RAM, Disk, Load1 float64
		TCP                   int64
	}
	require.Eventually(t, func() bool {
		err := b.env.DB.NewRaw(`SELECT cpu, ram, disk, load1, tcp FROM servidor_metricas_history WHERE servidor_id = ?`, id).
			Scan(context.Background(), &row.CPU, &row.RAM, &row.Disk, &row.Load1, &row.TCP)
		return err == nil
	}, 15*time.Second, 100*time.Millisecond, "a heartbeat row appears")
	cancel()
	require.NoError(t, <-done)
	require.InDelta(t, 50, row.CPU, 50, "cpu is a percentage")
	require.Greater(t, row.RAM, 0.0, "some memory is in use")
	require.Greater(t, row.Disk, 0.0, "the root file system holds something")
	require.GreaterOrEqual(t, row.Load1, 0.0)
	require.GreaterOrEqual(t, row.TCP, int64(0))
	require.NotContains(t, logs.String(), "failing")
}

func TestTheAgentLogsOnceWhenSendingStartsFailingAndOnceWhenItRecovers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	base := serve(t, b)
	br := b.browser(t)
	br.login(adminEmail)
	_, token := addServer(t, br, "intermitente")

	var mu sync.Mutex
	bad := true
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fixed := agent.Metrics{CPU: 1, RAM: 2, Disk: 3, TCP: 4, Load1: 0.5}
	go func() {
		_ = agent.Run(ctx, agent.Options{URL: base, Token: token, Interval: 5 * time.Second,
			Logger: slog.New(slog.NewTextHandler(&logs, nil)),
			Collect: func(context.Context) (agent.Metrics, error) {
				mu.Lock()
				defer mu.Unlock()
				m := fixed
				if bad {
					m.CPU = 140 // refused with 422 until fixed
				}
				return m, nil
			}})
	}()
	time.Sleep(3500 * time.Millisecond) // retries at 1 s and 2 s
	mu.Lock()
	bad = false
	mu.Unlock()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "delivered again") }, 10*time.Second, 100*time.Millisecond)
	require.Equal(t, 1, bytes.Count([]byte(logs.String()), []byte("heartbeats failing")), "one line for the failing run: %s", logs.String())
}
