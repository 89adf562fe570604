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
	"time"

	"google.golang.org/grpc/codes"

	"github.com/dubbo-lab/dubbo/internal/callctx"
	"github.com/dubbo-lab/dubbo/internal/fastpath"
	"github.com/dubbo-lab/dubbo/internal/sockio"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// A Link is one end of the pipes between the node and a plugin. It
// carries calls both ways (the node's calls to the plugin's handlers, and
// the handlers' calls to other services through the node), many at once,
// each frame tagged with a request id its caller picks:
//
//	length (4 bytes, big-endian) then one of
//	'c' id timeout call   a call; timeout is the µs left (0: none), call as
//	                      EncodeCall
//	'u' id timeout call   a unary protobuf call, as AppendProtoCall and the
//	                      request (proto.go)
//	'x' id                the caller gave up: cancel the call (or stream)
//	'r' id reply          the reply to the receiver's call id, as EncodeReply
//	                      (to a 'c') or AppendProtoOK/Error (to a 'u')
//
// and the frames of protobuf streams (stream.go).
//
// id and timeout are uvarints. Pipes rather than a gRPC stream: the gRPC
// stream cost a goroutine hand-off to its writer and one to its reader on
// each side, and kept under a third of the in-process throughput.
const (
	frameCall      = 'c'
	frameProtoCall = 'u'
	frameCancel    = 'x'
	frameReply     = 'r'
)

var (
	// ErrLinkDown is wrapped by the errors of calls on a link that ended:
	// the other process closed it or died.
	ErrLinkDown = errors.New("the link to the other process is down")
	// ErrTooBig is the error of a call larger than a link carries.
	ErrTooBig = errors.New("too large for the plugin link")
	// ErrRetired is the error of a call or stream started after Retire:
	// nothing was sent, and the caller takes it elsewhere.
	ErrRetired = errors.New("the link is retired: its process is being replaced")
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
	retired  bool // Retire was called: no new calls or streams
	sweeping bool // a sweep is due (sweepEvery)

	// Writes that completing our calls causes (responses to consumers),
	// held while the reader has more replies buffered.
	replies fastpath.Burst

	// One goroutine at a time reads (r) and runs quick calls of the other
	// side inline; the watchdog of inline hands the reading over when one
	// runs long.
	inline  *fastpath.Inline
	reading *fastpath.Reader
	r       *bufio.Reader

	// The other side's calls: they run on workers that live on (a handler
	// may block), so the stacks the hessian decoder grew are kept.
	serveCtx context.Context
	stop     context.CancelFunc
	cmu      sync.Mutex
	cancels  map[uint64]context.CancelFunc
	work     chan func() // to an idle worker

	// Protobuf streams (stream.go), by the id their opener gave them: the
	// ones this side opened, and the ones it serves.
	smu         sync.Mutex
	opened      map[uint64]*Stream
	served      map[uint64]*Stream
	streamsDone bool // the link ended: no more streams
	// Retire was called: no more streams opened (retired for calls,
	// under smu so that a stream is refused or counted by InFlight).
	streamsRetired bool

	// Frames go out through the coalescing writer: whoever finds no write
	// in progress writes what the socket takes at once (fastpath.Try), the
	// writer goroutine the rest. Nobody sending a frame waits on the other
	// side reading (the node's sender is a consumer connection's reader).
	// Under load one write carries many frames.
	sock *sockio.Conn
	w    *fastpath.Writer
}

// NewLink makes a link over conn; Start starts it.
func NewLink(conn net.Conn) *Link {
	ctx, stop := context.WithCancel(context.Background())
	sock := sockio.New(conn)
	return &Link{
		conn: conn, done: make(chan struct{}),
		sock: sock, w: fastpath.NewWriter(conn, sock, fastpath.WriterConfig{MaxPending: maxQueued}),
		pending:  make(map[uint64]pendingCall),
		serveCtx: ctx, stop: stop,
		cancels: make(map[uint64]context.CancelFunc),
		work:    make(chan func()),
		opened:  make(map[uint64]*Stream),
		served:  make(map[uint64]*Stream),
	}
}

// Start starts reading: calls from the other side go to inv (nil refuses
// them). Call it once.
func (l *Link) Start(inv Invoker) {
	l.inv = inv
	l.inline = fastpath.NewInline(inlineStall)
	l.reading = l.inline.NewReader(func() { go l.read() })
	l.r = bufio.NewReaderSize(l.sock, 64<<10)
	go l.read()
	go l.w.Run()
}

// inlineStall is how long an inline call may hold the reading up: the
// watchdog then hands it to a new goroutine, so a handler that earned the
// reader and then blocks costs the plugin's other calls that much at most.
const inlineStall = 2 * time.Millisecond

// errHandedOver ends a reader whose inline call handed the reading over.
var errHandedOver = errors.New("another goroutine reads the link now")

// read is the link's reader: it handles frames until the link fails, or
// until an inline call handed the reading on. It never waits on a handler
// other than an inline one.
func (l *Link) read() {
	err := l.readFrames(l.r)
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
	l.w.Fail(err)
	close(l.work) // idle workers end; busy ones after their call
	close(l.done)
	l.failStreams(err)
	l.reading.Close()
	l.inline.Stop()
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
			l.w.FlushHeld()
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
		case frameCall, frameProtoCall:
			timeout, n := binary.Uvarint(rest)
			if n <= 0 {
				return fmt.Errorf("%w: bad call timeout", ErrCorrupt)
			}
			if !l.serve(kind, id, time.Duration(min(timeout, 1<<40))*time.Microsecond, rest[n:]) {
				return errHandedOver
			}
		case frameOpen, frameSend, frameCloseSend, frameCredit, frameHeader, frameMessage, frameEnd, frameCreditUp:
			if err := l.streamFrame(kind, id, rest); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: unknown frame kind %q", ErrCorrupt, kind)
		}
	}
}

// serve runs one call of the other side, of kind frameCall or
// frameProtoCall, inline or on a worker; it says whether this goroutine is
// still the reader.
func (l *Link) serve(kind byte, id uint64, timeout time.Duration, call []byte) (reader bool) {
	run, inline := l.prepare(kind, call)
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
		reply := run.Run(ctx)
		l.cmu.Lock()
		delete(l.cancels, id)
		l.cmu.Unlock()
		release()
		if len(reply) > maxFramed {
			reply = errorReply(kind, fmt.Sprintf("the reply is %d bytes, more than the %d a plugin reply may have", len(reply), maxFramed))
		}
		return reply
	}
	if inline {
		var reply []byte
		reader = l.reading.Run(func(r *fastpath.Run) {
			// A call out through this link needs the reader for its reply:
			// it hands the reading over first (start).
			reply = answer(fastpath.WithRun(ctx, r))
		})
		// Still the reader, with more frames buffered: this reply goes out
		// with theirs, in one write when the burst ends.
		mode := fastpath.Try
		if reader && frameBuffered(l.r) {
			mode = fastpath.Hold
		}
		_ = l.send(mode, frameReply, id, reply, nil, nil) // fails only when the link is down
		return reader
	}
	f := func() { _ = l.send(fastpath.Try, frameReply, id, answer(ctx), nil, nil) }
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

// prepare finds what serves a call of kind; a side that serves no calls
// of that kind refuses them.
func (l *Link) prepare(kind byte, call []byte) (Runner, bool) {
	if kind == frameProtoCall {
		if p, ok := l.inv.(ProtoInvoker); ok {
			return p.PrepareProto(call)
		}
		return refusal(StatusReply(codes.Unimplemented, "this side serves no protobuf calls")), true
	}
	if l.inv == nil {
		return refusal(ErrorReply(&rpc.CallError{Kind: rpc.ErrServiceNotFound, Detail: "this side serves no calls"})), true
	}
	return l.inv.Prepare(call)
}

// refusal is a Runner that answers reply.
func refusal(reply []byte) Runner {
	return RunFunc(func(context.Context) []byte { return reply })
}

// errorReply is a reply to a call of kind that failed in the link itself.
func errorReply(kind byte, detail string) []byte {
	if kind == frameProtoCall {
		return StatusReply(codes.ResourceExhausted, detail)
	}
	return ErrorReply(&rpc.CallError{Kind: rpc.ErrProvider, Detail: detail})
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
// link's. ctx's deadline travels with the call. Errors are ctx.Err(),
// ErrRetired, or wrap ErrTooBig or ErrLinkDown.
func (l *Link) Call(ctx context.Context, call []byte) ([]byte, error) {
	type outcome struct {
		reply []byte
		err   error
	}
	ch := make(chan outcome, 1)
	id, err := l.start(ctx, frameCall, call, nil, func(reply []byte, err error) { ch <- outcome{reply, err} })
	if err != nil {
		return nil, err
	}
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

// CallAsync is Call without the wait; call is copied before it returns,
// so the caller may reuse it. done gets the outcome exactly once,
// on the goroutine that learnt it (the link's reader for a reply, so done
// must not block; the caller's for a call that could not be sent; the
// link's sweep, within sweepEvery, for a caller that gave up). A call
// started after Retire is not sent: CallAsync returns ErrRetired and done
// is not called.
func (l *Link) CallAsync(ctx context.Context, call []byte, done func(reply []byte, err error)) error {
	_, err := l.start(ctx, frameCall, call, nil, done)
	return err
}

// CallProtoAsync is CallAsync for a unary protobuf call: head as
// AppendProtoCall writes it, then req, both copied before it returns; the
// reply is as AppendProtoOK or AppendProtoError write it.
func (l *Link) CallProtoAsync(ctx context.Context, head, req []byte, done func(reply []byte, err error)) error {
	_, err := l.start(ctx, frameProtoCall, head, req, done)
	return err
}

// pendingCall is one of our calls waiting for its reply.
type pendingCall struct {
	ctx  context.Context
	done func([]byte, error)
}

// complete passes the reply to the caller, on the link's reader; a server
// answering a consumer there may hold its answer for the reader's burst
// (the call's fastpath.Completer).
func (p pendingCall) complete(l *Link, reply []byte) {
	if c := fastpath.CompleterOf(p.ctx); c != nil {
		c.Set(&l.replies)
		defer c.Set(nil)
	}
	p.done(reply, nil)
}

// sweepEvery is how often, while calls are pending, the link looks for
// callers that gave up (a deadline passed, a context was cancelled). A
// timer or a context registration per call costs more than the call's
// whole trip to the plugin when calls are quick; Dubbo's own timeout
// checks tick every 30ms.
const sweepEvery = 10 * time.Millisecond

// start sends a call of kind, head then body, and returns its id, or 0
// when done already has the outcome; or ErrRetired, without calling done,
// after Retire.
func (l *Link) start(ctx context.Context, kind byte, head, body []byte, done func(reply []byte, err error)) (uint64, error) {
	if size := len(head) + len(body); size > maxFramed {
		done(nil, fmt.Errorf("%w: the call is %d bytes, more than the %d a plugin call may have", ErrTooBig, size, maxFramed))
		return 0, nil
	}
	if err := ctx.Err(); err != nil {
		done(nil, err)
		return 0, nil
	}
	fastpath.HandOverFor(ctx, l.reading) // the reply comes through the reader this goroutine may be
	l.mu.Lock()
	if l.pending == nil {
		err := l.err
		l.mu.Unlock()
		done(nil, err)
		return 0, nil
	}
	if l.retired {
		l.mu.Unlock()
		return 0, ErrRetired
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
	var tb [binary.MaxVarintLen64]byte
	// Started by a server reading a burst of requests: the burst's calls
	// go out in one write when it ends.
	mode := fastpath.Try
	if h := fastpath.HolderOf(ctx); h != nil && h.Hold(l.w) {
		mode = fastpath.Hold
	}
	if err := l.send(mode, kind, id, tb[:binary.PutUvarint(tb[:], timeout)], head, body); err != nil && l.forget(id) {
		done(nil, err)
		return 0, nil
	}
	return id, nil
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
		_ = l.send(fastpath.Try, frameCancel, id, nil, nil, nil)
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

// send writes one frame, its kind, id and parts a, b, c (any may be
// nil), as mode says (fastpath.Try, or Hold for the end of a burst).
func (l *Link) send(mode fastpath.Mode, kind byte, id uint64, a, b, c []byte) error {
	var hdr [4 + 1 + binary.MaxVarintLen64]byte
	n := binary.PutUvarint(hdr[5:], id)
	hdr[4] = kind
	binary.BigEndian.PutUint32(hdr[:], uint32(1+n+len(a)+len(b)+len(c)))
	err := l.w.Write(mode, hdr[:5+n], a, b, c)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fastpath.ErrNotReading):
		return fmt.Errorf("%w: the other side stopped reading: %w", ErrLinkDown, err)
	case errors.Is(err, ErrLinkDown):
		return err
	}
	return fmt.Errorf("%w: %w", ErrLinkDown, err)
}

// Retire refuses the calls and streams started from now on with
// ErrRetired, before anything is sent, and lets those under way finish:
// InFlight says how many remain. A process being replaced retires its link
// once its successor takes the new calls.
func (l *Link) Retire() {
	l.mu.Lock()
	l.retired = true
	l.mu.Unlock()
	l.smu.Lock()
	l.streamsRetired = true
	l.smu.Unlock()
}

// InFlight counts our calls waiting for their replies and the streams we
// opened that have not ended.
func (l *Link) InFlight() int {
	l.mu.Lock()
	n := len(l.pending)
	l.mu.Unlock()
	l.smu.Lock()
	n += len(l.opened)
	l.smu.Unlock()
	return n
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
