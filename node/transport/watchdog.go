package transport

import "time"

// slowInline is how long a request the reader runs itself
// (serverConn.dispatch) may hold up its connection: the server's watchdog
// (fastpath.Inline) then hands the reading to a new goroutine, so a
// handler that blocks holds up its connection's other requests and
// heartbeats for a few milliseconds at most.
const slowInline = 2 * time.Millisecond
