package cluster

import (
	"sync"
	"time"

	"github.com/dubbo-lab/dubbo/node/url"
)

// DefaultResponseWindow is how long response times are averaged before
// every provider's average starts over: Dubbo's
// ShortestResponseLoadBalance slidePeriod (30 s).
const DefaultResponseWindow = 30 * time.Second

// Stats counts, per provider and method, the calls in flight and the
// average time of the successful calls of the current response window.
// The cluster Invoker records every call it makes; leastactive,
// shortestresponse and p2c read the counts. It is per Invoker rather than
// process-wide (as Dubbo's RpcStatus is) so that nothing is shared between
// unrelated references.
//
// The window restarts for all providers at once, as Dubbo's sliding window
// does: a provider that was slow and therefore got no calls has no average
// in the new window, estimates 0 and is tried again. Keeping its old
// average until it answered again (what this did before) starved it for
// good.
type Stats struct {
	now    func() time.Time
	window time.Duration

	mu          sync.Mutex
	windowStart time.Time
	m           map[statsKey]*methodStats
}

type statsKey struct{ address, path, method string }

type methodStats struct {
	active int
	// successful calls in the current window and their total time.
	count   int64
	elapsed time.Duration
}

// NewStats makes an empty Stats reading time from now (time.Now when nil)
// whose response window is window (DefaultResponseWindow when 0 or less).
func NewStats(now func() time.Time, window time.Duration) *Stats {
	if now == nil {
		now = time.Now
	}
	if window <= 0 {
		window = DefaultResponseWindow
	}
	return &Stats{now: now, window: window, windowStart: now(), m: make(map[statsKey]*methodStats)}
}

// Window is the length of the response window.
func (s *Stats) Window() time.Duration { return s.window }

func keyOf(u *url.URL, method string) statsKey {
	return statsKey{u.Address(), u.Path(), method}
}

func (s *Stats) get(k statsKey) *methodStats {
	ms := s.m[k]
	if ms == nil {
		ms = &methodStats{}
		s.m[k] = ms
	}
	return ms
}

// roll starts a new window for every provider when the current one is over.
// Entries with nothing in flight are dropped, which also forgets providers
// that left. Called with mu held.
func (s *Stats) roll(now time.Time) {
	if now.Sub(s.windowStart) < s.window {
		return
	}
	s.windowStart = now
	for k, ms := range s.m {
		if ms.active == 0 {
			delete(s.m, k)
			continue
		}
		ms.count, ms.elapsed = 0, 0
	}
}

// Begin records the start of a call of method on provider u and returns the
// function to call with its outcome when it ends.
func (s *Stats) Begin(u *url.URL, method string) (end func(err error)) {
	k := keyOf(u, method)
	start := s.now()
	s.mu.Lock()
	s.roll(start)
	s.get(k).active++
	s.mu.Unlock()
	return func(err error) {
		now := s.now()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.roll(now)
		ms := s.get(k)
		ms.active--
		if err != nil || start.Before(s.windowStart) {
			// A call begun in the last window does not count in this one.
			return
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

// AverageElapsed is the mean time of the successful calls of method on
// provider u in the current window, 0 when there is none.
func (s *Stats) AverageElapsed(u *url.URL, method string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ms := s.m[keyOf(u, method)]; ms != nil && ms.count > 0 {
		return ms.elapsed / time.Duration(ms.count)
	}
	return 0
}
