package provider

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Stats counts the calls a provider served, per service key and method,
// for the monitor and the metrics endpoint.
type Stats struct {
	mu sync.Mutex
	m  map[statsKey]*counters
}

type statsKey struct{ service, method string }

type counters struct {
	calls, failures, elapsedNanos, active, maxActive atomic.Int64
}

// MethodStats is a snapshot of one method's counters since start.
type MethodStats struct {
	Service string // [group/]interface[:version]
	Method  string
	// Calls and Failures count finished calls; a failure is a business
	// exception or a service error.
	Calls, Failures int64
	// Elapsed is the total time spent in the service.
	Elapsed time.Duration
	// Active calls now, and the most seen at once.
	Active, MaxActive int64
}

func newStats() *Stats { return &Stats{m: make(map[statsKey]*counters)} }

// begin counts a call in; the returned function counts it out.
func (s *Stats) begin(service, method string) (end func(failed bool)) {
	k := statsKey{service, method}
	s.mu.Lock()
	c := s.m[k]
	if c == nil {
		c = &counters{}
		s.m[k] = c
	}
	s.mu.Unlock()
	start := time.Now()
	if n := c.active.Add(1); n > c.maxActive.Load() {
		c.maxActive.Store(n) // racy maximum: good enough for a gauge
	}
	return func(failed bool) {
		c.active.Add(-1)
		c.calls.Add(1)
		if failed {
			c.failures.Add(1)
		}
		c.elapsedNanos.Add(int64(time.Since(start)))
	}
}

// Snapshot returns every method's counters, sorted by service and method.
func (s *Stats) Snapshot() []MethodStats {
	s.mu.Lock()
	out := make([]MethodStats, 0, len(s.m))
	for k, c := range s.m {
		out = append(out, MethodStats{
			Service: k.service, Method: k.method,
			Calls: c.calls.Load(), Failures: c.failures.Load(),
			Elapsed: time.Duration(c.elapsedNanos.Load()),
			Active:  c.active.Load(), MaxActive: c.maxActive.Load(),
		})
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Service != out[j].Service {
			return out[i].Service < out[j].Service
		}
		return out[i].Method < out[j].Method
	})
	return out
}
