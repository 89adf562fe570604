// Package watchdog checks on work that runs where it should not run for
// long (a request on a connection's reader, a handler on a plugin link's
// reader) without costing that work anything when it is quick: the owner
// pokes it when such work starts, and it ticks, calling check, only while
// pokes came within the last idle period. An idle process stays idle, and
// the hot path pays an atomic store and a non-blocking channel send.
package watchdog

import (
	"sync"
	"sync/atomic"
	"time"
)

// A Watchdog is safe for concurrent use.
type Watchdog struct {
	every, idle time.Duration
	check       func()
	born        time.Time
	last        atomic.Int64 // time of the last Poke, after born
	wake        chan struct{}
	stop        chan struct{}
	once        sync.Once
}

// Start calls check every `every` while Poke was called within `idle`.
func Start(every, idle time.Duration, check func()) *Watchdog {
	w := &Watchdog{every: every, idle: idle, check: check, born: time.Now(),
		wake: make(chan struct{}, 1), stop: make(chan struct{})}
	go w.run()
	return w
}

// Now is the watchdog's clock: monotonic, for timestamps check compares.
func (w *Watchdog) Now() time.Duration { return time.Since(w.born) }

// Poke says that work to watch has started.
func (w *Watchdog) Poke() {
	w.last.Store(int64(w.Now()))
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Stop ends the watchdog: no check starts after it (one in progress may
// finish).
func (w *Watchdog) Stop() { w.once.Do(func() { close(w.stop) }) }

func (w *Watchdog) run() {
	for {
		select {
		case <-w.stop:
			return
		case <-w.wake:
		}
		t := time.NewTicker(w.every)
		for w.Now()-time.Duration(w.last.Load()) < w.idle {
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
