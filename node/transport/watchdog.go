package transport

import (
	"sync"
	"sync/atomic"
	"time"
)

// A watchdog hands the reading of a connection to a new goroutine when the
// request its reader runs itself (serverConn.dispatch) runs longer than
// slowHere, so a handler that blocks holds up its connection's other
// requests and heartbeats for a few milliseconds at most. It ticks only
// while such requests were started in the last watchIdle: an idle server
// stays idle.
type watchdog struct {
	s    *Server
	wake chan struct{} // capacity 1
	last atomic.Int64  // monoNow of the last poke
	stop chan struct{}
	once sync.Once
}

const (
	slowHere  = 2 * time.Millisecond
	watchIdle = 100 * time.Millisecond
)

func newWatchdog(s *Server) *watchdog {
	w := &watchdog{s: s, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	go w.run()
	return w
}

// poke says that a reader started running a request itself.
func (w *watchdog) poke() {
	w.last.Store(monoNow())
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *watchdog) run() {
	for {
		select {
		case <-w.stop:
			return
		case <-w.wake:
		}
		t := time.NewTicker(slowHere)
		for monoNow()-w.last.Load() < int64(watchIdle) {
			select {
			case <-w.stop:
				t.Stop()
				return
			case <-t.C:
			}
			w.check()
		}
		t.Stop()
	}
}

// check hands over every connection whose reader has run one request for
// slowHere or more.
func (w *watchdog) check() {
	now := monoNow()
	var slow []*serverConn
	w.s.mu.Lock()
	for c := range w.s.conns {
		if run := c.here.Load(); run != nil && now-run.since >= int64(slowHere) {
			slow = append(slow, c)
		}
	}
	w.s.mu.Unlock()
	for _, c := range slow {
		if run := c.here.Load(); run != nil {
			c.handOver(run)
		}
	}
}

// close stops the watchdog, once the connections' readers have ended.
func (w *watchdog) close() { w.once.Do(func() { close(w.stop) }) }
