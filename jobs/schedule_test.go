package jobs

import (
	"testing"
	"time"
	_ "time/tzdata" // America/Santiago without the machine's zoneinfo

	"github.com/stretchr/testify/require"
)

// The metrics purge runs daily at 03:00 of the process's time zone (CONTRACT §8).
func TestTheDailyScheduleFiresAtThreeInTheProcessTimeZone(t *testing.T) {
	santiago, err := time.LoadLocation("America/Santiago")
	require.NoError(t, err)
	local := time.Local
	time.Local = santiago // what TZ=America/Santiago gives the process
	t.Cleanup(func() { time.Local = local })

	at := func(s string) time.Time {
		v, err := time.ParseInLocation("2006-01-02 15:04", s, santiago)
		require.NoError(t, err)
		return v
	}
	for _, tc := range []struct{ now, next string }{
		{"2026-11-23 02:59", "2026-11-23 03:00"},
		{"2026-11-23 03:00", "2026-11-24 03:00"},
		{"2026-11-23 15:30", "2026-11-24 03:00"},
		{"2026-04-04 12:00", "2026-04-05 03:00"}, // the night clocks go back an hour
		{"2026-09-05 12:00", "2026-09-06 03:00"}, // and forward
	} {
		next := dailyAt{hour: 3}.Next(at(tc.now).UTC()) // River passes UTC times
		require.True(t, next.Equal(at(tc.next)), "after %s: %s, want %s", tc.now, next.In(santiago), tc.next)
	}
}
