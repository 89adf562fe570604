package triple

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

	"github.com/dubbo-lab/dubbo/internal/fastpath"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// stream is one call on an HTTP/2 connection.
type stream struct {
	c           *conn
	id          uint32
	call        Call
	ctx         callCtx
	unary       UnaryMethod
	served      StreamMethod
	contentType string
	gzipIn      bool // request messages may be compressed
	gzipOut     bool // response messages are compressed (the request's were allowed to be)

	// Receive side: the reader's, but for what is atomic.
	window      atomic.Int64 // bytes the client may still send
	unacked     atomic.Int64 // consumed bytes not yet granted back
	remoteEnded atomic.Bool  // the client's END_STREAM arrived
	begun       atomic.Int64 // UnixNano when the request (or a streaming message) began; 0: none pending
	prefix      [5]byte
	prefixN     int
	inMsg       bool
	msg         []byte
	need        int
	compressed  bool
	extra       atomic.Int64 // the current message's large reservation
	delivered   int
	rejected    bool // answered while receiving: the rest is dropped

	// Streaming receive queue.
	qmu       sync.Mutex
	queue     []queued
	recvErr   error // io.EOF or the *Status the call ended with
	recvReady chan struct{}

	// Under c.mu.
	sendWindow int64
	closed     bool // ended by either side: out of the stream table
	running    bool // the handler has the call
	orphan     bool // running, though the client reset the stream
	headerSent bool
	reserved   int           // large-message bytes this stream holds
	wantExtra  int           // bytes it waits for, queued in c.largeQueue
	ready      chan struct{} // capacity 1: the window grew, or the stream closed

	// The handler's, for streaming calls.
	header, trailer rpc.Metadata
	replied         atomic.Bool

	// Room for the metadata and the request message of most calls, in
	// the stream's own allocation.
	mdBuf    [4]rpc.MetadataField
	smallBuf [smallMessage]byte
}

// smallMessage is the largest request message read into the stream's own
// buffer (most unary requests).
const smallMessage = 128

// queued is a request message waiting for Recv.
type queued struct {
	msg        []byte
	compressed bool
	extra      int64
}

// init makes s the stream id of c, for the request req (whose metadata
// may be in s.mdBuf).
func (s *stream) init(c *conn, id uint32, req request) {
	s.c, s.id, s.call = c, id, req.call
	s.contentType = responseContentType(req.contentType)
	s.gzipIn, s.gzipOut = req.gzip, req.gzip
	s.ctx.values = c.values
	s.ctx.deadline = req.call.Deadline
	s.window.Store(int64(c.s.cfg.StreamWindow))
}

// bind takes the method Route found, or says why it cannot serve.
func (s *stream) bind(m Method) *Status {
	if m == nil {
		return Errorf(Unimplemented, "unknown method %s for service %s", s.call.Method, s.call.Service)
	}
	switch k := m.Kind(); k {
	case rpc.Unary:
		u, ok := m.(UnaryMethod)
		if !ok {
			return Errorf(Internal, "method %s/%s: a unary method must implement UnaryMethod", s.call.Service, s.call.Method)
		}
		s.unary = u
	case rpc.ServerStream, rpc.ClientStream, rpc.BidiStream:
		sm, ok := m.(StreamMethod)
		if !ok {
			return Errorf(Internal, "method %s/%s: a %v method must implement StreamMethod", s.call.Service, s.call.Method, k)
		}
		s.served = sm
		s.recvReady = make(chan struct{}, 1)
	default:
		return Errorf(Internal, "method %s/%s: unknown kind %v", s.call.Service, s.call.Method, k)
	}
	return nil
}

// begin marks a request, or a streaming message, as begun: it must be
// whole within FrameTimeout.
func (s *stream) begin(now time.Time) { s.begun.Store(now.UnixNano()) }

// wake tells a sender waiting for window to look again. c.mu is held.
func (s *stream) wake() {
	if s.ready == nil {
		return
	}
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// partial says whether the client stopped inside a message.
func (s *stream) partial() bool { return !s.rejected && (s.inMsg || s.prefixN > 0) }

// take reads the request bytes of one DATA frame into messages; it says
// whether this goroutine is still the connection's reader.
func (s *stream) take(data []byte) (reader bool) {
	for len(data) > 0 && !s.rejected {
		if !s.inMsg {
			if s.prefixN == 0 && s.served != nil {
				now := time.Now()
				s.begin(now)
				s.c.mu.Lock()
				s.c.armSweepLocked(now.Add(s.c.s.cfg.FrameTimeout))
				s.c.mu.Unlock()
			}
			k := copy(s.prefix[s.prefixN:], data)
			s.prefixN += k
			data = data[k:]
			if s.prefixN < 5 {
				return true
			}
			if st := s.startMessage(); st != nil {
				s.rejected = true
				s.fail(st)
				return true
			}
			if s.need > 0 {
				continue
			}
		} else {
			k := min(len(data), s.need)
			s.msg = append(s.msg, data[:k]...)
			s.need -= k
			data = data[k:]
			if s.need > 0 {
				return true
			}
		}
		if !s.deliver() {
			return false
		}
	}
	return true
}

// startMessage reads a message's 5-byte prefix. A declared length past
// MaxMessage is refused before its bytes are read; one past what the
// stream's window lets the client send reserves the difference from the
// connection's large-message memory.
func (s *stream) startMessage() *Status {
	limit := s.c.s.cfg.MaxMessage
	n := binary.BigEndian.Uint32(s.prefix[1:])
	switch s.prefix[0] {
	case 0:
		s.compressed = false
	case 1:
		if !s.gzipIn {
			return Errorf(Internal, "grpc: compressed flag set with identity or empty encoding")
		}
		s.compressed = true
	default:
		return Errorf(Internal, "grpc: invalid compressed flag %d", s.prefix[0])
	}
	if uint64(n) > uint64(limit) {
		return Errorf(ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", n, limit)
	}
	s.inMsg, s.need = true, int(n)
	s.extra.Store(0)
	if n <= smallMessage && s.delivered == 0 {
		// The handler keeps the message: only the first may use the
		// stream's buffer.
		s.msg = s.smallBuf[:0:n]
	} else {
		s.msg = make([]byte, 0, min(int(n), s.c.s.cfg.StreamWindow))
	}
	if extra := int64(n) - s.window.Load(); extra > 0 {
		s.reserve(int(extra))
	}
	return nil
}

// reserve makes room for a message larger than the stream's window: it
// takes extra bytes of the connection's large-message memory (MaxMessage
// + 5 per connection) and grants them to the client, or queues the stream
// until another large message frees them; the client waits meanwhile, as
// flow control makes it.
func (s *stream) reserve(extra int) {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.closed {
		return
	}
	s.wantExtra = extra
	c.largeQueue = append(c.largeQueue, s)
	c.grantLargeLocked()
}

// release returns n bytes of large-message memory that s held.
func (c *conn) release(s *stream, n int64) {
	if n == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.closed { // closeLocked gave it all back
		return
	}
	s.reserved -= int(n)
	c.large += int(n)
	c.grantLargeLocked()
}

// grantLargeLocked grants free large-message memory to the streams
// waiting for it, first come first served. c.mu is held.
func (c *conn) grantLargeLocked() {
	var fb *frameBuf
	for len(c.largeQueue) > 0 {
		w := c.largeQueue[0]
		if w.closed {
			c.largeQueue = c.largeQueue[1:]
			continue
		}
		if c.large < w.wantExtra {
			break
		}
		c.largeQueue = c.largeQueue[1:]
		c.large -= w.wantExtra
		w.reserved += w.wantExtra
		w.extra.Store(int64(w.wantExtra))
		w.window.Add(int64(w.wantExtra))
		if fb == nil {
			fb = c.s.frames.get()
		}
		fb.windowUpdate(w.id, uint32(w.wantExtra))
		w.wantExtra = 0
	}
	if fb != nil {
		_ = c.w.Write(fastpath.Queue, fb.b)
		c.s.frames.put(fb)
	}
}

// deliver hands a whole request message on: to Unary, on this goroutine,
// or to the queue Recv reads. It says whether this goroutine is still the
// connection's reader.
func (s *stream) deliver() bool {
	msg, compressed, extra := s.msg, s.compressed, s.extra.Swap(0)
	s.msg, s.inMsg, s.prefixN = nil, false, 0
	s.begun.Store(0)
	s.delivered++
	if s.served != nil {
		s.enqueue(queued{msg, compressed, extra})
		return true
	}
	s.c.release(s, extra)
	if s.delivered > 1 {
		s.rejected = true
		s.fail(Errorf(Internal, "grpc: a unary call got more than one request message"))
		return true
	}
	c := s.c
	c.mu.Lock()
	if s.closed {
		c.mu.Unlock()
		return true
	}
	s.running = true
	c.running++
	c.mu.Unlock()
	return c.reading.Run(func(run *fastpath.Run) { s.runUnary(msg, compressed) })
}

// runUnary decompresses the request and calls the handler; a panic is
// answered with Internal.
func (s *stream) runUnary(msg []byte, compressed bool) {
	defer func() {
		if r := recover(); r != nil {
			s.c.s.log.Error("triple handler panicked", "service", s.call.Service, "method", s.call.Method, "panic", r)
			s.reply(nil, nil, Errorf(Internal, "handler panicked in %s/%s: %v", s.call.Service, s.call.Method, r))
		}
	}()
	if compressed {
		var st *Status
		if msg, st = s.inflate(msg); st != nil {
			s.reply(nil, nil, st)
			return
		}
	}
	s.unary.Unary(&s.ctx, &s.call, msg, s.reply)
}

// inflate decompresses a request message within MaxMessage.
func (s *stream) inflate(msg []byte) ([]byte, *Status) {
	out, err := s.c.s.gzip.decompress(msg, s.c.s.cfg.MaxMessage)
	if errors.Is(err, errTooLarge) {
		return nil, Errorf(ResourceExhausted, "grpc: received message after decompression larger than max %d", s.c.s.cfg.MaxMessage)
	}
	if err != nil {
		return nil, Errorf(Internal, "grpc: failed to decompress the received message: %v", err)
	}
	return out, nil
}

// reply is a unary call's answer (UnaryMethod's reply): the first call
// counts.
func (s *stream) reply(resp []byte, trailer rpc.Metadata, st *Status) {
	if !s.replied.CompareAndSwap(false, true) {
		return
	}
	if !st.ok() {
		resp = nil
	} else if resp == nil {
		resp = []byte{}
	}
	s.finish(resp, trailer, st, true)
}

// fail answers the call with st, unless it was answered already; the
// handler, if it has the call, learns it from its context.
func (s *stream) fail(st *Status) { s.finish(nil, nil, st, false) }

// finish ends the call from our side: msg (a unary response; nil for none)
// and the status in trailers, or a trailers-only response. handler says
// the handler is done with the call. With the client's window too small
// for msg, a goroutine of the connection sends it as the window opens.
func (s *stream) finish(msg []byte, trailer rpc.Metadata, st *Status, handler bool) {
	c := s.c
	fb := c.s.frames.get()
	maxFrame := int(c.maxFrame.Load())
	var payload int
	if msg != nil {
		compressed := s.gzipOut
		if compressed {
			msg = c.s.gzip.compress(nil, msg)
		}
		payload = 5 + len(msg)
		fb.headers(s.id, c.s.blocks.responseHeaders(fb, s.contentType, s.gzipOut, nil), false, maxFrame)
		fb.message(s.id, msg, compressed, maxFrame)
		fb.headers(s.id, c.s.blocks.trailers(fb, st, trailer), true, maxFrame)
	}
	c.mu.Lock()
	if handler {
		c.handlerDoneLocked(s)
	}
	if s.closed {
		c.mu.Unlock()
		c.s.frames.put(fb)
		return
	}
	if msg != nil && (int64(payload) > c.sendWindow || int64(payload) > s.sendWindow) {
		c.mu.Unlock()
		c.s.frames.put(fb)
		// The window is shut for now: send as it opens, on a goroutine
		// of the connection (rare: large responses).
		c.s.calls.Add(1)
		go s.sendLater(msg, trailer, st)
		return
	}
	if msg == nil {
		if s.headerSent {
			fb.headers(s.id, c.s.blocks.trailers(fb, st, trailer), true, maxFrame)
		} else {
			fb.headers(s.id, c.s.blocks.trailersOnly(fb, s.contentType, st, s.header, trailer), true, maxFrame)
		}
	} else {
		c.sendWindow -= int64(payload)
		s.sendWindow -= int64(payload)
	}
	s.headerSent = true
	if !s.remoteEnded.Load() {
		// A complete response before the whole request: the client may
		// stop sending (RFC 9113 §8.1).
		fb.rst(s.id, http2.ErrCodeNo)
	}
	_ = c.w.Write(fastpath.Hold, fb.b)
	c.closeLocked(s) // after the write: it may close the Writer
	c.mu.Unlock()
	c.s.frames.put(fb)
	c.sent.Add(1)
	if st.ok() {
		st = nil
	}
	s.end(st)
	c.flush(s)
}

// flush writes what a call left held in the Writer, unless a burst (the
// connection reader's, or that of the goroutine completing the call)
// holds it, to write it with the rest of the burst.
func (c *conn) flush(s *stream) {
	if h := s.ctx.completer.Holder(); h != nil && h.Hold(c.w) {
		return
	}
	if c.burst.Hold(c.w) {
		return
	}
	c.w.FlushHeld()
}

// sendLater sends a unary response the client's window did not take at
// once, then the trailers.
func (s *stream) sendLater(msg []byte, trailer rpc.Metadata, st *Status) {
	defer s.c.s.calls.Add(-1)
	if err := s.send(msg, s.gzipOut); err != nil {
		return
	}
	s.finish(nil, trailer, st, false)
}

// send sends one message (already compressed when compressed says so),
// as the windows let it: it waits while they are shut, until the call
// ends.
func (s *stream) send(msg []byte, compressed bool) error {
	c := s.c
	enc := make([]byte, 0, 5+len(msg))
	var flag byte
	if compressed {
		flag = 1
	}
	enc = append(binary.BigEndian.AppendUint32(append(enc, flag), uint32(len(msg))), msg...)
	fb := c.s.frames.get()
	defer c.s.frames.put(fb)
	for len(enc) > 0 {
		c.mu.Lock()
		if s.closed {
			c.mu.Unlock()
			return s.endErr()
		}
		n := int(min(int64(len(enc)), c.sendWindow, s.sendWindow))
		if n <= 0 {
			if s.ready == nil {
				s.ready = make(chan struct{}, 1)
			}
			if c.blocked == nil {
				c.blocked = make(map[*stream]struct{})
			}
			c.blocked[s] = struct{}{}
			if c.sendWindow <= 0 && c.blockedAt.IsZero() {
				c.blockedAt = time.Now()
				c.armSweepLocked(c.blockedAt.Add(c.s.cfg.FrameTimeout))
			}
			c.mu.Unlock()
			<-s.ready
			continue
		}
		delete(c.blocked, s)
		fb.reset()
		maxFrame := int(c.maxFrame.Load())
		if !s.headerSent {
			fb.headers(s.id, c.s.blocks.responseHeaders(fb, s.contentType, s.gzipOut, s.header), false, maxFrame)
			s.headerSent = true
		}
		fb.data(s.id, enc[:n], maxFrame)
		c.sendWindow -= int64(n)
		s.sendWindow -= int64(n)
		_ = c.w.Write(fastpath.Hold, fb.b)
		c.mu.Unlock()
		c.sent.Add(1)
		c.w.FlushHeld()
		enc = enc[n:]
	}
	return nil
}

// end tells the call's parties it is over: its context ends, Recv and
// Send return. st is nil for a call that ended well.
func (s *stream) end(st *Status) {
	var err error = context.Canceled
	if st != nil && st.Code == DeadlineExceeded {
		err = context.DeadlineExceeded
	}
	s.ctx.cancel(err)
	if s.served == nil {
		return
	}
	s.qmu.Lock()
	if s.recvErr == nil || s.recvErr == io.EOF && st != nil {
		if st == nil {
			st = Errorf(Canceled, "the call ended")
		}
		s.recvErr = st
	}
	drop := s.queue
	s.queue = nil
	s.qmu.Unlock()
	for _, q := range drop {
		s.c.release(s, q.extra)
	}
	s.signalRecv()
}

// endErr is what Send returns once the call ended.
func (s *stream) endErr() error {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if st, ok := s.recvErr.(*Status); ok {
		return st
	}
	return Errorf(Canceled, "the call ended")
}

func (s *stream) signalRecv() {
	select {
	case s.recvReady <- struct{}{}:
	default:
	}
}

// enqueue queues a request message for Recv.
func (s *stream) enqueue(q queued) {
	s.qmu.Lock()
	if s.recvErr != nil {
		s.qmu.Unlock()
		s.c.release(s, q.extra)
		return
	}
	s.queue = append(s.queue, q)
	s.qmu.Unlock()
	s.signalRecv()
}

// queueEOF tells Recv the client half-closed.
func (s *stream) queueEOF() {
	s.qmu.Lock()
	if s.recvErr == nil {
		s.recvErr = io.EOF
	}
	s.qmu.Unlock()
	s.signalRecv()
}

// grant gives n consumed bytes back to the client's window on the stream,
// in batches of a quarter window.
func (s *stream) grant(n int64) {
	if n <= 0 || s.remoteEnded.Load() {
		return
	}
	if s.unacked.Add(n) < int64(s.c.s.cfg.StreamWindow/4) {
		return
	}
	inc := s.unacked.Swap(0)
	if inc <= 0 {
		return
	}
	s.window.Add(inc)
	s.c.control(func(fb *frameBuf) { fb.windowUpdate(s.id, uint32(inc)) })
}

// serve runs a streaming method on its own goroutine.
func (s *stream) serve() {
	defer s.c.s.calls.Add(-1)
	var st *Status
	func() {
		defer func() {
			if r := recover(); r != nil {
				s.c.s.log.Error("triple handler panicked", "service", s.call.Service, "method", s.call.Method, "panic", r)
				st = Errorf(Internal, "handler panicked in %s/%s: %v", s.call.Service, s.call.Method, r)
			}
		}()
		st = s.served.Serve(&s.ctx, &s.call, s)
	}()
	s.finish(nil, s.trailer, st, true)
}

// Recv implements Stream.
func (s *stream) Recv() ([]byte, error) {
	for {
		s.qmu.Lock()
		if len(s.queue) > 0 {
			q := s.queue[0]
			s.queue[0] = queued{}
			s.queue = s.queue[1:]
			s.qmu.Unlock()
			s.c.release(s, q.extra)
			s.grant(int64(5+len(q.msg)) - q.extra)
			if !q.compressed {
				return q.msg, nil
			}
			msg, st := s.inflate(q.msg)
			if st != nil {
				s.fail(st)
				return nil, st
			}
			return msg, nil
		}
		err := s.recvErr
		s.qmu.Unlock()
		if err != nil {
			return nil, err
		}
		<-s.recvReady
	}
}

// Send implements Stream.
func (s *stream) Send(msg []byte) error {
	if s.gzipOut {
		msg = s.c.s.gzip.compress(nil, msg)
	}
	return s.send(msg, s.gzipOut)
}

// SetHeader implements Stream.
func (s *stream) SetHeader(md rpc.Metadata) error {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	if s.headerSent {
		return errors.New("triple: SetHeader after the first Send")
	}
	s.header = append(s.header, md...)
	return nil
}

// SetTrailer implements Stream.
func (s *stream) SetTrailer(md rpc.Metadata) { s.trailer = append(s.trailer, md...) }
