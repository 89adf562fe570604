package cluster

import (
	"sync"
	"time"

	"github.com/dubbo-lab/dubbo/node/url"
)

// statsWindow is how long response times are averaged before starting over,
// Dubbo's default shortestresponse.slidePeriod, so that a provider that was
// slow a while ago can win again.
const statsWindow = 30 * time.Second

// Stats counts, per provider and method, the calls in flight and the
// average time of successful calls. The cluster Invoker records every call
// it makes; leastactive, shortestresponse and p2c read the counts. It is
// per Invoker rather than process-wide (as Dubbo's RpcStatus is) so that
// nothing is shared between unrelated references.
type Stats struct {
	now func() time.Time

	mu sync.Mutex
	m  map[statsKey]*methodStats
}

type statsKey struct{ address, path, method string }

type methodStats struct {
	active int
	// current window: successful calls and their total time.
	start   time.Time
	count   int64
	elapsed time.Duration
	// average of the last complete window, used until the current one has data.
	lastAvg time.Duration
}

// NewStats makes an empty Stats reading time from now (time.Now when nil).
func NewStats(now func() time.Time) *Stats {
	if now == nil {
		now = time.Now
	}
	return &Stats{now: now, m: make(map[statsKey]*methodStats)}
}

func keyOf(u *url.URL, method string) statsKey {
	return statsKey{u.Address(), u.Path(), method}
}

func (s *Stats) get(k statsKey) *methodStats {
	ms := s.m[k]
	if ms == nil {
		ms = &methodStats{start: s.now()}
		s.m[k] = ms
	}
	return ms
}

// Begin records the start of a call of method on provider u and returns the
// function to call with its outcome when it ends.
func (s *Stats) Begin(u *url.URL, method string) (end func(err error)) {
	k := keyOf(u, method)
	start := s.now()
	s.mu.Lock()
	s.get(k).active++
	s.mu.Unlock()
	return func(err error) {
		now := s.now()
		s.mu.Lock()
		defer s.mu.Unlock()
		ms := s.get(k)
		ms.active--
		if err != nil {
			return
		}
		if now.Sub(ms.start) > statsWindow {
			if ms.count > 0 {
				ms.lastAvg = ms.elapsed / time.Duration(ms.count)
			}
			ms.start, ms.count, ms.elapsed = now, 0, 0
		}
		ms.count++
		ms.elapsed += now.Sub(start)
	}
}

// Active is the number of calls of method on provider u in flight.
func (s *Stats) Active(u *url.URL, method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ms := s.m[keyOf(u, method)]; ms != nil {
		return ms.active
	}
	return 0
}

// AverageElapsed is the mean time of the recent successful calls of method
// on provider u, 0 when none is known.
func (s *Stats) AverageElapsed(u *url.URL, method string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	ms := s.m[keyOf(u, method)]
	switch {
	case ms == nil:
		return 0
	case ms.count > 0:
		return ms.elapsed / time.Duration(ms.count)
	default:
		return ms.lastAvg
	}
}
