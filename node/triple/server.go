package triple

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

	"github.com/dubbo-lab/dubbo/internal/fastpath"
	"github.com/dubbo-lab/dubbo/internal/listener"
	"github.com/dubbo-lab/dubbo/internal/sockio"
)

// ErrServerClosed is what Serve returns after Shutdown or Close.
var ErrServerClosed = errors.New("triple: server closed")

// slowInline is how long handler code run on a connection's reader
// (Route, Unary) may hold up the connection before the reading is handed
// to a new goroutine.
const slowInline = 2 * time.Millisecond

// Server serves Triple: gRPC over HTTP/2 and unary calls over HTTP/1.1,
// on one listener.
type Server struct {
	cfg     Config
	handler Handler
	log     *slog.Logger
	frames  frameBufs
	gzip    gzipCodec
	blocks  *blocks
	h1      *http.Server
	h1conns *listener.Handoff

	open    atomic.Int64 // connections, HTTP/2 and HTTP/1.1
	refused atomic.Int64

	mu      sync.Mutex
	ln      net.Listener
	inline  *fastpath.Inline // the readers' watchdog, from Serve on
	conns   map[*conn]struct{}
	closing bool
	wg      sync.WaitGroup // the accept loop, the HTTP/1.1 server, each connection's reader and writer
	calls   atomic.Int64   // goroutines of calls: streaming handlers, senders of large responses
	done    chan struct{}  // closed when the server is closed
}

// NewServer returns a server of h; Serve starts it.
func NewServer(cfg Config, h Handler) *Server {
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, handler: h, log: cfg.Logger, blocks: newBlocks(),
		conns: make(map[*conn]struct{}), done: make(chan struct{}), h1conns: listener.NewHandoff(pipeAddr{})}
	s.h1 = &http.Server{
		Handler: &http1Handler{s: s},
		// A request, headers and body, must arrive within FrameTimeout
		// as on HTTP/2; writes get a deadline in http1Handler.
		ReadTimeout:       cfg.FrameTimeout,
		ReadHeaderTimeout: cfg.FrameTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderListSize,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
	}
	return s
}

// Serve accepts connections on ln and serves them until Shutdown or Close,
// which close ln; it then returns ErrServerClosed.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return ErrServerClosed
	}
	if s.ln != nil {
		s.mu.Unlock()
		return errors.New("triple: Serve called twice")
	}
	s.ln = ln
	s.inline = fastpath.NewInline(slowInline)
	s.wg.Add(2)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		_ = s.h1.Serve(s.h1conns) // ends when Shutdown or Close closes it
	}()
	s.accept(ln)
	<-s.done
	return ErrServerClosed
}

// Addr is the address the server listens on, nil before Serve.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

func (s *Server) accept(ln net.Listener) {
	defer s.wg.Done()
	for {
		nc, err := listener.Accept(ln, s.log, s.isClosing)
		if err != nil {
			return
		}
		if n := s.open.Add(1); s.cfg.Accepts > 0 && n > int64(s.cfg.Accepts) {
			s.open.Add(-1)
			s.refuse(nc)
			continue
		}
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			s.open.Add(-1)
			nc.Close()
			continue
		}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.handshake(nc)
	}
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// refuse closes a connection over Accepts, and says so in the log (at
// the 1st, 2nd, 4th, 8th... refusal: a flood is a few lines, with the
// count).
func (s *Server) refuse(nc net.Conn) {
	n := s.refused.Add(1) // counted before the client can see the close
	nc.Close()
	if n&(n-1) == 0 { // 1, 2, 4, 8, ...
		s.log.Error("triple connection refused: the server has reached its accepts limit; raise it or add providers",
			"remote", nc.RemoteAddr().String(), "accepts", s.cfg.Accepts, "refused_total", n)
	}
}

// handshake reads the start of a connection: the HTTP/2 client preface
// makes it an HTTP/2 connection, anything else goes to the HTTP/1.1
// server. The preface must arrive within FrameTimeout.
func (s *Server) handshake(nc net.Conn) {
	sock := sockio.New(nc)
	br := bufio.NewReaderSize(sock, 32<<10)
	deadline := time.Now().Add(s.cfg.FrameTimeout)
	_ = nc.SetReadDeadline(deadline)
	h2, err := sniff(br)
	if err != nil {
		s.wg.Done()
		s.open.Add(-1)
		nc.Close()
		return
	}
	if !h2 {
		_ = nc.SetReadDeadline(time.Time{})
		s.wg.Done() // net/http owns it from here; closing it gives back its place
		if !s.h1conns.Hand(&h1Conn{Conn: nc, br: br, s: s}) {
			s.open.Add(-1)
			nc.Close()
		}
		return
	}
	c := newConn(s, nc, br, sock, deadline)
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		s.wg.Done()
		s.open.Add(-1)
		nc.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() { // the connection's writer, owned by it
		defer s.wg.Done()
		c.w.Run()
	}()
	c.serve()
}

// sniff reads the HTTP/2 client preface if that is how the connection
// starts; it consumes nothing otherwise. It reads no more than it needs
// to tell: a short HTTP/1.1 request is not waited on.
func sniff(br *bufio.Reader) (h2 bool, err error) {
	const preface = http2.ClientPreface
	for n := 1; ; n = min(max(n+1, br.Buffered()), len(preface)) {
		b, err := br.Peek(n)
		if err != nil {
			return false, err
		}
		if string(b) != preface[:n] {
			return false, nil
		}
		if n == len(preface) {
			_, _ = br.Discard(n)
			return true, nil
		}
	}
}

func (s *Server) h2Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.open.Add(-1)
	s.wg.Done()
}

// Shutdown stops accepting, sends every HTTP/2 client GOAWAY with the last
// stream it will serve, lets the calls in flight finish, and closes each
// connection once its calls are done. When ctx ends first it closes the
// rest at once and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	conns := s.stopAccepting()
	for _, c := range conns {
		c.shutdown()
	}
	h1done := make(chan error, 1)
	go func() { h1done <- s.h1.Shutdown(ctx) }() // ends with ctx at the latest
	var err error
	tick := time.NewTicker(5 * time.Millisecond)
	for s.h2Conns() > 0 || s.calls.Load() > 0 {
		select {
		case <-ctx.Done():
			err = fmt.Errorf("triple server %v: shutdown with calls in flight: %w", s.Addr(), ctx.Err())
			s.closeAll() // the calls' goroutines see their contexts end; they are not waited for
		case <-tick.C:
			continue
		}
		break
	}
	tick.Stop()
	s.wg.Wait()
	if herr := <-h1done; herr != nil && err == nil {
		err = fmt.Errorf("triple server %v: HTTP/1.1 shutdown: %w", s.Addr(), herr)
	}
	s.finish()
	return err
}

// Close closes the listener and every connection at once; calls in flight
// see their contexts end.
func (s *Server) Close() error {
	s.stopAccepting()
	s.closeAll()
	s.wg.Wait()
	s.finish()
	return nil
}

func (s *Server) stopAccepting() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closing {
		s.closing = true
		if s.ln != nil {
			s.ln.Close()
		}
		s.h1conns.Close()
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}

func (s *Server) closeAll() {
	_ = s.h1.Close()
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.w.Fail(fastpath.ErrClosed)
	}
}

// finish releases what Serve started, once every goroutine ended.
func (s *Server) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inline != nil {
		s.inline.Stop()
	}
	select {
	case <-s.done:
	default:
		close(s.done)
	}
}

// h1Conn is a connection handed to the HTTP/1.1 server: its first bytes
// are in br, read while sniffing.
type h1Conn struct {
	net.Conn
	br   *bufio.Reader
	s    *Server
	once sync.Once
}

func (c *h1Conn) Read(p []byte) (int, error) {
	if c.br != nil && c.br.Buffered() > 0 {
		return c.br.Read(p)
	}
	return c.Conn.Read(p)
}

func (c *h1Conn) Close() error {
	c.once.Do(func() { c.s.open.Add(-1) })
	return c.Conn.Close()
}

// pipeAddr is the address of the HTTP/1.1 server's listener, made before
// Serve knows the real one.
type pipeAddr struct{}

func (pipeAddr) Network() string { return "triple" }
func (pipeAddr) String() string  { return "triple-http1" }

var _ io.Reader = (*h1Conn)(nil)
