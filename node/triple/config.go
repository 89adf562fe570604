package triple

import (
	"log/slog"
	"time"
)

// Defaults of Config's fields.
const (
	// DefaultMaxMessage is Dubbo's payload limit (protocol.payload).
	DefaultMaxMessage = 8 << 20
	// DefaultMaxConcurrentStreams is the streams a client may have open
	// on one connection, the least RFC 9113 recommends.
	DefaultMaxConcurrentStreams = 100
	// DefaultMaxHeaderListSize bounds one request's header block, as
	// HPACK decodes it (names, values and 32 bytes per field).
	DefaultMaxHeaderListSize = 64 << 10
	// DefaultStreamWindow is the receive window of each stream, HTTP/2's
	// initial one.
	DefaultStreamWindow = 65535
	// DefaultFrameTimeout is how long a request, or a streaming message,
	// may take to arrive once begun.
	DefaultFrameTimeout = 10 * time.Second
	// DefaultIdleTimeout closes a connection silent for three of Dubbo's
	// 60s heartbeats.
	DefaultIdleTimeout = 3 * time.Minute
)

// Config configures a Server. The zero value serves with the defaults.
type Config struct {
	// MaxMessage is the largest request message accepted, after
	// decompression (the provider's protocol.payload). A larger one is
	// answered with ResourceExhausted, judged from its 5-byte prefix
	// before its body is read. Default 8 MiB.
	MaxMessage int
	// MaxConcurrentStreams is advertised to clients (HTTP/2
	// SETTINGS_MAX_CONCURRENT_STREAMS); a stream beyond it is refused with
	// REFUSED_STREAM. Default 100.
	MaxConcurrentStreams int
	// MaxHeaderListSize bounds one request's headers (advertised as
	// SETTINGS_MAX_HEADER_LIST_SIZE). A larger block is answered with HTTP
	// 431; one more than twice as large, or CONTINUATION frames past it,
	// end the connection. Default 64 KiB.
	MaxHeaderListSize int
	// StreamWindow is each stream's receive window: the request bytes one
	// stream may have in flight before its handler consumes them. Raise it
	// for fast client streams over long round trips. Default and minimum
	// 65535, HTTP/2's initial window.
	StreamWindow int
	// FrameTimeout bounds how long a started request (a unary call's
	// headers to its whole message; a streaming call's message once its
	// prefix arrived), a started frame, or the client's preface may take
	// to arrive, and how long a response may wait for a client that keeps
	// the connection's flow-control window shut; past it the call is
	// answered with DeadlineExceeded, or the connection closed. Default
	// 10s.
	FrameTimeout time.Duration
	// IdleTimeout closes a connection that sent nothing, and has no call
	// in progress, for this long (a GOAWAY first). Default 3m.
	IdleTimeout time.Duration
	// Accepts is the most connections the server keeps, HTTP/2 and
	// HTTP/1.1 together (Dubbo's accepts); one more is closed at once,
	// with an error log. Default 0: unlimited.
	Accepts int
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// withDefaults returns cfg with every unset field at its default.
func (cfg Config) withDefaults() Config {
	if cfg.MaxMessage <= 0 {
		cfg.MaxMessage = DefaultMaxMessage
	}
	if cfg.MaxConcurrentStreams <= 0 {
		cfg.MaxConcurrentStreams = DefaultMaxConcurrentStreams
	}
	if cfg.MaxHeaderListSize <= 0 {
		cfg.MaxHeaderListSize = DefaultMaxHeaderListSize
	}
	cfg.StreamWindow = min(max(cfg.StreamWindow, DefaultStreamWindow), maxWindow)
	if cfg.FrameTimeout <= 0 {
		cfg.FrameTimeout = DefaultFrameTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return cfg
}

// maxWindow is the largest flow-control window HTTP/2 allows.
const maxWindow = 1<<31 - 1
