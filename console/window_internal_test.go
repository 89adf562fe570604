package console

import (
	"testing"
	"time"
)

// A window's step: the preset's, or for a custom one the shortest that
// draws at most maxBuckets; whole hours when the window reaches back past
// the store's raw retention (its rows are hourly there), whatever the
// window.
func TestWindowStep(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 34, 56, 0, time.UTC)
	n := now.Unix()
	day := 24 * time.Hour
	unix := func(t int64) string { return time.Unix(t, 0).Format("2006-01-02T15:04:05") }
	for _, tc := range []struct {
		name          string
		raw           time.Duration
		rng, from, to string
		step          int64
	}{
		{"15 minutes", day, "", "", "", 60},
		{"24 hours, within the raw retention", day, "24h", "", "", 600},
		{"24 hours, past a raw retention of 12 h", 12 * time.Hour, "24h", "", "", 3600},
		{"30 days", day, "30d", "", "", 6 * 3600},
		{"two hours now", day, "", unix(n - 7200), "", 60},
		{"two hours two days ago", day, "", unix(n - 2*86400), unix(n - 2*86400 + 7200), 3600},
		{"two hours two days ago, no store", 0, "", unix(n - 2*86400), unix(n - 2*86400 + 7200), 60},
		{"the last day and a second", day, "", unix(n - 86400), "", 3600},
		{"a week", day, "", unix(n - 7*86400), "", 3600},
		{"ninety days", day, "", unix(n - 90*86400), "", 12 * 3600},
	} {
		w, err := windowOf(now, tc.raw, tc.rng, tc.from, tc.to)
		if err != nil || w.Step != tc.step || w.To < w.From || (w.To-w.From+w.Step-1)/w.Step > maxBuckets {
			t.Errorf("%s: window %+v, %v; want a step of %d s", tc.name, w, err, tc.step)
		}
	}
}
