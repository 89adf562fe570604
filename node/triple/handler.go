package triple

import (
	"context"
	"net/netip"
	"time"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Call is one request as its headers arrived.
type Call struct {
	// Service and Method come from the :path "/<service>/<method>".
	Service, Method string
	// Codec is the message encoding: the content-type's subtype on HTTP/2
	// ("proto" for application/grpc and application/grpc+proto, "json",
	// "hessian2", ...), "json" or "proto" on HTTP/1.1.
	Codec string
	// Header is the custom metadata: lower-case keys (tri-service-version,
	// tri-service-group, Dubbo attachments, ...), -bin values decoded.
	Header rpc.Metadata
	// Deadline comes from grpc-timeout (HTTP/2) or Triple-Timeout-Ms
	// (HTTP/1.1), counted from the arrival of the headers; zero: none.
	Deadline time.Time
	// HTTP1 says the call came over HTTP/1.1 (unary only).
	HTTP1 bool
	// Peer is the client's address.
	Peer netip.AddrPort
}

// Handler finds the method that serves a call.
type Handler interface {
	// Route runs on the connection's reader when a call's headers arrive:
	// it returns the method, or a status to answer with at once (e.g.
	// Unimplemented for an unknown service or method). It must not block.
	Route(c *Call) (Method, *Status)
}

// Method is what Route finds: a UnaryMethod (Kind rpc.Unary) or a
// StreamMethod (the other kinds).
type Method interface {
	Kind() rpc.MethodKind
}

// UnaryMethod serves unary calls. Unary runs on the connection's reader
// once the whole request message has arrived (decompressed), and must not
// block: it starts the work elsewhere or calls reply at once. req is the
// method's to keep. reply must be called exactly once, from any goroutine;
// a non-nil st with a code other than OK answers with that status (resp
// is then ignored). ctx ends when the client cancels, the deadline passes,
// the connection ends, or reply was called.
type UnaryMethod interface {
	Method
	Unary(ctx context.Context, c *Call, req []byte, reply func(resp []byte, trailer rpc.Metadata, st *Status))
}

// StreamMethod serves the streaming kinds. Serve runs on a goroutine of
// its own; its ctx ends when the client cancels (RST_STREAM), the deadline
// passes or the connection ends. The Status it returns (nil: OK) goes out
// in the trailers.
type StreamMethod interface {
	Method
	Serve(ctx context.Context, c *Call, s Stream) *Status
}

// Stream is a streaming call's messages, for the goroutine running Serve
// (its methods are not for concurrent use, except that Send and Recv may
// run on two goroutines).
type Stream interface {
	// Recv returns the next request message (the caller's to keep), or
	// io.EOF once the client half-closed, or the *Status the call ended
	// with.
	Recv() ([]byte, error)
	// Send sends a response message. It respects flow control: it blocks
	// while the client's window is closed, until the call ends.
	Send(msg []byte) error
	// SetHeader adds response header metadata; only before the first Send.
	SetHeader(md rpc.Metadata) error
	// SetTrailer adds trailer metadata, sent when Serve returns.
	SetTrailer(md rpc.Metadata)
}
