package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/internal/callctx"
	"github.com/dubbo-lab/dubbo/internal/sockio"
	"github.com/dubbo-lab/dubbo/internal/watchdog"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// A Link is one end of the socket pair between the node and a plugin. It
// carries calls both ways (the node's calls to the plugin's handlers, and
// the handlers' calls to other services through the node), many at once,
// each frame tagged with a request id its caller picks:
//
//	length (4 bytes, big-endian) then one of
//	'c' id timeout call   a call; timeout is the µs left (0: none), call as
//	                      EncodeCall
//	'x' id                the caller gave up: cancel the call
//	'r' id reply          the reply to the receiver's call id, as EncodeReply
//
// id and timeout are uvarints. A socket rather than a gRPC stream: the gRPC
// stream cost a goroutine hand-off to its writer and one to its reader on
// each side, and kept under a third of the in-process throughput.
const (
	frameCall   = 'c'
	frameCancel = 'x'
	frameReply  = 'r'
)

var (
	// ErrLinkDown is wrapped by the errors of calls on a link that ended:
	// the other process closed it or died.
	ErrLinkDown = errors.New("the link to the other process is down")
	// ErrTooBig is the error of a call larger than a link carries.
	ErrTooBig = errors.New("too large for the plugin link")
)

// maxFramed is the largest call or reply a frame carries: above Dubbo's
// default 8 MiB payload, so anything the node accepted can cross, but not
// unbounded.
const maxFramed = 16 << 20

// frameOverhead is the most a frame adds to its call or reply.
const frameOverhead = 4 + 1 + 2*binary.MaxVarintLen64

// maxQueued bounds the bytes waiting for a peer that stopped reading; past
// it the link is given up rather than grown without limit.
const maxQueued = 64 << 20

// Link is safe for concurrent use.
type Link struct {
	conn net.Conn
	inv  Invoker // serves the other side's calls; nil refuses them

	done chan struct{} // closed when the link ended; err says why

	mu       sync.Mutex
	pending  map[uint64]pendingCall // our calls waiting for replies
	nextID   uint64
	err      error
	closed   bool // Close was called
	sweeping bool // a sweep is due (sweepEvery)

	// Writes that completing our calls causes (responses to consumers),
	// held while the reader has more replies buffered.
	replies callctx.Burst

	// The inline call running, for the watchdog (handOverSlow).
	here  atomic.Pointer[handover]
	watch *watchdog.Watchdog

	// The other side's calls: they run on workers that live on (a handler
	// may block), so the stacks the hessian decoder grew are kept.
	serveCtx context.Context
	stop     context.CancelFunc
	cmu      sync.Mutex
	cancels  map[uint64]context.CancelFunc
	work     chan func() // to an idle worker

	// Frames are appended to wbuf; whoever finds no write in progress
	// writes what the socket takes at once, while the others only append;
	// what it does not take, the writer goroutine writes. Nobody sending a
	// frame waits on the other side reading (the node's sender is a
	// consumer connection's reader). Under load one write carries many
	// frames.
	sock    *sockio.Conn
	wake    chan struct{} // capacity 1: the writer goroutine has work
	wmu     sync.Mutex
	wbuf    []byte
	spare   []byte
	writing bool
	held    bool // frames wait in wbuf for FlushHeld
	werr    error
}

// NewLink makes a link over conn; Start starts it.
func NewLink(conn net.Conn) *Link {
	ctx, stop := context.WithCancel(context.Background())
	return &Link{
		conn: conn, done: make(chan struct{}),
		sock: sockio.New(conn), wake: make(chan struct{}, 1),
		pending:  make(map[uint64]pendingCall),
		serveCtx: ctx, stop: stop,
		cancels: make(map[uint64]context.CancelFunc),
		work:    make(chan func()),
	}
}

// Start starts reading: calls from the other side go to inv (nil refuses
// them). Call it once.
func (l *Link) Start(inv Invoker) {
	l.inv = inv
	l.watch = watchdog.Start(inlineStall, watchIdle, l.handOverSlow)
	go l.read()
	go l.writeRest()
}

// read is the link's reader: one goroutine at a time reads, and never
// waits on a handler other than an inline one.
func (l *Link) read() { l.readFrom(bufio.NewReaderSize(l.sock, 64<<10)) }

// errHandedOver ends a reader whose inline call started another one.
var errHandedOver = errors.New("another goroutine reads the link now")

// readFrom handles frames from r until the link fails, or until an inline
// call handed the reading on.
func (l *Link) readFrom(r *bufio.Reader) {
	err := l.readFrames(r)
	if err == errHandedOver {
		return // the new reader has the held replies too
	}
	l.replies.Flush()
	l.conn.Close()
	l.stop()
	l.mu.Lock()
	switch {
	case l.closed:
		err = fmt.Errorf("%w: closed", ErrLinkDown)
	case errors.Is(err, io.EOF):
		err = fmt.Errorf("%w: the other side closed it", ErrLinkDown)
	default:
		err = fmt.Errorf("%w: %w", ErrLinkDown, err)
	}
	l.err = err
	pending := l.pending
	l.pending = nil
	l.mu.Unlock()
	close(l.work) // idle workers end; busy ones after their call
	close(l.done)
	l.watch.Stop()
	for _, p := range pending {
		p.done(nil, err)
	}
}

func (l *Link) readFrames(r *bufio.Reader) error {
	var head [4]byte
	for {
		if !frameBuffered(r) {
			// The burst is over: write the replies held back, ours and
			// those of the calls completed in it.
			l.FlushHeld()
			l.replies.Flush()
		}
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(head[:])
		if n > maxFramed+frameOverhead {
			return fmt.Errorf("%w: a %d-byte frame, more than the %d a link carries", ErrCorrupt, n, maxFramed+frameOverhead)
		}
		frame := make([]byte, n)
		if _, err := io.ReadFull(r, frame); err != nil {
			return err
		}
		kind, id, rest, err := parseFrame(frame)
		if err != nil {
			return fmt.Errorf("%w: bad frame: %v", ErrCorrupt, err)
		}
		switch kind {
		case frameReply:
			l.mu.Lock()
			p, ok := l.pending[id]
			delete(l.pending, id)
			l.mu.Unlock()
			if ok {
				l.replies.Set(frameBuffered(r))
				p.complete(l, rest)
			}
		case frameCancel:
			l.cmu.Lock()
			cancel := l.cancels[id]
			l.cmu.Unlock()
			if cancel != nil {
				cancel()
			}
		case frameCall:
			timeout, n := binary.Uvarint(rest)
			if n <= 0 {
				return fmt.Errorf("%w: bad call timeout", ErrCorrupt)
			}
			if !l.serve(r, id, time.Duration(min(timeout, 1<<40))*time.Microsecond, rest[n:]) {
				return errHandedOver
			}
		default:
			return fmt.Errorf("%w: unknown frame kind %q", ErrCorrupt, kind)
		}
	}
}

// serve runs one call of the other side, inline or on a worker; it says
// whether this goroutine is still the reader.
func (l *Link) serve(r *bufio.Reader, id uint64, timeout time.Duration, call []byte) (reader bool) {
	run, inline := refuse, false
	if l.inv != nil {
		run, inline = l.inv.Prepare(call)
	}
	var ctx context.Context
	var release func()
	if timeout > 0 {
		cc := callctx.New(l.serveCtx, time.Now().Add(timeout))
		ctx, release = cc, cc.Release
	} else {
		ctx, release = context.WithCancel(l.serveCtx)
	}
	l.cmu.Lock()
	l.cancels[id] = release
	l.cmu.Unlock()
	answer := func(ctx context.Context) []byte {
		reply := run(ctx)
		l.cmu.Lock()
		delete(l.cancels, id)
		l.cmu.Unlock()
		release()
		if len(reply) > maxFramed {
			reply = ErrorReply(&rpc.CallError{Kind: rpc.ErrProvider,
				Detail: fmt.Sprintf("the reply is %d bytes, more than the %d a plugin reply may have", len(reply), maxFramed)})
		}
		return reply
	}
	if inline {
		h := &handover{l: l, r: r, since: l.watch.Now()}
		l.here.Store(h)
		l.watch.Poke()
		reply := answer(context.WithValue(ctx, handoverKey{}, h))
		l.here.CompareAndSwap(h, nil)
		reader = h.finish()
		// Still the reader, with more frames buffered: this reply goes out
		// with theirs, in one write when the burst ends.
		_ = l.sendHeld(frameReply, id, nil, reply, reader && frameBuffered(r)) // fails only when the link is down
		return reader
	}
	f := func() { _ = l.send(frameReply, id, nil, answer(ctx)) }
	select {
	case l.work <- f:
	default:
		go func() {
			f()
			for f := range l.work {
				f()
			}
		}()
	}
	return true
}

func refuse(context.Context) []byte {
	return ErrorReply(&rpc.CallError{Kind: rpc.ErrServiceNotFound, Detail: "this side serves no calls"})
}

// handover lets an inline call that calls the other side (and so needs the
// reader to get its reply) pass the reading to a new goroutine first.
type handover struct {
	l     *Link
	r     *bufio.Reader
	since time.Duration // when the inline call started, by l.watch's clock
	state atomic.Int32  // 0 running inline, 1 handed over, 2 returned
}

type handoverKey struct{}

func (h *handover) handOver() {
	if h.state.CompareAndSwap(0, 1) {
		go h.l.readFrom(h.r)
	}
}

// finish says whether the inline call returned without handing over.
func (h *handover) finish() bool { return h.state.CompareAndSwap(0, 2) }

// inlineStall is how long an inline call may hold the reading up: the
// watchdog then hands it to a new goroutine, so a handler that earned the
// reader and then blocks costs the plugin's other calls that much at most.
const inlineStall = 2 * time.Millisecond

// watchIdle is how long after the last inline call the watchdog ticks.
const watchIdle = 100 * time.Millisecond

// handOverSlow is the watchdog's check.
func (l *Link) handOverSlow() {
	if h := l.here.Load(); h != nil && l.watch.Now()-h.since >= inlineStall {
		h.handOver()
	}
}

// frameBuffered says whether r holds a whole frame, which the reader can
// handle without waiting.
func frameBuffered(r *bufio.Reader) bool {
	if r.Buffered() < 4 {
		return false
	}
	head, _ := r.Peek(4)
	return uint64(r.Buffered()) >= 4+uint64(binary.BigEndian.Uint32(head))
}

// Call sends one encoded call and waits for its reply, ctx's end, or the
// link's. ctx's deadline travels with the call. Errors are ctx.Err(), or
// wrap ErrTooBig or ErrLinkDown.
func (l *Link) Call(ctx context.Context, call []byte) ([]byte, error) {
	type outcome struct {
		reply []byte
		err   error
	}
	ch := make(chan outcome, 1)
	id := l.start(ctx, call, func(reply []byte, err error) { ch <- outcome{reply, err} })
	if id == 0 {
		o := <-ch
		return o.reply, o.err
	}
	// A goroutine waits here anyway: the caller giving up ends the call at
	// once, rather than at the next sweep.
	select {
	case o := <-ch:
		return o.reply, o.err
	case <-ctx.Done():
		l.giveUp(id, ctx.Err())
		o := <-ch
		return o.reply, o.err
	}
}

// CallAsync is Call without the wait: done gets the outcome exactly once,
// on the goroutine that learnt it (the link's reader for a reply, so done
// must not block; the caller's for a call that could not be sent; the
// link's sweep, within sweepEvery, for a caller that gave up).
func (l *Link) CallAsync(ctx context.Context, call []byte, done func(reply []byte, err error)) {
	l.start(ctx, call, done)
}

// pendingCall is one of our calls waiting for its reply.
type pendingCall struct {
	ctx  context.Context
	done func([]byte, error)
}

// complete passes the reply to the caller, on the link's reader; a server
// answering a consumer there may hold its answer for the reader's burst.
func (p pendingCall) complete(l *Link, reply []byte) {
	if cc, _ := p.ctx.(*callctx.Context); cc != nil {
		cc.SetCompleter(&l.replies)
		defer cc.SetCompleter(nil)
	}
	p.done(reply, nil)
}

// sweepEvery is how often, while calls are pending, the link looks for
// callers that gave up (a deadline passed, a context was cancelled). A
// timer or a context registration per call costs more than the call's
// whole trip to the plugin when calls are quick; Dubbo's own timeout
// checks tick every 30ms.
const sweepEvery = 10 * time.Millisecond

// start sends call and returns its id, or 0 when done already has the
// outcome.
func (l *Link) start(ctx context.Context, call []byte, done func(reply []byte, err error)) uint64 {
	if len(call) > maxFramed {
		done(nil, fmt.Errorf("%w: the call is %d bytes, more than the %d a plugin call may have", ErrTooBig, len(call), maxFramed))
		return 0
	}
	if err := ctx.Err(); err != nil {
		done(nil, err)
		return 0
	}
	if h, ok := ctx.Value(handoverKey{}).(*handover); ok && h.l == l {
		h.handOver() // the reply comes through the reader this goroutine is
	}
	l.mu.Lock()
	if l.pending == nil {
		err := l.err
		l.mu.Unlock()
		done(nil, err)
		return 0
	}
	l.nextID++
	id := l.nextID
	l.pending[id] = pendingCall{ctx: ctx, done: done}
	if !l.sweeping {
		l.sweeping = true
		time.AfterFunc(sweepEvery, l.sweep)
	}
	l.mu.Unlock()

	var timeout uint64
	if dl, ok := ctx.Deadline(); ok {
		timeout = uint64(max(time.Until(dl).Microseconds(), 1))
	}
	// Started by a server reading a burst of requests: the burst's calls
	// go out in one write when it ends.
	hold := false
	if h := callctx.HolderOf(ctx); h != nil {
		hold = h.Hold(l)
	}
	if err := l.sendHeld(frameCall, id, binary.AppendUvarint(nil, timeout), call, hold); err != nil && l.forget(id) {
		done(nil, err)
		return 0
	}
	return id
}

// sweep ends the pending calls whose callers gave up, and comes again
// while calls are pending.
func (l *Link) sweep() {
	var over []uint64
	l.mu.Lock()
	for id, p := range l.pending {
		if p.ctx.Err() != nil {
			over = append(over, id)
		}
	}
	l.sweeping = len(l.pending) > len(over)
	if l.sweeping {
		time.AfterFunc(sweepEvery, l.sweep)
	}
	l.mu.Unlock()
	for _, id := range over {
		l.mu.Lock()
		p, ok := l.pending[id]
		l.mu.Unlock()
		if ok {
			l.giveUp(id, p.ctx.Err())
		}
	}
}

// giveUp ends a call whose caller gave up with err, and tells the other
// side, unless its outcome came meanwhile.
func (l *Link) giveUp(id uint64, err error) {
	l.mu.Lock()
	p, ok := l.pending[id]
	delete(l.pending, id)
	l.mu.Unlock()
	if ok {
		_ = l.send(frameCancel, id, nil, nil)
		p.done(nil, err)
	}
}

// forget drops a call whose outcome is known otherwise; it says whether
// the caller was still waiting, which makes the forgetter the one to tell
// it.
func (l *Link) forget(id uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, waiting := l.pending[id]
	delete(l.pending, id)
	return waiting
}

// send queues one frame and, unless a write is in progress, writes what
// the socket takes now.
func (l *Link) send(kind byte, id uint64, head, body []byte) error {
	return l.sendHeld(kind, id, head, body, false)
}

// sendHeld is send; with hold set, the frame waits for FlushHeld: the
// link's reader's once it has no more frames buffered, or a Holder's.
func (l *Link) sendHeld(kind byte, id uint64, head, body []byte, hold bool) error {
	l.wmu.Lock()
	if l.werr != nil {
		err := l.werr
		l.wmu.Unlock()
		return err
	}
	if len(l.wbuf) > maxQueued {
		l.wmu.Unlock()
		l.conn.Close() // the reader ends the link
		return fmt.Errorf("%w: the other side stopped reading", ErrLinkDown)
	}
	start := len(l.wbuf)
	l.wbuf = append(l.wbuf, 0, 0, 0, 0, kind)
	l.wbuf = binary.AppendUvarint(l.wbuf, id)
	l.wbuf = append(l.wbuf, head...)
	l.wbuf = append(l.wbuf, body...)
	binary.BigEndian.PutUint32(l.wbuf[start:], uint32(len(l.wbuf)-start-4))
	if l.writing {
		l.wmu.Unlock()
		return nil
	}
	if hold {
		l.held = true
		l.wmu.Unlock()
		return nil
	}
	l.held = false
	buf := l.takeLocked()
	l.wmu.Unlock()
	n, err := l.sock.TryWrite(buf)
	return l.wrote(buf, n, err)
}

// takeLocked starts a write: it takes what is queued and sets l.writing.
// l.wmu is held. The spare becomes the queue and is no longer the spare:
// wrote makes the written buffer the next spare, or none when it was huge,
// and the queue must never share an array with a buffer being written.
func (l *Link) takeLocked() []byte {
	l.writing = true
	buf := l.wbuf
	l.wbuf = l.spare[:0]
	l.spare = nil
	return buf
}

// FlushHeld writes the frames held back, if no write is in progress (which
// then takes them); it implements callctx.Flusher.
func (l *Link) FlushHeld() {
	l.wmu.Lock()
	if !l.held || l.writing || len(l.wbuf) == 0 || l.werr != nil {
		l.held = false
		l.wmu.Unlock()
		return
	}
	l.held = false
	buf := l.takeLocked()
	l.wmu.Unlock()
	n, err := l.sock.TryWrite(buf)
	_ = l.wrote(buf, n, err)
}

// wrote settles a write of buf that took n bytes: the rest goes back ahead
// of what was queued meanwhile, for the writer goroutine.
func (l *Link) wrote(buf []byte, n int, err error) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.writing = false
	if err != nil {
		l.werr = fmt.Errorf("%w: %w", ErrLinkDown, err)
		l.conn.Close() // the reader ends the link
		return l.werr
	}
	if rest := buf[n:]; len(rest) > 0 {
		l.wbuf = append(append(make([]byte, 0, len(rest)+len(l.wbuf)), rest...), l.wbuf...)
	} else if cap(buf) <= 1<<20 { // a huge one is not kept for the next round
		l.spare = buf[:0]
	}
	if len(l.wbuf) > 0 {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// writeRest is the writer goroutine: it writes, blocking, what senders
// left, until the link ends.
func (l *Link) writeRest() {
	for {
		select {
		case <-l.done:
			return
		case <-l.wake:
		}
		l.wmu.Lock()
		if l.writing || len(l.wbuf) == 0 || l.werr != nil {
			l.wmu.Unlock()
			continue
		}
		buf := l.takeLocked()
		l.wmu.Unlock()
		n, err := l.conn.Write(buf)
		_ = l.wrote(buf, n, err)
	}
}

// Done is closed when the link has ended.
func (l *Link) Done() <-chan struct{} { return l.done }

// Err says why the link ended; nil while it is up.
func (l *Link) Err() error {
	select {
	case <-l.done:
		return l.err
	default:
		return nil
	}
}

// Close ends the link: waiting calls fail, served calls' contexts end.
func (l *Link) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.conn.Close()
	<-l.done
	return nil
}

func parseFrame(b []byte) (kind byte, id uint64, rest []byte, err error) {
	if len(b) < 2 {
		return 0, 0, nil, errors.New("short frame")
	}
	id, n := binary.Uvarint(b[1:])
	if n <= 0 {
		return 0, 0, nil, errors.New("bad request id")
	}
	return b[0], id, b[1+n:], nil
}
