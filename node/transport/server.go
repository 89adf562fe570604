package transport

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/internal/fastpath"
	"github.com/dubbo-lab/dubbo/internal/listener"
	"github.com/dubbo-lab/dubbo/node/dispatch"
	"github.com/dubbo-lab/dubbo/node/protocol"
)

// Handler answers requests on the provider side. It runs on a pool worker
// chosen by the dispatcher. It returns nil for oneway requests; a nil
// response to a two-way request is answered with SERVICE_ERROR.
type Handler interface {
	Handle(ctx context.Context, req *protocol.Request) *protocol.Response
}

// An AsyncHandler is a Handler that can answer some requests without a
// pool worker, when its work is waiting on another process (a plugin)
// rather than running business code: on the IO goroutine, Async says
// whether it takes req, and HandleAsync starts it without blocking and
// calls reply exactly once, from any goroutine. The requests it declines go
// to the dispatcher as usual.
type AsyncHandler interface {
	Handler
	Async(req *protocol.Request) bool
	HandleAsync(ctx context.Context, req *protocol.Request, reply func(*protocol.Response))
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req *protocol.Request) *protocol.Response

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, req *protocol.Request) *protocol.Response {
	return f(ctx, req)
}

// DefaultHeartbeat is Dubbo's heartbeat interval; connections silent for
// three of them are closed.
const DefaultHeartbeat = 60 * time.Second

// Defaults of the limits on what a consumer can make the server hold.
const (
	// DefaultFrameTimeout is how long a frame may take to arrive once its
	// first byte has.
	DefaultFrameTimeout = 10 * time.Second
	// DefaultBodyMemory bounds the large request bodies being received at
	// once, across connections: eight of the largest Dubbo accepts by
	// default.
	DefaultBodyMemory = 64 << 20
)

// ServerConfig configures a Server. The zero value uses Dubbo's defaults.
type ServerConfig struct {
	// Payload is the largest request body accepted. Default 8 MiB.
	Payload int
	// Accepts is the most connections the server keeps (Dubbo's accepts);
	// one more is closed at once, with an error log. Default 0: unlimited.
	Accepts int
	// FrameTimeout closes a connection whose frame, once begun, is not
	// complete within it (a peer dripping bytes, or declaring a body it
	// does not send). Default 10s.
	FrameTimeout time.Duration
	// BodyMemory bounds the bytes of request bodies over
	// protocol.SmallBody being received at once, across connections. A
	// body is reserved whole when its header arrives (the buffer itself
	// grows as the bytes do); one that does not fit waits for others to
	// finish, at most FrameTimeout, while small requests and other
	// connections go on. Default 64 MiB, and never below Payload.
	BodyMemory int
	// HeartbeatTimeout closes a connection that sent nothing for this long.
	// Default 3 × 60s.
	HeartbeatTimeout time.Duration
	// Dispatcher decides where requests and connection events run. Default:
	// the all dispatcher on a fixed pool of 200 workers and no queue, which
	// the server creates and closes.
	Dispatcher *dispatch.Dispatcher
	// PoolOnly sends every request the dispatcher pools to the pool. By
	// default a connection's reader runs a request itself when nothing
	// else of its connection runs (see serverConn.dispatch).
	PoolOnly bool
	// OnConnect and OnDisconnect, if set, are dispatched as connection events.
	OnConnect, OnDisconnect func(remote net.Addr)
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Server accepts dubbo connections and serves requests with a Handler.
type Server struct {
	ln         net.Listener
	handler    Handler
	cfg        ServerConfig
	dispatcher *dispatch.Dispatcher
	ownsPool   bool
	log        *slog.Logger
	encoders   *encoders
	inline     *fastpath.Inline // the connections' readers and their watchdog
	bodies     *bodyBudget

	eventID  atomic.Int64 // ids of the read-only events we send
	inFlight atomic.Int64
	accepted atomic.Int64
	refused  atomic.Int64 // connections over Accepts
	// refuseLogged is the fastpath.MonoNow of the last log line about refused
	// connections.
	refuseLogged atomic.Int64

	mu      sync.Mutex
	conns   map[*serverConn]struct{}
	closing bool
	wg      sync.WaitGroup // accept loop and connection goroutines
}

// Listen listens on addr ("127.0.0.1:20880") and serves in the background
// until Shutdown or Close.
func Listen(addr string, h Handler, cfg ServerConfig) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dubbo server: %w", err)
	}
	s, err := Serve(ln, h, cfg)
	if err != nil {
		ln.Close()
	}
	return s, err
}

// Serve serves connections accepted from ln in the background until
// Shutdown or Close, which close ln.
func Serve(ln net.Listener, h Handler, cfg ServerConfig) (*Server, error) {
	if cfg.Payload <= 0 {
		cfg.Payload = protocol.DefaultPayload
	}
	if cfg.HeartbeatTimeout <= 0 {
		cfg.HeartbeatTimeout = 3 * DefaultHeartbeat
	}
	if cfg.FrameTimeout <= 0 {
		cfg.FrameTimeout = DefaultFrameTimeout
	}
	if cfg.BodyMemory <= 0 {
		cfg.BodyMemory = DefaultBodyMemory
	}
	cfg.BodyMemory = max(cfg.BodyMemory, cfg.Payload)
	s := &Server{
		ln:         ln,
		handler:    h,
		cfg:        cfg,
		dispatcher: cfg.Dispatcher,
		log:        cfg.Logger,
		encoders:   newEncoders(cfg.Payload),
		bodies:     newBodyBudget(cfg.BodyMemory),
		conns:      make(map[*serverConn]struct{}),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = s.log.With("server", ln.Addr().String())
	if s.dispatcher == nil {
		addr := ln.Addr().String()
		pool, err := dispatch.NewPool(dispatch.PoolConfig{Name: "DubboServerHandler-" + addr, Where: "dubbo://" + addr})
		if err != nil {
			return nil, err
		}
		if s.dispatcher, err = dispatch.NewDispatcher(dispatch.All, pool); err != nil {
			return nil, err
		}
		s.ownsPool = true
	}
	s.inline = fastpath.NewInline(slowInline)
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		conn, err := listener.Accept(s.ln, s.log, nil)
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			conn.Close()
			continue
		}
		if s.cfg.Accepts > 0 && len(s.conns) >= s.cfg.Accepts {
			s.mu.Unlock()
			s.refuse(conn)
			continue
		}
		c := newServerConn(s, conn)
		s.conns[c] = struct{}{}
		s.wg.Add(2)
		s.mu.Unlock()
		s.accepted.Add(1)
		go c.serve()
		go func() { // the connection's writer, owned by the connection
			defer s.wg.Done()
			c.w.Run()
		}()
	}
}

// refuseLogEvery spaces the log lines about refused connections: a flood
// of them is one line per interval, with the count.
const refuseLogEvery = 10 * time.Second

// refuse closes a connection over Accepts, as Java's AbstractServer does,
// and says so in the log.
func (s *Server) refuse(conn net.Conn) {
	defer conn.Close()
	n := s.refused.Add(1)
	now := fastpath.MonoNow()
	last := s.refuseLogged.Load()
	if last != 0 && time.Duration(now-last) < refuseLogEvery || !s.refuseLogged.CompareAndSwap(last, now) {
		return
	}
	s.log.Error("connection refused: the server has reached protocol.accepts; raise it or add providers",
		"remote", conn.RemoteAddr().String(), "accepts", s.cfg.Accepts, "refused_total", n)
}

func (s *Server) removeConn(c *serverConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// ServerStats is a snapshot for the stats collector.
type ServerStats struct {
	Connections int   // open now
	Accepted    int64 // since start
	Refused     int64 // closed at once since start: over Accepts
	InFlight    int64 // requests dispatched and not yet answered
	Pool        dispatch.PoolStats
}

// Stats returns a snapshot of the server.
func (s *Server) Stats() ServerStats {
	s.mu.Lock()
	n := len(s.conns)
	s.mu.Unlock()
	st := ServerStats{Connections: n, Accepted: s.accepted.Load(), Refused: s.refused.Load(), InFlight: s.inFlight.Load()}
	if p := s.dispatcher.Pool(); p != nil {
		st.Pool = p.Stats()
	}
	return st
}

// stopAccepting closes the listener and returns the open connections.
func (s *Server) stopAccepting() []*serverConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closing {
		s.closing = true
		s.ln.Close()
	}
	conns := make([]*serverConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}

// Shutdown stops accepting, tells every connected consumer that this
// provider is read-only (so they route new calls elsewhere), waits for
// in-flight requests until ctx is done, then closes every connection after
// writing what is queued. It returns ctx's error if requests were still
// running.
func (s *Server) Shutdown(ctx context.Context) error {
	conns := s.stopAccepting()
	for _, c := range conns {
		c.sendReadOnly()
	}
	var err error
	tick := time.NewTicker(5 * time.Millisecond)
	for s.inFlight.Load() > 0 && err == nil {
		select {
		case <-ctx.Done():
			err = fmt.Errorf("dubbo server %s: shutdown with %d requests in flight: %w", s.Addr(), s.inFlight.Load(), ctx.Err())
		case <-tick.C:
		}
	}
	tick.Stop()
	for _, c := range s.stopAccepting() {
		c.w.CloseAfterFlush()
	}
	if !s.waitConns(ctx) { // a peer that does not read keeps its writer stuck
		for _, c := range s.stopAccepting() {
			c.w.Fail(fastpath.ErrClosed)
		}
		s.wg.Wait()
	}
	s.inline.Stop()
	if s.ownsPool {
		s.dispatcher.Close()
		if perr := s.dispatcher.Pool().Shutdown(ctx); perr != nil && err == nil {
			err = perr
		}
	}
	return err
}

// waitConns waits for the accept loop and every connection goroutine.
func (s *Server) waitConns(ctx context.Context) bool {
	done := make(chan struct{})
	go func() { // ends with the goroutines it waits for
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// Close closes the listener and every connection at once. Requests running
// on the pool finish there, but their responses are dropped.
func (s *Server) Close() error {
	for _, c := range s.stopAccepting() {
		c.w.Fail(fastpath.ErrClosed)
	}
	s.wg.Wait()
	s.inline.Stop()
	if s.ownsPool {
		s.dispatcher.Close()
		s.dispatcher.Pool().Close()
	}
	return nil
}
