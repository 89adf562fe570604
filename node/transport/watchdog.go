package transport

import (
	"time"

	"github.com/dubbo-lab/dubbo/internal/watchdog"
)

// The server's watchdog hands the reading of a connection to a new
// goroutine when the request its reader runs itself (serverConn.dispatch)
// has run slowHere, so a handler that blocks holds up its connection's
// other requests and heartbeats for a few milliseconds at most. It ticks
// only while such requests were started in the last watchIdle.
const (
	slowHere  = 2 * time.Millisecond
	watchIdle = 100 * time.Millisecond
)

func (s *Server) startWatchdog() {
	s.watch = watchdog.Start(slowHere, watchIdle, s.handOverSlow)
}

// handOverSlow hands over every connection whose reader has run one
// request for slowHere or more.
func (s *Server) handOverSlow() {
	now := s.watch.Now()
	var slow []*serverConn
	s.mu.Lock()
	for c := range s.conns {
		if run := c.here.Load(); run != nil && now-run.since >= slowHere {
			slow = append(slow, c)
		}
	}
	s.mu.Unlock()
	for _, c := range slow {
		if run := c.here.Load(); run != nil {
			c.handOver(run)
		}
	}
}
