// Package triple serves Triple, Dubbo 3's gRPC-compatible protocol: gRPC
// over HTTP/2 without TLS (prior knowledge, "h2c"), and unary calls over
// HTTP/1.1, on one listener. It knows HTTP/2, gRPC's wire rules and
// Triple's headers; what a call means is its Handler's business.
//
// # Serving
//
//	s := triple.NewServer(triple.Config{}, handler)
//	go s.Serve(ln)            // returns ErrServerClosed after Shutdown or Close
//	...
//	s.Shutdown(ctx)           // GOAWAY, in-flight calls finish, then close
//
// A connection that starts with the HTTP/2 client preface is served by
// this package's HTTP/2 server (frames and HPACK come from
// golang.org/x/net/http2; the connection and stream state, flow control
// and limits are here); any other goes to a net/http server for Triple's
// unary HTTP/1.1 protocol.
//
// # The Handler contract
//
// Route runs on the connection's reader as soon as a call's headers
// arrive, with the Call they describe (service, method, codec, metadata,
// deadline, peer). It returns a Method, or a Status to answer with at once
// (Unimplemented for an unknown service or method). It must not block.
//
// A UnaryMethod's Unary runs on the reader too, once the whole request
// message arrived (decompressed). It must not block either: it answers at
// once, or starts the work elsewhere (a plugin) and calls reply later,
// from any goroutine, exactly once. So a quick handler costs no goroutine
// and no thread wake-up: the reader decodes, runs it and encodes the
// answer, and the answers of a burst of requests leave in one write
// (internal/fastpath). Should Unary run longer than 2ms anyway, the
// reading is handed to a new goroutine (fastpath.Inline); a Route that
// blocks holds up its connection.
//
// A StreamMethod's Serve runs on a goroutine of its own, reading with
// Stream.Recv and writing with Stream.Send; the Status it returns goes out
// in the trailers. Every call's context ends when the client cancels
// (RST_STREAM), its deadline (grpc-timeout; Triple-Timeout-Ms on
// HTTP/1.1) passes, the connection ends, or the call is answered.
//
// # The wire
//
// Requests: POST /<service>/<method>, content-type application/grpc or
// application/grpc+<codec> (Call.Codec; "proto" for the bare type),
// messages with gRPC's 5-byte prefix. Responses: :status 200, the
// request's content-type, grpc-accept-encoding: gzip, then the messages,
// then trailers grpc-status and grpc-message (percent-encoded) and the
// handler's trailer metadata; an error before any message is a
// trailers-only response. Requests that are not gRPC are answered as
// grpc-go answers them: HTTP 415 for another content-type, 405 for a
// method other than POST, 400 with Internal for a malformed grpc-timeout
// or -bin value; a malformed HTTP/2 request (pseudo headers, te,
// connection-specific fields) is reset with PROTOCOL_ERROR.
//
// PING: acknowledged at once on a connection with no call running;
// while calls run, the ack waits for the next answer and goes behind it
// (a grpc-go client, which pings after each answer it reads while no ack
// is outstanding, then pings half as often), for 2 to 4ms at most (the
// readers' watchdog, fastpath.Writer.Late).
//
// Compression: a request with grpc-encoding: gzip may carry compressed
// messages; the response to it is compressed too, as grpc-go's server
// answers in the client's encoding (a client that sent gzip can read it).
// Any other encoding is answered with Unimplemented and
// grpc-accept-encoding: gzip.
//
// HTTP/1.1 (Triple's unary protocol, connect's unary protocol in
// dubbo-go): POST /<service>/<method> with Content-Type application/json
// or application/proto (Call.Codec "json" or "proto"), optionally
// Content-Encoding: gzip and Triple-Timeout-Ms; the answer is 200 with the
// response in the same encoding (gzipped if the request was and the
// client accepts gzip; trailer metadata as Trailer-<key> headers), or the
// HTTP status of the code (NotFound 404, Unimplemented 404,
// ResourceExhausted 429, ... as connect maps them) with the body
// {"code":"not_found","message":"..."}. Another content-type gets 415, a
// streaming method 505.
//
// # Limits: what a client can make the server hold
//
// Per connection: at most MaxConcurrentStreams open streams (more are
// refused with REFUSED_STREAM), each holding its headers (at most
// MaxHeaderListSize); per stream at most StreamWindow request bytes
// buffered, the window it advertises (HTTP/2's 64 KiB by default), granted
// back as the handler consumes them. A message larger than that window
// reserves its length from the connection's large-message memory
// (MaxMessage + 5 bytes, first come first served) before the client may
// send it, so a connection buffers at most MaxConcurrentStreams ×
// StreamWindow + MaxMessage + 5 bytes of requests, and one large message
// needs no window to be large. (The connection window, 1 MiB, is granted
// back as bytes arrive: the streams' windows are the bound.) A message
// declared longer than MaxMessage is refused (ResourceExhausted) from its
// prefix, before its bytes are read; a gzipped one is inflated no further
// than MaxMessage. Header blocks are bounded by MaxHeaderListSize (431
// past it; the connection ends when a block runs far past it or into more
// than 64 CONTINUATION frames). Answers the client leaves unread: past
// 256 KiB the reader stops taking its requests, and a write blocked for
// FrameTimeout closes the connection.
//
// In time: a unary request must arrive whole within FrameTimeout of its
// headers, a streaming message within FrameTimeout of its first byte (else
// DeadlineExceeded); a response waiting on a connection window the client
// keeps shut for FrameTimeout closes the connection; a connection with no
// call and no frame for IdleTimeout is closed with GOAWAY. Over HTTP/1.1 a
// request, body included, must arrive within FrameTimeout and its answer
// leave within it.
//
// Abuse: GOAWAY ENHANCE_YOUR_CALM ends a connection that sends more than 100
// frames that carry no call (PING, SETTINGS, PRIORITY, empty DATA, unknown
// types) in a row, each within a second of the last and with no answer sent
// in between (gRPC's ping policy, loosened for keepalive and BDP pings); that
// goes on opening streams past MaxConcurrentStreams, more than that many in a
// row; that resets more than half of its streams before their answer (HTTP/2
// rapid reset, judged as Envoy does once 2×MaxConcurrentStreams streams, at
// least 100, were opened); or that leaves more than MaxConcurrentStreams
// handlers running for streams it reset (as x/net bounds them). A reader that
// handles 64 frames in a row without waiting yields, so a busy client cannot
// starve the others.
package triple
