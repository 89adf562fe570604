package sdk

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/internal/fastpath"
)

// inlining says whether a method's calls run on the link's reader: earned
// by a score of quick runs (see observe). Dubbo and protobuf methods keep
// one each.
type inlining struct {
	mu     sync.Mutex
	score  int  // quick runs earn it, longer ones cost it
	never  bool // it called through the node
	inline atomic.Bool
}

// A method runs on the link's reader, which saves a worker's wake-up per
// call, while its score is at least inlineScore: each run within quickRun
// adds one (up to maxScore), each longer run takes midCost, each run of
// slowRun or more slowCost. So a method stays there while fewer than about
// one run in five takes longer than quickRun, and a few slow runs send it
// back to the workers until it has earned its place again. Runs are timed
// by the clock, and on a busy machine the OS preempts a quick handler now
// and then: a streak of quick runs, broken by any longer one, sent a tenth
// of the calls to the workers under a dubbo-go consumer's load. A handler
// that blocks on the reader anyway holds the plugin's other calls up for
// the link's inline stall (2ms) at most. A method that called through the
// node never runs there.
const (
	quickRun    = 50 * time.Microsecond
	slowRun     = time.Millisecond
	inlineScore = 16
	maxScore    = 64
	midCost     = 4
	slowCost    = 16
)

// observe counts one run that took d.
func (m *inlining) observe(d time.Duration, calledOut bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case calledOut:
		m.never = true
	case d < quickRun:
		m.score = min(m.score+1, maxScore)
	case d < slowRun:
		m.score = max(m.score-midCost, 0)
	default:
		m.score = max(m.score-slowCost, 0)
	}
	m.inline.Store(!m.never && m.score >= inlineScore)
}

// runClock times a handler's run: by the link's own start when it runs
// inline (the link has read the clock then), else from its own start.
type runClock struct {
	run   *fastpath.Run
	start time.Time
}

func startClock(ctx context.Context) runClock {
	if run := fastpath.RunOf(ctx); run != nil {
		return runClock{run: run}
	}
	return runClock{start: time.Now()}
}

func (c runClock) elapsed() time.Duration {
	if c.run != nil {
		return c.run.Elapsed()
	}
	return time.Since(c.start)
}
