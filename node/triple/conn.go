package triple

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/dubbo-lab/dubbo/internal/fastpath"
	"github.com/dubbo-lab/dubbo/internal/sockio"
)

// conn is one HTTP/2 connection. Its reader (readAndClose, on one
// goroutine at a time) owns the frame decoder, the HPACK decoder and the
// receive side of every stream; mu guards what the goroutines answering
// calls share with it: the stream table, the send windows, the stream
// ends. Frames go out through w, a fastpath.Writer.
type conn struct {
	s     *Server
	nc    net.Conn
	br    *bufio.Reader
	fr    *http2.Framer
	dec   *hpack.Decoder
	w     *fastpath.Writer
	peer  netip.AddrPort
	burst fastpath.Burst
	// reading runs Unary handlers on the reader; the server's watchdog
	// hands the reading to a new goroutine when one runs long.
	reading *fastpath.Reader
	// values is the parent of every call's context: it carries the
	// connection's Holder (its burst), so the calls a burst starts can go
	// out together.
	values context.Context

	// The reader's own.
	hl          headerList
	maxStreamID uint32 // the highest stream id the client opened
	settled     bool   // the client's first SETTINGS arrived
	acked       bool   // the client acknowledged ours: it knows our limits
	recvUnacked int64  // connection-window bytes received and not yet granted back
	deadline    time.Time
	frames      int // handled since the reader last waited for bytes
	abuse       abuse

	// sent counts the responses (HEADERS, DATA) we wrote: PINGs and
	// SETTINGS between which we wrote none are idle chatter (abuse).
	sent atomic.Int64

	maxFrame atomic.Int32 // the client's SETTINGS_MAX_FRAME_SIZE

	mu         sync.Mutex
	streams    map[uint32]*stream
	sendWindow int64 // the client's connection window for our DATA
	initWindow int64 // the client's SETTINGS_INITIAL_WINDOW_SIZE
	large      int   // large-message bytes free (see stream.reserve)
	largeQueue []*stream
	orphans    int // handlers still running for streams the client reset
	running    int // handlers running, orphans included
	goingAway  bool
	closed     bool
	sweepTimer *time.Timer
	sweepDue   time.Time
	blocked    map[*stream]struct{} // senders waiting for window
	blockedAt  time.Time            // when the connection window last shut with senders waiting
}

// Connection-level constants.
const (
	// connWindow is the connection's receive window. Streams bound what
	// is buffered (each its StreamWindow, or a large message's
	// reservation), so the connection window is granted back as bytes
	// arrive and only needs to be large enough not to slow them.
	connWindow = 1 << 20
	// maxUnsent bounds the bytes of frames waiting for the client before
	// the reader stops reading (backpressure on a client that sends but
	// does not read).
	maxUnsent = 256 << 10
	// yieldEvery is how many frames a reader handles in a row, without
	// waiting for the client, between yields.
	yieldEvery = 64
	// maxContinuations bounds the CONTINUATION frames of one header
	// block: a legitimate encoder needs a handful.
	maxContinuations = 64
)

// errIdle ends a connection that sent nothing for IdleTimeout (or no
// preface for FrameTimeout).
var errIdle = errors.New("idle connection")

// errHandedOver ends a reader whose handler code ran long: another
// goroutine reads the connection now.
var errHandedOver = errors.New("another goroutine reads the connection now")

// connError is an HTTP/2 connection error: the connection ends with a
// GOAWAY carrying code.
type connError struct {
	code   http2.ErrCode
	reason string
}

func (e connError) Error() string { return fmt.Sprintf("http2 %v: %s", e.code, e.reason) }

// newConn makes the HTTP/2 connection of nc, whose preface was read
// through br with the read deadline deadline.
func newConn(s *Server, nc net.Conn, br *bufio.Reader, sock *sockio.Conn, deadline time.Time) *conn {
	c := &conn{s: s, nc: nc, br: br, deadline: deadline, streams: make(map[uint32]*stream),
		sendWindow: 65535, initWindow: 65535, large: s.cfg.MaxMessage + 5}
	if ap, err := netip.ParseAddrPort(nc.RemoteAddr().String()); err == nil {
		c.peer = ap
	}
	c.maxFrame.Store(16384)
	c.fr = http2.NewFramer(io.Discard, br)
	c.fr.SetReuseFrames()
	c.fr.SetMaxReadFrameSize(16384)
	c.hl.limit = s.cfg.MaxHeaderListSize
	c.dec = hpack.NewDecoder(4096, c.hl.emit)
	c.hl.dec = c.dec
	// A string past twice the limit could only come in a block past it
	// (readBlock ends the connection for those first).
	c.dec.SetMaxStringLength(2*s.cfg.MaxHeaderListSize + 64)
	c.w = fastpath.NewWriter(nc, sock, fastpath.WriterConfig{Stall: s.cfg.FrameTimeout, OnFail: c.closeStreams, Late: s.inline})
	c.values = fastpath.WithHolder(context.Background(), &c.burst)
	c.reading = s.inline.NewReader(func() { go c.readAndClose() })
	c.abuse.init(s.cfg.MaxConcurrentStreams)
	return c
}

// serve runs the connection once the client's preface was read: our
// SETTINGS, then the frames until the connection ends.
func (c *conn) serve() {
	fb := c.s.frames.get()
	settings := []http2.Setting{
		{ID: http2.SettingMaxConcurrentStreams, Val: uint32(c.s.cfg.MaxConcurrentStreams)},
		{ID: http2.SettingMaxHeaderListSize, Val: uint32(c.s.cfg.MaxHeaderListSize)},
	}
	if c.s.cfg.StreamWindow != 65535 {
		settings = append(settings, http2.Setting{ID: http2.SettingInitialWindowSize, Val: uint32(c.s.cfg.StreamWindow)})
	}
	_ = fb.fr.WriteSettings(settings...)
	fb.windowUpdate(0, connWindow-65535)
	_ = c.w.Write(fastpath.Try, fb.b)
	c.s.frames.put(fb)
	c.readAndClose()
}

// readAndClose reads until the connection ends, then closes it; a reader
// that handed the reading over returns at once and leaves that to its
// successor.
func (c *conn) readAndClose() {
	err := c.read()
	c.burst.Flush()
	if err == errHandedOver {
		return
	}
	var ce connError
	switch {
	case errors.Is(err, errIdle):
		c.goAway(http2.ErrCodeNo, "")
		c.w.CloseAfterFlush()
		err = nil
	case errors.As(err, &ce):
		c.goAway(ce.code, ce.reason)
		c.w.CloseAfterFlush()
	default:
		c.w.Fail(err)
	}
	c.closeStreams()
	c.reading.Close()
	c.s.removeConn(c)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, fastpath.ErrClosed) {
		c.s.log.Info("triple connection closed", "remote", c.peer.String(), "err", err)
	}
}

// read handles frames until the connection fails or a handler's run
// handed the reading over.
func (c *conn) read() error {
	for {
		if c.frames++; c.frames%yieldEvery == 0 {
			// A client that keeps the buffer full would hold a core
			// for whole scheduler slices while other readers wait. (A
			// reader that waits for bytes now and then yields anyway:
			// frames counts from its last wait.)
			runtime.Gosched()
		}
		if err := c.awaitFrame(); err != nil {
			return c.readError(err)
		}
		f, err := c.fr.ReadFrame()
		if err != nil {
			if err = c.readError(err); err != nil {
				return err
			}
			continue
		}
		more := c.frameBuffered()
		if more {
			c.burst.Set(true)
		}
		reader, err := c.handle(f)
		if err != nil {
			return err
		}
		if !reader {
			return errHandedOver
		}
		// Asked again: handling a HEADERS frame reads its CONTINUATION
		// frames, which may have been all that was buffered.
		if !more || !c.frameBuffered() {
			c.burst.Flush()
			c.flushLate()
		}
	}
}

// flushLate writes the PING acks held back for a call's answer when no
// call is running to carry them.
func (c *conn) flushLate() {
	if !c.w.HasLate() {
		return
	}
	c.mu.Lock()
	busy := c.running > 0
	c.mu.Unlock()
	if !busy {
		c.w.FlushLate()
	}
}

// readError turns an error of the frame decoder into the connection's
// end, or answers a stream error with RST_STREAM and reads on.
func (c *conn) readError(err error) error {
	var se http2.StreamError
	var ce http2.ConnectionError
	switch {
	case errors.As(err, &se):
		c.resetStream(se.StreamID, se.Code)
		return nil
	case errors.As(err, &ce):
		reason := "malformed frame"
		if d := c.fr.ErrorDetail(); d != nil {
			reason = d.Error()
		}
		return connError{http2.ErrCode(ce), reason}
	case errors.Is(err, http2.ErrFrameTooLarge):
		return connError{http2.ErrCodeFrameSize, "frame larger than SETTINGS_MAX_FRAME_SIZE"}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		if c.br.Buffered() > 0 {
			return fmt.Errorf("frame from %s incomplete after %v (triple frame timeout): %w", c.peer, c.s.cfg.FrameTimeout, err)
		}
		return errIdle
	}
	return err
}

// frameBuffered says whether a whole frame is buffered.
func (c *conn) frameBuffered() bool {
	if c.br.Buffered() < 9 {
		return false
	}
	h, _ := c.br.Peek(9)
	return c.br.Buffered() >= 9+int(h[0])<<16|int(h[1])<<8|int(h[2])
}

// awaitFrame returns once the next frame has begun to arrive, with the
// read deadline its state calls for: none while calls are in progress
// (their own timers watch them), IdleTimeout on an idle connection,
// FrameTimeout for a frame that has begun. While the client leaves more
// than maxUnsent bytes unread, it reads nothing.
func (c *conn) awaitFrame() error {
	if c.w.Unsent() > maxUnsent {
		c.burst.Flush()
		if err := c.w.WaitUnsent(maxUnsent); err != nil {
			// Not wrapped: the write's timeout is not the read's.
			return fmt.Errorf("client %s does not read its answers: %v", c.peer, err)
		}
	}
	if c.frameBuffered() {
		return nil
	}
	if c.br.Buffered() == 0 {
		var deadline time.Time
		c.mu.Lock()
		idle := c.running == 0 && len(c.streams) == 0
		c.mu.Unlock()
		switch {
		case !c.settled: // the preface's SETTINGS is a frame begun
			deadline = time.Now().Add(c.s.cfg.FrameTimeout)
		case idle:
			deadline = time.Now().Add(c.s.cfg.IdleTimeout)
		}
		if err := c.setDeadline(deadline); err != nil {
			return err
		}
		c.frames = 0
		if _, err := c.br.Peek(1); err != nil {
			return err
		}
		if c.frameBuffered() {
			return nil
		}
	}
	return c.setDeadline(time.Now().Add(c.s.cfg.FrameTimeout))
}

// setDeadline sets the read deadline, skipping the call when nothing
// changes (no deadline, still none) or the idle deadline moves by less
// than a second.
func (c *conn) setDeadline(d time.Time) error {
	if d.IsZero() == c.deadline.IsZero() && (d.IsZero() || d.Sub(c.deadline) < time.Second && !d.Before(c.deadline)) {
		return nil
	}
	c.deadline = d
	return c.nc.SetReadDeadline(d)
}

// handle handles one frame; reader is false once the reading was handed
// over to another goroutine.
func (c *conn) handle(f http2.Frame) (reader bool, err error) {
	if !c.settled {
		sf, ok := f.(*http2.SettingsFrame)
		if !ok || sf.IsAck() {
			return true, connError{http2.ErrCodeProtocol, "the client preface must end with SETTINGS"}
		}
		c.settled = true
	}
	switch f := f.(type) {
	case *http2.HeadersFrame:
		return c.onHeaders(f)
	case *http2.DataFrame:
		return c.onData(f)
	case *http2.SettingsFrame:
		return true, c.onSettings(f)
	case *http2.PingFrame:
		return true, c.onPing(f)
	case *http2.WindowUpdateFrame:
		return true, c.onWindowUpdate(f)
	case *http2.RSTStreamFrame:
		return true, c.onReset(f)
	case *http2.GoAwayFrame:
		// The client opens no more streams; the ones open finish.
		return true, nil
	case *http2.PushPromiseFrame:
		return true, connError{http2.ErrCodeProtocol, "PUSH_PROMISE from a client"}
	default: // PRIORITY, unknown types: ignored, but not for free
		return true, c.abuse.idleFrame(c.sent.Load())
	}
}

// write hands frames the reader made to the writer: held for the burst
// if one is on, else written now as far as the socket takes them.
func (c *conn) write(b []byte) {
	mode := fastpath.Try
	if c.burst.Hold(c.w) {
		mode = fastpath.Hold
	}
	_ = c.w.Write(mode, b) // a failed writer ends the reader too
}

// control writes one frame the reader makes.
func (c *conn) control(encode func(fb *frameBuf)) {
	fb := c.s.frames.get()
	encode(fb)
	c.write(fb.b)
	c.s.frames.put(fb)
}

func (c *conn) onSettings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		c.acked = true
		return nil
	}
	if err := c.abuse.idleFrame(c.sent.Load()); err != nil {
		return err
	}
	err := f.ForeachSetting(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			var ce http2.ConnectionError
			if errors.As(err, &ce) {
				return connError{http2.ErrCode(ce), fmt.Sprintf("invalid setting %v", s)}
			}
			return err
		}
		switch s.ID {
		case http2.SettingMaxFrameSize:
			c.maxFrame.Store(int32(s.Val))
		case http2.SettingInitialWindowSize:
			return c.setInitialWindow(int64(s.Val))
		}
		// The header table size concerns an encoder that never indexes;
		// push and the concurrency of server streams, a server that opens
		// none.
		return nil
	})
	if err != nil {
		return err
	}
	c.control(func(fb *frameBuf) { _ = fb.fr.WriteSettingsAck() })
	return nil
}

// setInitialWindow applies a new SETTINGS_INITIAL_WINDOW_SIZE to every
// stream's send window (RFC 9113 §6.9.2: they may go negative).
func (c *conn) setInitialWindow(v int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delta := v - c.initWindow
	c.initWindow = v
	for _, s := range c.streams {
		s.sendWindow += delta
		if s.sendWindow > maxWindow {
			return connError{http2.ErrCodeFlowControl, "SETTINGS_INITIAL_WINDOW_SIZE overflows a stream's window"}
		}
	}
	if delta > 0 {
		c.wakeBlockedLocked()
	}
	return nil
}

func (c *conn) onPing(f *http2.PingFrame) error {
	if f.IsAck() {
		return nil
	}
	if err := c.abuse.idleFrame(c.sent.Load()); err != nil {
		return err
	}
	// Late: the ack goes behind the next answer, or at the burst's end
	// when no call runs (flushLate), or after slowInline (the watchdog);
	// see "PING" in doc.go.
	fb := c.s.frames.get()
	_ = fb.fr.WritePing(true, f.Data)
	_ = c.w.Late(fb.b) // a failed writer ends the reader too
	c.s.frames.put(fb)
	return nil
}

func (c *conn) onWindowUpdate(f *http2.WindowUpdateFrame) error {
	inc := int64(f.Increment)
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.StreamID == 0 {
		if c.sendWindow+inc > maxWindow {
			return connError{http2.ErrCodeFlowControl, "WINDOW_UPDATE overflows the connection window"}
		}
		c.sendWindow += inc
		c.blockedAt = time.Time{}
		c.wakeBlockedLocked()
		return nil
	}
	s := c.streams[f.StreamID]
	if s == nil {
		if f.StreamID > c.maxStreamID {
			return connError{http2.ErrCodeProtocol, "WINDOW_UPDATE on an idle stream"}
		}
		return nil // closed meanwhile
	}
	if s.sendWindow+inc > maxWindow {
		c.resetLocked(s, http2.ErrCodeFlowControl)
		return nil
	}
	s.sendWindow += inc
	s.wake()
	return nil
}

// wakeBlockedLocked wakes every sender waiting for window. c.mu is held.
func (c *conn) wakeBlockedLocked() {
	for s := range c.blocked {
		s.wake()
	}
}

func (c *conn) onReset(f *http2.RSTStreamFrame) error {
	if f.StreamID > c.maxStreamID {
		return connError{http2.ErrCodeProtocol, "RST_STREAM on an idle stream"}
	}
	c.mu.Lock()
	s := c.streams[f.StreamID]
	if s == nil {
		c.mu.Unlock()
		return nil
	}
	c.closeLocked(s)
	if s.running {
		s.orphan = true
		c.orphans++
	}
	orphans := c.orphans
	c.mu.Unlock()
	s.end(Errorf(Canceled, "the client canceled the call"))
	// HTTP/2 rapid reset (CVE-2023-44487): streams the client opens and
	// resets at once cost us handler work, not the client. Handlers
	// still running for reset streams beyond MaxConcurrentStreams, as
	// x/net bounds them, or most streams reset early, as Envoy judges
	// it, end the connection.
	if orphans > c.s.cfg.MaxConcurrentStreams {
		return connError{http2.ErrCodeEnhanceYourCalm, "too many handlers running for reset streams"}
	}
	return c.abuse.reset()
}

// resetStream answers a stream error with RST_STREAM.
func (c *conn) resetStream(id uint32, code http2.ErrCode) {
	c.mu.Lock()
	s := c.streams[id]
	if s != nil {
		c.resetLocked(s, code)
		c.mu.Unlock()
		s.end(Errorf(Internal, "stream reset: %v", code))
		return
	}
	c.mu.Unlock()
	c.control(func(fb *frameBuf) { fb.rst(id, code) })
}

// resetLocked closes s with RST_STREAM. c.mu is held; the caller ends s
// (stream.end) once it released it.
func (c *conn) resetLocked(s *stream, code http2.ErrCode) {
	fb := c.s.frames.get()
	fb.rst(s.id, code)
	_ = c.w.Write(fastpath.Queue, fb.b)
	c.s.frames.put(fb)
	c.closeLocked(s) // after the write: it may close the Writer
}

// closeLocked removes s from the open streams; after a GOAWAY, the last
// one closes the connection once the Writer wrote what it has. c.mu is
// held.
func (c *conn) closeLocked(s *stream) {
	if s.closed {
		return
	}
	s.closed = true
	delete(c.streams, s.id)
	delete(c.blocked, s)
	s.wake()
	if s.reserved > 0 {
		c.large += s.reserved
		s.reserved = 0
		c.grantLargeLocked()
	}
	if c.goingAway && len(c.streams) == 0 && c.running == 0 {
		c.w.CloseAfterFlush()
	}
}

// handlerDone notes that s's handler returned (or replied). c.mu is held.
func (c *conn) handlerDoneLocked(s *stream) {
	if !s.running {
		return
	}
	s.running = false
	c.running--
	if s.orphan {
		c.orphans--
	}
	if c.goingAway && len(c.streams) == 0 && c.running == 0 {
		c.w.CloseAfterFlush()
	}
}

// goAway sends GOAWAY with the last stream the server will serve.
func (c *conn) goAway(code http2.ErrCode, reason string) {
	c.mu.Lock()
	c.goingAway = true
	last := c.maxStreamID
	idle := len(c.streams) == 0 && c.running == 0
	c.mu.Unlock()
	fb := c.s.frames.get()
	_ = fb.fr.WriteGoAway(last, code, []byte(reason))
	_ = c.w.Write(fastpath.Try, fb.b)
	c.s.frames.put(fb)
	if idle && code == http2.ErrCodeNo {
		c.w.CloseAfterFlush()
	}
}

// shutdown starts a graceful end: GOAWAY now, the connection closes once
// its calls are done.
func (c *conn) shutdown() { c.goAway(http2.ErrCodeNo, "") }

// closeStreams ends every stream: the connection is gone.
func (c *conn) closeStreams() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	var all []*stream
	for _, s := range c.streams {
		all = append(all, s)
		s.closed = true
		s.wake()
	}
	clear(c.streams)
	if c.sweepTimer != nil {
		c.sweepTimer.Stop()
	}
	c.mu.Unlock()
	for _, s := range all {
		s.end(Errorf(Unavailable, "connection closed"))
	}
}

// onHeaders reads a header block (with its CONTINUATION frames) and
// starts a call, answers it at once, or takes it as a request's
// trailers.
func (c *conn) onHeaders(f *http2.HeadersFrame) (bool, error) {
	id := f.StreamID
	if err := c.readBlock(f); err != nil {
		return true, err
	}
	if id%2 == 0 {
		return true, connError{http2.ErrCodeProtocol, "HEADERS on a server stream id"}
	}
	if id <= c.maxStreamID {
		return c.onTrailers(id, f.StreamEnded())
	}
	c.maxStreamID = id
	if c.hl.invalid != nil {
		c.answerEarly(id, malformed("%v", c.hl.invalid), f.StreamEnded())
		return true, nil
	}
	if c.hl.truncated {
		c.answerEarly(id, &earlyAnswer{http: http.StatusRequestHeaderFieldsTooLarge,
			status: Errorf(ResourceExhausted, "request headers larger than %d bytes (triple max header list size)", c.s.cfg.MaxHeaderListSize)}, f.StreamEnded())
		return true, nil
	}
	now := time.Now()
	s := &stream{}
	req, fail := parseRequest(c.hl.fields, now, s.mdBuf[:0])
	if fail != nil {
		c.answerEarly(id, fail, f.StreamEnded())
		return true, nil
	}
	req.call.Peer = c.peer
	s.init(c, id, req)
	// Route is not watched as Unary is: the stream it decides on is not
	// registered yet, and a reader handed over now would read its frames
	// before it is. It is a lookup; the contract says it must not block.
	m, st := c.route(&s.call)
	if st == nil {
		st = s.bind(m)
	}
	if st != nil {
		c.answerEarly(id, &earlyAnswer{http: http.StatusOK, status: st}, f.StreamEnded())
		return true, nil
	}
	c.mu.Lock()
	if c.goingAway || len(c.streams) >= c.s.cfg.MaxConcurrentStreams {
		goingAway := c.goingAway
		c.mu.Unlock()
		c.control(func(fb *frameBuf) { fb.rst(id, http2.ErrCodeRefusedStream) })
		if goingAway || !c.acked {
			return true, nil // a client that has not seen the limit yet is no abuser
		}
		return true, c.abuse.refused()
	}
	c.streams[id] = s
	s.sendWindow = c.initWindow
	if !s.call.Deadline.IsZero() {
		c.armSweepLocked(s.call.Deadline)
	}
	if s.unary != nil && !f.StreamEnded() {
		s.begin(now)
		c.armSweepLocked(now.Add(c.s.cfg.FrameTimeout))
	}
	if s.served != nil {
		s.running = true
		c.running++
		c.s.calls.Add(1)
	}
	c.mu.Unlock()
	c.abuse.opened()
	if s.served != nil {
		go s.serve()
	}
	if f.StreamEnded() {
		s.remoteEnded.Store(true)
		return c.endOfRequest(s)
	}
	return true, nil
}

// route asks the handler for the call's method; a panic is the handler's
// bug, answered with Internal.
func (c *conn) route(call *Call) (m Method, st *Status) {
	defer func() {
		if r := recover(); r != nil {
			c.s.log.Error("triple handler panicked in Route", "service", call.Service, "method", call.Method, "panic", r)
			m, st = nil, Errorf(Internal, "handler panicked routing %s/%s: %v", call.Service, call.Method, r)
		}
	}()
	return c.s.handler.Route(call)
}

// readBlock decodes a header block into c.hl, reading its CONTINUATION
// frames. A block far over MaxHeaderListSize, or in too many frames,
// ends the connection, as x/net's server does: decoding on would cost
// what the client does not pay for.
func (c *conn) readBlock(f *http2.HeadersFrame) error {
	c.hl.reset()
	frag, ended := f.HeaderBlockFragment(), f.HeadersEnded()
	for n := 0; ; n++ {
		if len(frag) > 2*c.hl.remain+64 || (c.hl.truncated && len(frag) > 0) || n > maxContinuations {
			return connError{http2.ErrCodeEnhanceYourCalm, "header block far over the limit, or in too many frames"}
		}
		if _, err := c.dec.Write(frag); err != nil {
			return connError{http2.ErrCodeCompression, err.Error()}
		}
		if ended {
			break
		}
		// A block that has begun must end within FrameTimeout.
		if err := c.setDeadline(time.Now().Add(c.s.cfg.FrameTimeout)); err != nil {
			return err
		}
		next, err := c.fr.ReadFrame()
		if err != nil {
			if rerr := c.readError(err); rerr != nil {
				return rerr
			}
			return connError{http2.ErrCodeProtocol, "stream error inside a header block"}
		}
		cf := next.(*http2.ContinuationFrame) // the Framer checks the order
		frag, ended = cf.HeaderBlockFragment(), cf.HeadersEnded()
	}
	if err := c.dec.Close(); err != nil {
		return connError{http2.ErrCodeCompression, err.Error()}
	}
	return nil
}

// onTrailers takes a HEADERS frame on a stream already open: a request's
// trailers, which must end the stream.
func (c *conn) onTrailers(id uint32, endStream bool) (bool, error) {
	c.mu.Lock()
	s := c.streams[id]
	c.mu.Unlock()
	if s == nil || s.remoteEnded.Load() {
		return true, nil // closed meanwhile, or ended: nothing to take
	}
	if !endStream {
		c.resetStream(id, http2.ErrCodeProtocol)
		return true, nil
	}
	s.remoteEnded.Store(true)
	return c.endOfRequest(s)
}

// answerEarly answers a request that never becomes a call.
func (c *conn) answerEarly(id uint32, a *earlyAnswer, endStream bool) {
	fb := c.s.frames.get()
	defer c.s.frames.put(fb)
	if a.rst != 0 {
		fb.rst(id, a.rst)
	} else {
		fb.startBlock()
		fb.field(":status", strconv.Itoa(a.http))
		fb.field("content-type", "application/grpc")
		if a.accept {
			fb.field("grpc-accept-encoding", "gzip")
		}
		fb.statusFields(a.status)
		fb.headers(id, fb.blockBytes(), true, int(c.maxFrame.Load()))
		if !endStream {
			fb.rst(id, http2.ErrCodeNo)
		}
		c.sent.Add(1)
	}
	c.write(fb.b)
}

// onData takes request bytes: flow control, then the stream's messages.
func (c *conn) onData(f *http2.DataFrame) (bool, error) {
	n := int64(f.Length) // padding included: it counts against the windows
	if n > 0 {
		// Streams bound what is buffered, so the connection's window
		// comes back as bytes arrive, in batches: it never runs out
		// (nor can the client overrun it) before a stream's does.
		c.recvUnacked += n
		if c.recvUnacked >= connWindow/4 {
			inc := uint32(c.recvUnacked)
			c.recvUnacked = 0
			c.control(func(fb *frameBuf) { fb.windowUpdate(0, inc) })
		}
	}
	id := f.StreamID
	c.mu.Lock()
	s := c.streams[id]
	c.mu.Unlock()
	if s == nil {
		if id > c.maxStreamID {
			return true, connError{http2.ErrCodeProtocol, "DATA on an idle stream"}
		}
		if n == 0 && !f.StreamEnded() {
			return true, c.abuse.idleFrame(c.sent.Load())
		}
		return true, nil // a stream we closed: its bytes are dropped
	}
	if s.remoteEnded.Load() {
		c.resetStream(id, http2.ErrCodeStreamClosed)
		return true, nil
	}
	if n > s.window.Load() {
		c.resetStream(id, http2.ErrCodeFlowControl)
		return true, nil
	}
	s.window.Add(-n)
	if pad := n - int64(len(f.Data())); pad > 0 {
		s.grant(pad)
	}
	if n == 0 && !f.StreamEnded() {
		if err := c.abuse.idleFrame(c.sent.Load()); err != nil {
			return true, err
		}
	}
	if f.StreamEnded() {
		s.remoteEnded.Store(true)
	}
	if reader := s.take(f.Data()); !reader {
		return false, nil
	}
	if f.StreamEnded() {
		return c.endOfRequest(s)
	}
	return true, nil
}

// endOfRequest handles the client's END_STREAM.
func (c *conn) endOfRequest(s *stream) (bool, error) {
	if s.partial() {
		s.fail(Errorf(Internal, "the request ended inside a message"))
		return true, nil
	}
	if s.unary != nil {
		if s.delivered == 0 {
			s.fail(Errorf(Internal, "a unary call needs one request message, got none"))
		}
		return true, nil
	}
	s.queueEOF()
	return true, nil
}

// armSweepLocked makes sure the sweep runs by due. c.mu is held.
func (c *conn) armSweepLocked(due time.Time) {
	if c.closed || !c.sweepDue.IsZero() && !due.Before(c.sweepDue) {
		return
	}
	c.sweepDue = due
	d := time.Until(due)
	if c.sweepTimer == nil {
		c.sweepTimer = time.AfterFunc(d, c.sweep)
		return
	}
	c.sweepTimer.Reset(d)
}

// sweep answers the calls whose deadline passed with DeadlineExceeded,
// and those whose request (or streaming message) did not arrive within
// FrameTimeout; it closes the connection when the client kept its window
// shut on waiting responses for FrameTimeout. It runs on a timer, at the
// earliest time something may be due.
func (c *conn) sweep() {
	now := time.Now()
	var expired, stalled []*stream
	var next time.Time
	due := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.sweepDue = time.Time{}
	for _, s := range c.streams {
		if dl := s.call.Deadline; !dl.IsZero() {
			if !now.Before(dl) {
				expired = append(expired, s)
				continue
			}
			due(dl)
		}
		if b := s.begun.Load(); b != 0 {
			end := time.Unix(0, b).Add(c.s.cfg.FrameTimeout)
			if !now.Before(end) {
				stalled = append(stalled, s)
				continue
			}
			due(end)
		}
	}
	shut := !c.blockedAt.IsZero() && now.Sub(c.blockedAt) >= c.s.cfg.FrameTimeout
	if !c.blockedAt.IsZero() && !shut {
		due(c.blockedAt.Add(c.s.cfg.FrameTimeout))
	}
	if !next.IsZero() {
		c.armSweepLocked(next)
	}
	c.mu.Unlock()
	if shut {
		c.s.log.Info("triple connection closed: the client kept its flow-control window shut", "remote", c.peer.String(), "for", c.s.cfg.FrameTimeout)
		// Not a flow-control error: the client may keep its window
		// shut, but not hold our responses for ever.
		c.goAway(http2.ErrCodeNo, "flow-control window shut for too long")
		c.w.Fail(fmt.Errorf("client window shut for %v", c.s.cfg.FrameTimeout))
		return
	}
	for _, s := range expired {
		s.fail(Errorf(DeadlineExceeded, "deadline exceeded"))
	}
	for _, s := range stalled {
		s.fail(Errorf(DeadlineExceeded, "request incomplete after %v (triple frame timeout)", c.s.cfg.FrameTimeout))
	}
}
