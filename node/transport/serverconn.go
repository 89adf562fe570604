package transport

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/internal/callctx"
	"github.com/dubbo-lab/dubbo/internal/fastpath"
	"github.com/dubbo-lab/dubbo/internal/sockio"
	"github.com/dubbo-lab/dubbo/node/dispatch"
	"github.com/dubbo-lab/dubbo/node/protocol"
)

// peerKey carries the consumer's address in a handler's context.
type peerKey struct{}

// Peer returns the remote address of the connection a request came on, or
// nil outside a Handler.
func Peer(ctx context.Context) net.Addr {
	a, _ := ctx.Value(peerKey{}).(net.Addr)
	return a
}

// WithPeer returns ctx carrying remote as Peer's answer, for work done on
// behalf of a connection outside a Handler (its connect and disconnect
// events).
func WithPeer(ctx context.Context, remote net.Addr) context.Context {
	return context.WithValue(ctx, peerKey{}, remote)
}

// serverConn is one consumer connection: serve is its reader goroutine, w
// its writer.
type serverConn struct {
	s    *Server
	conn net.Conn
	sock *sockio.Conn
	w    *fastpath.Writer
	// ctx is cancelled when the connection closes, so handlers can give up
	// work nobody will receive.
	ctx    context.Context
	cancel context.CancelFunc

	br   *bufio.Reader     // under dec
	dec  *protocol.Decoder // the reader's, passed on with the reading
	busy atomic.Int32      // requests of this connection being served

	// While the reader has more whole requests buffered, writes that
	// serving them causes may be held back and are flushed when the burst
	// ends; the Holder in the connection's context.
	burst fastpath.Burst
	// reading runs requests inline on the reader; the server's watchdog
	// hands the reading to a new goroutine when one runs for long.
	reading *fastpath.Reader
}

// errHandedOver ends a reader whose request ran long: another goroutine
// reads the connection now.
var errHandedOver = errors.New("another goroutine reads the connection now")

func newServerConn(s *Server, conn net.Conn) *serverConn {
	c := &serverConn{s: s, conn: conn, sock: sockio.New(conn)}
	ctx := fastpath.WithHolder(context.WithValue(context.Background(), peerKey{}, conn.RemoteAddr()), &c.burst)
	c.ctx, c.cancel = context.WithCancel(ctx)
	c.w = newWriter(conn, c.sock, s.cfg.HeartbeatTimeout, c.cancel) // the cancel also ends a reader's wait for body memory
	// The new reader takes over the old one's place in s.wg, so the old
	// one is then no more waited for than a pool worker.
	c.reading = s.inline.NewReader(func() { go c.readAndClose() })
	return c
}

// requestBuffered says whether br holds a whole frame.
func requestBuffered(br *bufio.Reader) bool {
	if br.Buffered() < protocol.HeaderSize {
		return false
	}
	h, _ := br.Peek(protocol.HeaderSize)
	return uint64(br.Buffered()) >= protocol.HeaderSize+uint64(binary.BigEndian.Uint32(h[12:16]))
}

func (c *serverConn) serve() {
	if fn := c.s.cfg.OnConnect; fn != nil {
		remote := c.conn.RemoteAddr()
		c.s.dispatcher.Dispatch(dispatch.Connect, func() { fn(remote) })
	}
	c.br = bufio.NewReaderSize(c.sock, 16<<10)
	c.dec = protocol.NewDecoder(c.br, c.s.cfg.Payload)
	c.readAndClose()
}

// readAndClose reads until the connection ends, then closes it; a reader
// that handed the reading over returns at once and leaves that to its
// successor, which also takes over its place in s.wg.
func (c *serverConn) readAndClose() {
	err := c.read()
	c.burst.Flush()
	if err == errHandedOver {
		return
	}
	defer c.s.wg.Done()
	remote := c.conn.RemoteAddr()
	c.cancel()
	c.w.Fail(err)
	c.reading.Close()
	c.s.removeConn(c)
	if fn := c.s.cfg.OnDisconnect; fn != nil {
		c.s.dispatcher.Dispatch(dispatch.Disconnect, func() { fn(remote) })
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, fastpath.ErrClosed) {
		c.s.log.Info("consumer connection closed", "remote", remote.String(), "err", err)
	}
}

// maxUnsent bounds the response bytes a connection may have waiting for
// its peer before its reader stops reading requests (backpressure): a
// consumer that sends without reading its answers holds this much, not a
// growing buffer, until it reads or the write timeout closes it.
const maxUnsent = 256 << 10

// yieldEvery is how many frames a reader decodes between yields to other
// goroutines.
const yieldEvery = 64

// read decodes frames until the connection fails or stops speaking dubbo,
// or until a request it ran itself was handed over. It runs a handler only
// when nothing else of its connection runs (dispatch), never waits on one
// for long.
func (c *serverConn) read() error {
	dec := c.dec
	for n := 1; ; n++ {
		if n%yieldEvery == 0 {
			// A peer that keeps this reader's buffer full would otherwise
			// hold a core for whole scheduler slices, while other
			// connections' readers wait.
			runtime.Gosched()
		}
		deadline, err := c.awaitFrame()
		if err != nil {
			return err
		}
		h, err := dec.ReadHeader()
		if errors.Is(err, protocol.ErrPayloadTooLarge) {
			if err := dec.SkipBody(h); err != nil {
				return c.frameError(err)
			}
			if h.Request && h.TwoWay {
				c.reject(h, protocol.StatusBadRequest, c.payloadMessage(h))
			}
			continue
		}
		if err != nil {
			return c.frameError(err) // bad magic or header: the stream cannot be resynchronised
		}
		if !h.Request {
			// A response to a heartbeat we never send, or a stray one.
			if err := dec.SkipBody(h); err != nil {
				return c.frameError(err)
			}
			continue
		}
		reserved := 0
		if h.BodyLen > protocol.SmallBody {
			if err := c.reserve(h.BodyLen, deadline); err != nil {
				return err
			}
			reserved = h.BodyLen
		}
		body, err := dec.ReadBody(h)
		if err != nil {
			c.s.bodies.release(reserved)
			return c.frameError(err)
		}
		req, err := dec.DecodeRequest(protocol.Frame{Header: h, Body: body})
		c.s.bodies.release(reserved) // the request keeps copies, not the body
		if err != nil {
			if h.TwoWay {
				c.reject(h, protocol.StatusBadRequest, "Fail to decode request due to: "+err.Error())
			}
			continue
		}
		if req.Event {
			c.event(req)
			continue
		}
		burst := requestBuffered(c.br)
		c.burst.Set(burst)
		reader := c.dispatch(req)
		if !burst || !reader {
			c.burst.Flush()
		}
		if !reader {
			return errHandedOver
		}
	}
}

// awaitFrame returns once the next frame has started to arrive (or is
// buffered whole), with the time by which the rest must arrive. While the
// connection has more than maxUnsent bytes of responses waiting for the
// peer, it reads nothing.
func (c *serverConn) awaitFrame() (deadline time.Time, err error) {
	if c.w.Unsent() > maxUnsent {
		c.burst.Flush()
		if err := c.w.WaitUnsent(maxUnsent); err != nil {
			return deadline, err
		}
	}
	if requestBuffered(c.br) {
		return deadline, nil // nothing more to read for it
	}
	if c.br.Buffered() == 0 {
		// A consumer heartbeats every minute; silence for three means it is gone.
		if err := c.conn.SetReadDeadline(time.Now().Add(c.s.cfg.HeartbeatTimeout)); err != nil {
			return deadline, err
		}
		if _, err := c.br.Peek(1); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return deadline, fmt.Errorf("no frame from %s for %v (heartbeat timeout): %w", c.conn.RemoteAddr(), c.s.cfg.HeartbeatTimeout, err)
			}
			return deadline, err
		}
		if requestBuffered(c.br) {
			return deadline, nil
		}
	}
	// A frame has begun: it must be complete within FrameTimeout, however
	// slowly its bytes drip in.
	deadline = time.Now().Add(c.s.cfg.FrameTimeout)
	return deadline, c.conn.SetReadDeadline(deadline)
}

// frameError describes err from reading a frame; a read that timed out
// inside a frame means the frame was not complete within FrameTimeout.
func (c *serverConn) frameError(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("frame from %s incomplete after %v (protocol.frame-timeout): %w", c.conn.RemoteAddr(), c.s.cfg.FrameTimeout, err)
	}
	return err
}

// reserve takes n bytes of the server's body memory for a large body,
// waiting for them at most until deadline, when the frame must be complete
// anyway; the wait holds up this connection only.
func (c *serverConn) reserve(n int, deadline time.Time) error {
	if deadline.IsZero() {
		deadline = time.Now().Add(c.s.cfg.FrameTimeout)
	}
	ctx, cancel := context.WithDeadline(c.ctx, deadline)
	defer cancel()
	if err := c.s.bodies.acquire(ctx, n); err != nil {
		return fmt.Errorf("frame from %s: no memory for its %d-byte body within %v (protocol.body-memory %d bytes in use by other bodies): %w",
			c.conn.RemoteAddr(), n, c.s.cfg.FrameTimeout, c.s.cfg.BodyMemory, err)
	}
	return nil
}

// event answers heartbeats right here, never behind business work.
func (c *serverConn) event(req *protocol.Request) {
	if req.IsHeartbeat() && req.TwoWay {
		c.send(protocol.ResponseTo(req), fastpath.Queue)
	}
}

// dispatch serves req; it says whether this goroutine is still the
// connection's reader.
func (c *serverConn) dispatch(req *protocol.Request) (reader bool) {
	// The consumer gives up after its timeout attachment, counted from now,
	// so the handler's context does too (time in the pool queue counts).
	var deadline time.Time
	if d := millis(req.Attachments["timeout"]); d > 0 {
		deadline = time.Now().Add(d)
	}
	c.s.inFlight.Add(1)
	c.busy.Add(1)
	if h, ok := c.s.handler.(AsyncHandler); ok && h.Async(req) {
		// It holds one of the pool's threads until it is answered, so
		// threads bounds these calls as it bounds the pool's; when none is
		// free it takes the ordinary way, to the pool's queue or refused.
		if release, ok := c.s.dispatcher.Hold(); ok {
			c.handleAsync(h, req, deadline, release)
			return true
		}
	}
	if !c.s.cfg.PoolOnly && c.busy.Load() == 1 {
		// Nothing else of this connection runs, so the reader would only
		// wait for this request: it runs it itself rather than wake a pool
		// worker, which costs more than the typical handler. Should the
		// handler run long, the watchdog lets another goroutine read on.
		var ran bool
		reader = c.reading.Run(func(*fastpath.Run) {
			ran = c.s.dispatcher.RunHere(func() { c.handle(req, deadline) })
		})
		if ran {
			return reader
		}
	} else {
		reader = true
	}
	err := c.s.dispatcher.Dispatch(dispatch.Request, func() { c.handle(req, deadline) })
	if err == nil {
		return reader
	}
	c.s.inFlight.Add(-1)
	c.busy.Add(-1)
	if req.TwoWay {
		resp := protocol.ResponseTo(req)
		resp.Status = protocol.StatusServerThreadpoolExhaust
		resp.ErrorMessage = fmt.Sprintf("Server side(%s) thread pool is exhausted, detail msg:%v", hostComma(c.conn.LocalAddr()), err)
		c.send(resp, fastpath.Queue)
	}
	return reader
}

// handle runs on a pool worker; deadline, if set, bounds the handler's
// context.
func (c *serverConn) handle(req *protocol.Request, deadline time.Time) {
	defer c.s.inFlight.Add(-1)
	defer c.busy.Add(-1)
	c.answer(req, c.call(req, deadline), fastpath.Flush)
}

// answer sends the handler's response to a two-way request.
func (c *serverConn) answer(req *protocol.Request, resp *protocol.Response, mode fastpath.Mode) {
	if !req.TwoWay {
		return
	}
	if resp == nil {
		resp = protocol.ResponseTo(req)
		resp.Status = protocol.StatusServiceError
		resp.ErrorMessage = fmt.Sprintf("service %s method %s returned no response", req.Path, req.Method)
	}
	resp.ID = req.ID
	c.send(resp, mode)
}

// panicked is the response to a request whose handler panicked with r.
func (c *serverConn) panicked(req *protocol.Request, r any) *protocol.Response {
	c.s.log.Error("handler panicked", "service", req.Path, "method", req.Method, "panic", r)
	resp := protocol.ResponseTo(req)
	resp.Status = protocol.StatusServiceError
	resp.ErrorMessage = fmt.Sprintf("provider handler panicked in %s.%s: %v", req.Path, req.Method, r)
	return resp
}

// handleAsync starts req on the IO goroutine; the reply is written by
// whoever completes it (a plugin link's reader), without waiting on the
// socket, or held for that goroutine's burst of completions.
func (c *serverConn) handleAsync(h AsyncHandler, req *protocol.Request, deadline time.Time, held func()) {
	ctx, release := context.Context(c.ctx), func() {}
	if !deadline.IsZero() {
		cc := callctx.New(c.ctx, deadline)
		ctx, release = cc, cc.Release
	}
	ctx, completer := fastpath.WithCompleter(ctx)
	var once sync.Once
	reply := func(resp *protocol.Response) {
		once.Do(func() {
			defer c.s.inFlight.Add(-1)
			defer c.busy.Add(-1)
			mode := fastpath.Try
			if h := completer.Holder(); h != nil && h.Hold(c.w) {
				mode = fastpath.Hold
			}
			release()
			// The thread is free before the consumer can see the answer
			// and send its next call.
			held()
			c.answer(req, resp, mode)
		})
	}
	defer func() {
		if r := recover(); r != nil {
			reply(c.panicked(req, r))
		}
	}()
	h.HandleAsync(ctx, req, reply)
}

func (c *serverConn) call(req *protocol.Request, deadline time.Time) (resp *protocol.Response) {
	ctx := c.ctx
	if !deadline.IsZero() {
		cc := callctx.New(c.ctx, deadline)
		defer cc.Release()
		ctx = cc
	}
	defer func() {
		if r := recover(); r != nil {
			resp = c.panicked(req, r)
		}
	}()
	return c.s.handler.Handle(ctx, req)
}

// reject answers a request the reader could not decode.
func (c *serverConn) reject(h protocol.Header, status protocol.Status, msg string) {
	c.send(&protocol.Response{ID: h.ID, Status: status, ErrorMessage: msg}, fastpath.Queue)
}

func (c *serverConn) payloadMessage(h protocol.Header) string {
	return fmt.Sprintf("Fail to decode request due to: org.apache.dubbo.remoting.transport.ExceedPayloadLimitException: "+
		"Data length too large: %d, max payload: %d, channel: %s -> %s",
		h.BodyLen, c.s.cfg.Payload, c.conn.RemoteAddr(), c.conn.LocalAddr())
}

// send encodes resp and writes it as mode says: a pool worker writes it
// itself (Flush), the connection's reader never (Queue), a plugin link's
// reader only what the socket takes at once (Try), or for its burst
// (Hold). A response too large for the payload limit is replaced by
// SERIALIZATION_ERROR, one the codec cannot write by BAD_RESPONSE, as Java
// does.
func (c *serverConn) send(resp *protocol.Response, mode fastpath.Mode) {
	enc := c.s.encoders.get()
	defer c.s.encoders.put(enc)
	var err error
	enc.buf, err = enc.AppendResponse(enc.buf[:0], resp)
	if err != nil {
		status := protocol.StatusBadResponse
		if errors.Is(err, protocol.ErrPayloadTooLarge) {
			status = protocol.StatusSerializationError
		}
		c.s.log.Warn("cannot encode response", "id", resp.ID, "err", err)
		fail := &protocol.Response{ID: resp.ID, Status: status, Event: resp.Event,
			ErrorMessage: "Failed to send response: " + err.Error()}
		if enc.buf, err = enc.AppendResponse(enc.buf[:0], fail); err != nil {
			return
		}
	}
	if resp.Output != nil {
		resp.Output.AddOutput(len(enc.buf))
	}
	// An error means the connection is gone; the consumer sees that instead.
	_ = c.w.Write(mode, enc.buf)
}

// sendReadOnly queues the oneway read-only event (flags a2, body "R").
func (c *serverConn) sendReadOnly() {
	enc := c.s.encoders.get()
	defer c.s.encoders.put(enc)
	var err error
	enc.buf, err = enc.AppendRequest(enc.buf[:0], protocol.ReadOnlyEvent(c.s.eventID.Add(1)))
	if err == nil {
		_ = c.w.Write(fastpath.Queue, enc.buf)
	}
}

// hostComma formats an address as Java's "ip,port" in the exhausted message.
func hostComma(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return fmt.Sprintf("%s,%d", t.IP, t.Port)
	}
	return a.String()
}
