package consumer

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/registry/metadata"
)

// A failed metadata fetch is a warning once per instance and revision; a
// provider answering a newer revision than its node is news only once that
// has lasted revisionGrace (a provider announces its new revision a moment
// after it serves it).
func TestFetchFailureLevels(t *testing.T) {
	inst := func(rev string) *metadata.Instance {
		return &metadata.Instance{Name: "app", ID: "10.0.0.1:20880",
			Payload: &metadata.InstancePayload{Metadata: map[string]string{metadata.KeyRevision: rev}}}
	}
	ahead := fmt.Errorf("getMetadataInfo: %w", errRevisionAhead)
	down := errors.New("connection refused")
	t0 := time.Unix(1_800_000_000, 0)
	steps := []struct {
		rev  string
		err  error
		at   time.Duration
		want slog.Level
	}{
		{"r1", down, 0, slog.LevelWarn},                        // news
		{"r1", down, time.Second, slog.LevelDebug},             // a repeat
		{"r2", ahead, 2 * time.Second, slog.LevelDebug},        // may be announced any moment
		{"r2", ahead, 4 * time.Second, slog.LevelDebug},        // still within the grace
		{"r2", ahead, 5200 * time.Millisecond, slog.LevelWarn}, // lasted: a dead session's node
		{"r2", ahead, 6 * time.Second, slog.LevelDebug},        // said once
		{"r3", ahead, 7 * time.Second, slog.LevelDebug},        // another revision: its own grace
	}
	f := newFetchFailures()
	for i, s := range steps {
		if got := f.level(inst(s.rev), s.err, t0.Add(s.at)); got != s.want {
			t.Errorf("step %d (%s, %v at %v): %v, want %v", i, s.rev, s.err, s.at, got, s.want)
		}
	}
	// Once resolved, a failure is news again.
	f.resolved(inst("r3"))
	if got := f.level(inst("r1"), down, t0.Add(8*time.Second)); got != slog.LevelWarn {
		t.Errorf("after resolved: %v, want warn", got)
	}
}
