// Package agent is `pasarela agent`: it reads this machine's metrics and
// sends them to POST /api/agente/heartbeat every interval (CONTRACT §1, §5).
package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/disk"
	"github.com/shirou/gopsutil/v4/load"
	"github.com/shirou/gopsutil/v4/mem"
	"github.com/shirou/gopsutil/v4/net"
)

// Metrics is one heartbeat's body.
type Metrics struct {
	CPU   float64 `json:"cpu"`
	RAM   float64 `json:"ram"`
	Swap  float64 `json:"swap"`
	Disk  float64 `json:"disk"`
	TCP   int64   `json:"tcp"`
	Load1 float64 `json:"load1"`
}

// Options configure Run; URL and Token are required.
type Options struct {
	// URL is the console's base URL, e.g. https://consola.example.cl.
	URL      string
	Token    string
	Interval time.Duration // 0: 30 s
	Logger   *slog.Logger
	// Collect reads the metrics (nil: this machine's, via gopsutil).
	Collect func(context.Context) (Metrics, error)
	Client  *http.Client
}

// Run sends a heartbeat at once and then every interval (±10 %, so a fleet
// started together does not beat in step) until ctx ends. A failed send is
// retried with backoff (1 s, 2 s, … up to the interval); the log gets one
// line when sending starts failing and one when it works again, not one per try.
func Run(ctx context.Context, o Options) error {
	if o.URL == "" || o.Token == "" {
		return errors.New("agent: --url and --token are required")
	}
	if o.Interval <= 0 {
		o.Interval = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Collect == nil {
		o.Collect = Collect
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	endpoint := strings.TrimRight(o.URL, "/") + "/api/agente/heartbeat"
	o.Logger.Info("agent started", "url", endpoint, "interval", o.Interval)
	failing, failures := false, 0
	backoff := time.Second
	for {
		err := beat(ctx, o, endpoint)
		wait := jitter(o.Interval)
		switch {
		case ctx.Err() != nil:
			o.Logger.Info("agent stopped")
			return nil
		case err != nil:
			failures++
			if !failing {
				o.Logger.Warn("heartbeats failing; retrying with backoff", "error", err)
				failing = true
			}
			wait, backoff = min(backoff, o.Interval), min(backoff*2, o.Interval)
		case failing:
			o.Logger.Info("heartbeats delivered again", "failed_attempts", failures)
			failing, failures, backoff = false, 0, time.Second
		}
		select {
		case <-ctx.Done():
			o.Logger.Info("agent stopped")
			return nil
		case <-time.After(wait):
		}
	}
}

func jitter(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()*0.2-0.1)*float64(d))
}

func beat(ctx context.Context, o Options, endpoint string) error {
	m, err := o.Collect(ctx)
	if err != nil {
		return fmt.Errorf("read metrics: %w", err)
	}
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+o.Token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "pasarela-agent")
	resp, err := o.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("console answered %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return nil
}

// Collect reads this machine's metrics: CPU over one second, memory, swap,
// the root file system, established TCP connections and the 1-minute load.
func Collect(ctx context.Context) (Metrics, error) {
	var m Metrics
	pcts, err := cpu.PercentWithContext(ctx, time.Second, false)
	if err != nil || len(pcts) == 0 {
		return m, fmt.Errorf("cpu: %w", err)
	}
	m.CPU = clampPercent(pcts[0])
	vm, err := mem.VirtualMemoryWithContext(ctx)
	if err != nil {
		return m, fmt.Errorf("memory: %w", err)
	}
	m.RAM = clampPercent(vm.UsedPercent)
	if sw, err := mem.SwapMemoryWithContext(ctx); err == nil && sw.Total > 0 {
		m.Swap = clampPercent(sw.UsedPercent)
	}
	du, err := disk.UsageWithContext(ctx, "/")
	if err != nil {
		return m, fmt.Errorf("disk: %w", err)
	}
	m.Disk = clampPercent(du.UsedPercent)
	if counters, err := net.ProtoCountersWithContext(ctx, []string{"tcp"}); err == nil && len(counters) > 0 {
		m.TCP = max(counters[0].Stats["CurrEstab"], 0)
	}
	avg, err := load.AvgWithContext(ctx)
	if err != nil {
		return m, fmt.Errorf("load: %w", err)
	}
	m.Load1 = max(avg.Load1, 0)
	return m, nil
}

func clampPercent(v float64) float64 { return min(max(v, 0), 100) }
