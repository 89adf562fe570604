package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/internal/fastpath"
	"github.com/dubbo-lab/dubbo/internal/sockio"
	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

var errClientClosed = errors.New("client closed")

// slot is one of the client's long connections across reconnects. Its
// supervisor goroutine dials, runs the heartbeat timer while the connection
// is up, and redials with backoff when it breaks.
type slot struct {
	c   *Client
	cur atomic.Pointer[clientConn] // nil while down

	mu  sync.Mutex
	err error // why the last dial or connection failed
}

func (s *slot) lastErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *slot) setErr(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

func (s *slot) supervise(ctx context.Context) {
	defer s.c.wg.Done()
	cfg := &s.c.cfg
	backoff := cfg.ReconnectMin
	for ctx.Err() == nil {
		cc, err := s.dial(ctx)
		if err == nil {
			start := time.Now()
			s.run(ctx, cc)
			// A connection that lived a while earns an immediate redial; one
			// the provider drops at once must not make us spin.
			if time.Since(start) > cfg.ReconnectMax {
				backoff = cfg.ReconnectMin
				continue
			}
		} else {
			s.setErr(err)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		backoff = min(2*backoff, cfg.ReconnectMax)
	}
}

func (s *slot) dial(ctx context.Context) (*clientConn, error) {
	d := net.Dialer{Timeout: s.c.cfg.ConnectTimeout}
	conn, err := d.DialContext(ctx, "tcp", s.c.addr)
	if err != nil {
		return nil, err
	}
	cc := newClientConn(s.c, conn)
	cc.slot = s
	return cc, nil
}

// run serves one connection until it breaks or ctx ends.
func (s *slot) run(ctx context.Context, cc *clientConn) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		cc.w.Run()
	}()
	go func() {
		defer wg.Done()
		cc.shutdown(cc.read())
	}()
	s.cur.Store(cc)
	s.c.stateChanged()

	hb := s.c.cfg.Heartbeat
	tick := time.NewTicker(max(hb/3, time.Millisecond))
	defer tick.Stop()
	// The liveness watch ticks only while calls are outstanding or a probe
	// is unanswered; an idle connection costs no wakeups.
	step := max(s.c.cfg.Liveness/4, time.Millisecond)
	live := time.NewTimer(step)
	defer live.Stop()
	if s.c.cfg.Liveness <= 0 {
		live.Stop()
	}
loop:
	for {
		select {
		case <-cc.done:
			break loop
		case <-ctx.Done():
			cc.shutdown(errClientClosed)
			break loop
		case now := <-tick.C:
			cc.heartbeat(now)
		case <-cc.wake:
			live.Reset(step)
		case <-live.C:
			if cc.checkLiveness() {
				live.Reset(step)
				continue
			}
			// Park the watch; a call or probe from now on wakes it. Checking
			// again after parking closes the race with one just sent.
			cc.watchParked.Store(true)
			if cc.pendingCount() > 0 && cc.watchParked.CompareAndSwap(true, false) {
				live.Reset(step)
			}
		}
	}
	wg.Wait()
	s.setErr(cc.err)
	s.cur.CompareAndSwap(cc, nil)
	s.c.stateChanged()
}

// clientConn is one live connection: read is its reader goroutine, w its
// writer, pending the calls waiting for responses.
type clientConn struct {
	c        *Client
	slot     *slot
	conn     net.Conn
	addr     string
	w        *fastpath.Writer
	sock     *sockio.Conn
	readOnly atomic.Bool  // the provider sent the read-only event
	lastRead atomic.Int64 // fastpath.MonoNow of the last frame read
	done     chan struct{}

	// Liveness watch (ClientConfig.Liveness), all fastpath.MonoNow stamps.
	awaitSince  atomic.Int64 // first two-way request sent after lastRead
	probeAt     atomic.Int64 // last probe heartbeat; unanswered while > lastRead
	frozen      atomic.Bool  // a probe went unanswered: not Available
	watchParked atomic.Bool  // the supervisor's liveness timer is stopped
	wake        chan struct{}

	mu      sync.Mutex
	pending map[int64]*call
	closed  bool
	err     error
}

func newClientConn(c *Client, conn net.Conn) *clientConn {
	sock := sockio.New(conn)
	cc := &clientConn{
		c:       c,
		conn:    conn,
		addr:    c.addr,
		sock:    sock,
		w:       newWriter(conn, sock, c.cfg.HeartbeatTimeout, nil),
		done:    make(chan struct{}),
		wake:    make(chan struct{}, 1),
		pending: make(map[int64]*call),
	}
	cc.lastRead.Store(fastpath.MonoNow())
	return cc
}

// usable: open to new calls as far as the client can tell.
func (cc *clientConn) usable() bool { return !cc.readOnly.Load() && !cc.frozen.Load() }

// sending stamps a two-way request about to be written and returns its
// send time; the liveness watch times silence from the first request
// after the last read.
func (cc *clientConn) sending() int64 {
	now := fastpath.MonoNow()
	if cc.awaitSince.Load() <= cc.lastRead.Load() {
		cc.awaitSince.Store(now)
	}
	cc.wakeWatch()
	return now
}

// wakeWatch restarts the supervisor's liveness timer if it is parked.
func (cc *clientConn) wakeWatch() {
	if cc.c.cfg.Liveness > 0 && cc.watchParked.Load() && cc.watchParked.CompareAndSwap(true, false) {
		select {
		case cc.wake <- struct{}{}:
		default:
		}
	}
}

// probe sends a heartbeat unless one is already unanswered. The
// supervisor marks the connection frozen if it stays unanswered.
func (cc *clientConn) probe() {
	p := cc.probeAt.Load()
	if p > cc.lastRead.Load() || !cc.probeAt.CompareAndSwap(p, fastpath.MonoNow()) {
		return
	}
	cc.sendRequest(protocol.Heartbeat(cc.c.nextID.Add(1)))
	if cc.c.cfg.Liveness <= 0 { // no watch to judge the answer: judge now
		cc.freeze(cc.probeAt.Load())
		return
	}
	cc.wakeWatch()
}

// checkLiveness runs on the supervisor's liveness timer and reports whether
// to keep watching. Silence for Liveness after a request sends a probe;
// silence for Liveness/2 after the probe freezes the connection. The
// reader thaws it on any frame.
func (cc *clientConn) checkLiveness() bool {
	now, w := fastpath.MonoNow(), int64(cc.c.cfg.Liveness)
	lastRead := cc.lastRead.Load()
	if p := cc.probeAt.Load(); p > lastRead {
		if now-p >= w/2 {
			cc.freeze(p)
		}
		return true
	}
	if cc.pendingCount() == 0 {
		return false
	}
	if s := cc.awaitSince.Load(); s > lastRead && now-s >= w {
		cc.probe()
	}
	return true
}

// freeze marks the connection frozen for want of an answer to the probe
// sent at probed.
func (cc *clientConn) freeze(probed int64) {
	if !cc.frozen.CompareAndSwap(false, true) {
		return
	}
	cc.c.log.Warn("provider silent with calls outstanding; unavailable until it answers",
		"silent_for", time.Duration(fastpath.MonoNow()-cc.lastRead.Load()).Round(time.Millisecond))
	cc.c.stateChanged()
	// A frame read while we decided would find frozen still unset.
	if cc.lastRead.Load() > probed {
		cc.thaw()
	}
}

// thaw runs in the reader when a frame arrives on a frozen connection.
func (cc *clientConn) thaw() {
	if cc.frozen.CompareAndSwap(true, false) {
		cc.c.log.Info("provider answers again")
		cc.c.stateChanged()
	}
}

func (cc *clientConn) register(id int64, cl *call) error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.closed {
		return cc.err
	}
	cc.pending[id] = cl
	return nil
}

// unregister removes cl if it is still pending and reports whether it did.
func (cc *clientConn) unregister(id int64, cl *call) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.pending[id] != cl {
		return false
	}
	delete(cc.pending, id)
	return true
}

func (cc *clientConn) take(id int64) *call {
	cc.mu.Lock()
	cl := cc.pending[id]
	if cl != nil {
		delete(cc.pending, id)
	}
	cc.mu.Unlock()
	return cl
}

func (cc *clientConn) pendingCount() int {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return len(cc.pending)
}

// shutdown closes the connection, marks the client unavailable and fails
// every pending call at once instead of leaving them to their timeouts.
func (cc *clientConn) shutdown(err error) {
	if err == nil || errors.Is(err, io.EOF) {
		err = errors.New("provider closed the connection")
	}
	cc.mu.Lock()
	if cc.closed {
		cc.mu.Unlock()
		return
	}
	cc.closed = true
	cc.err = err
	pending := cc.pending
	cc.pending = nil
	cc.mu.Unlock()

	cc.w.Fail(err)
	cc.slot.cur.CompareAndSwap(cc, nil)
	cc.c.stateChanged()
	for id, cl := range pending {
		cl.complete(nil, &rpc.CallError{Kind: rpc.ErrConnection, Address: cc.addr,
			Detail: fmt.Sprintf("connection lost while waiting for response %d: %v", id, err)})
	}
	close(cc.done)
	if !errors.Is(err, net.ErrClosed) && err != errClientClosed {
		cc.c.log.Info("connection to provider closed", "err", err)
	}
}

// heartbeat runs on the supervisor's tick: ping a quiet connection, drop a
// silent one (the reader then fails its calls and the slot redials).
func (cc *clientConn) heartbeat(now time.Time) {
	cfg := &cc.c.cfg
	mono := fastpath.Mono(now)
	sinceRead := time.Duration(mono - cc.lastRead.Load())
	if sinceRead > cfg.HeartbeatTimeout {
		cc.shutdown(fmt.Errorf("nothing read for %v (heartbeat timeout %v)", sinceRead.Round(time.Millisecond), cfg.HeartbeatTimeout))
		return
	}
	sinceWrite := cc.w.SinceWrite()
	if sinceRead >= cfg.Heartbeat || sinceWrite >= cfg.Heartbeat {
		cc.sendRequest(protocol.Heartbeat(cc.c.nextID.Add(1)))
	}
}

func (cc *clientConn) sendRequest(req *protocol.Request) {
	enc := cc.c.encoders.get()
	defer cc.c.encoders.put(enc)
	var err error
	if enc.buf, err = enc.AppendRequest(enc.buf[:0], req); err == nil {
		_ = cc.w.Write(fastpath.Queue, enc.buf)
	}
}

func (cc *clientConn) sendResponse(resp *protocol.Response) {
	enc := cc.c.encoders.get()
	defer cc.c.encoders.put(enc)
	var err error
	if enc.buf, err = enc.AppendResponse(enc.buf[:0], resp); err == nil {
		_ = cc.w.Write(fastpath.Queue, enc.buf)
	}
}

// read matches responses to pending calls and answers the provider's
// events until the connection fails.
func (cc *clientConn) read() error {
	dec := protocol.NewDecoder(bufio.NewReaderSize(cc.sock, 16<<10), cc.c.cfg.Payload)
	for {
		h, err := dec.ReadHeader()
		if err != nil && !errors.Is(err, protocol.ErrPayloadTooLarge) {
			return err
		}
		cc.lastRead.Store(fastpath.MonoNow())
		if cc.frozen.Load() {
			cc.thaw()
		}
		if err != nil { // too large: Java fabricates CLIENT_ERROR (90)
			if serr := dec.SkipBody(h); serr != nil {
				return serr
			}
			if h.Request {
				continue
			}
			if cl := cc.take(h.ID); cl != nil {
				cl.complete(nil, &rpc.CallError{Kind: rpc.ErrBadRequest, Address: cc.addr, Detail: "CLIENT_ERROR: " + err.Error()})
			}
			continue
		}
		body, err := dec.ReadBody(h)
		if err != nil {
			return err
		}
		f := protocol.Frame{Header: h, Body: body}
		if h.Request {
			cc.event(dec, f)
			continue
		}
		if h.Event {
			continue // heartbeat response: lastRead is all it is for
		}
		cl := cc.take(h.ID)
		if cl == nil {
			continue // its caller gave up
		}
		resp, err := dec.DecodeResponse(f)
		if err != nil {
			cl.complete(nil, &rpc.CallError{Kind: rpc.ErrBadRequest, Address: cc.addr, Detail: "CLIENT_ERROR: cannot decode response: " + err.Error()})
			continue
		}
		cl.complete(resp, nil)
	}
}

// event handles requests from the provider: heartbeats (dubbo-go sends
// them from providers too) and the read-only/writable events.
func (cc *clientConn) event(dec *protocol.Decoder, f protocol.Frame) {
	req, err := dec.DecodeRequest(f)
	if err != nil || !req.Event {
		return // providers send consumers nothing else
	}
	switch {
	case req.IsHeartbeat():
		if req.TwoWay {
			cc.sendResponse(protocol.ResponseTo(req))
		}
	case req.EventData == protocol.EventReadOnly:
		cc.readOnly.Store(true)
		cc.c.stateChanged()
	case req.EventData == protocol.EventWritable:
		cc.readOnly.Store(false)
		cc.c.stateChanged()
	}
}
