// Package transport carries dubbo protocol frames over long-lived TCP
// connections: Server on the provider side, Client on the consumer side.
//
// Each connection has one reader goroutine that decodes frames and a
// coalescing writer (fastpath.Writer) that writes every frame queued since
// its last write in a single write call, so many concurrent calls cost few
// syscalls. When no write is in progress a caller or pool worker writes
// the batch itself (fastpath.Flush, saving a goroutine hop); the reader
// never does, it hands its frames (heartbeat answers, rejections) to the
// connection's writer goroutine (fastpath.Queue), so a consumer that stops
// reading cannot stall it. A write blocked for the heartbeat timeout fails
// the connection. Sockets are read and written by raw system calls
// (internal/sockio), which do not wake the runtime's monitor thread.
//
// Server: the reader answers heartbeats itself and hands each request to a
// dispatch.Dispatcher, whose pool runs the Handler; a refused request is
// answered at once with status 100. Two exceptions save the hand-off, a
// thread wake-up that costs more than a typical handler: when nothing else
// of its connection runs, the reader runs the request inline
// (Dispatcher.RunHere, counted by the pool as a busy worker; the server's
// fastpath.Inline hands the reading to a new goroutine once such a request
// has run 2ms; ServerConfig.PoolOnly turns this off), and an
// AsyncHandler's requests (a plugin's) are only started on the reader,
// each holding one of the pool's threads until it is answered
// (Dispatcher.Hold; with none free it goes to the pool like any request),
// their responses written by whoever completes them, without waiting on
// the socket (fastpath.Try). Writes that a burst of buffered requests
// causes are held back and flushed together (fastpath.Burst, in the
// requests' context; the completer of a call, a plugin link's reader in a
// burst of replies, travels there too). Malformed or oversize requests get
// an error response and the connection lives on; a stream that is not the
// dubbo protocol (bad magic) loses its connection. Shutdown sends Dubbo's
// read-only event to every consumer, lets in-flight calls finish and then
// closes.
//
// What a consumer can make the server hold is bounded: connections
// (ServerConfig.Accepts, Dubbo's accepts; one more is closed and logged), a
// frame that has begun (it must complete within FrameTimeout), large
// bodies (each reserves its length from the server's BodyMemory before it
// is read, waiting on its own connection; its buffer grows as bytes
// arrive), and responses the peer does not read (past maxUnsent bytes the
// reader stops reading that connection until they drain). A reader yields
// every few dozen frames, so one peer that keeps it busy cannot hold a
// core from the other connections' readers.
//
// Client: a fixed number of long connections to one provider, each
// reconnected with exponential backoff by its own supervisor goroutine,
// which also sends heartbeats when the connection is quiet and drops it when
// the provider goes silent. Calls are multiplexed by request id; a response
// is matched to its waiting caller in the reader, so no goroutine is started
// per call. A lost connection fails its in-flight calls at once with
// rpc.ErrConnection and flips Available, before any registry notices.
//
// Client implements rpc.Invoker: it turns an rpc.Invocation into a request
// and the response status into a result or an error category (status.go).
package transport
