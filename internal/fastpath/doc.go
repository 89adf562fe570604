// Package fastpath is what the two call paths of a node share to serve
// quick calls without waking threads: a consumer connection's server
// (node/transport, and node/triple's) and the link between the node and a plugin
// (plugins/internal/wire). Handing a request from one goroutine to another
// costs a thread wake-up, tens of microseconds on a small VM, more than
// decoding, a quick handler and encoding together; so does a write per
// frame. Three pieces, one vocabulary:
//
//   - Writer, the coalescing writer of one connection: frames are appended
//     to one pending buffer and whoever finds no write in progress writes
//     them all; the others only append. A Mode says who writes and whether
//     that may wait on the socket: Queue (the writer goroutine), Flush (the
//     caller, waiting up to Stall), Try (the caller, what the socket takes
//     now), Hold (when the burst ends). Late frames (an HTTP/2 PING's
//     ack) wait for the next write and go behind its frames, or for the
//     Inline watchdog once they waited Stall.
//   - Inline: a stream's Reader runs work inline, on the reading goroutine
//     (Run), and the reading is handed over to a new goroutine when that
//     work runs for Stall (the watchdog) or is about to wait for its own
//     stream (HandOverFor).
//   - Burst holding: a reader that has more whole frames buffered is in a
//     burst; the writes that serving them causes (Hold) wait for the burst
//     to end (Burst.Flush), so one write carries them. The Holder that
//     starts a call travels in its context (WithHolder), and so does the
//     Completer that says who completes it (a link's reader in a burst of
//     replies), as values that survive any wrapping of the context.
//
// MonoNow is the clock of their atomic stamps (a connection's last write,
// and node/transport's last read). The sockets are read and written with
// internal/sockio.
package fastpath
