package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/dubbo-lab/dubbo/internal/fastpath"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Protobuf streams travel on the link in frames of their own, each tagged
// with the id the side that opened the stream gave it (from the same
// counter as its calls):
//
//	from the opener                     from the side serving it
//	'o' id timeout head   open          'H' id metadata   response header
//	'm' id message        a message     'M' id message    a message
//	'h' id                half-close    'E' id end        end: as a reply
//	'g' id n              credit        'G' id n          credit
//	'x' id                cancel
//
// head is AppendProtoCall's (the method and the metadata); an end is
// AppendProtoOK's or AppendProtoError's, without a response; metadata is
// a block as AppendMetadata writes it, without its length.
//
// Flow control: each side may have up to streamWindow bytes of messages
// (each counted with msgCost more, so that empty ones are not free) not
// yet granted back by the other, which grants them ('g', 'G') as it takes
// them; a message larger than the window goes once nothing is
// outstanding. So a side buffers at most a window, or one message, per
// stream; a peer that sends past that breaks the link.
const (
	frameOpen      = 'o'
	frameSend      = 'm'
	frameCloseSend = 'h'
	frameCredit    = 'g'
	frameHeader    = 'H'
	frameMessage   = 'M'
	frameEnd       = 'E'
	frameCreditUp  = 'G'
)

const (
	streamWindow = 256 << 10
	msgCost      = 32
)

// cost is what msg counts against a window.
func cost(msg []byte) int { return len(msg) + msgCost }

// ErrSendClosed is the error of a Send after CloseSend.
var ErrSendClosed = errors.New("send on a stream after CloseSend")

// A StreamServer serves the protobuf streams the other side opens; a link
// whose Invoker is not one ends them Unimplemented.
type StreamServer interface {
	// ServeStream runs on a goroutine of its own for each stream, with the
	// stream's head (AppendProtoCall's); it returns the stream's end: st
	// nil for OK, and the trailer. ctx ends when the opener cancels, the
	// deadline passes, the link ends, or ServeStream returned.
	ServeStream(ctx context.Context, head []byte, s *Stream) (st *Status, trailer rpc.Metadata)
}

// A Stream is one protobuf stream on a link, on either side: the opener
// (OpenStream) uses Send, CloseSend, Recv, Header and End; the side serving
// it (StreamServer) Send, Recv and SendHeader. Send and Recv may run on two
// goroutines at once; each of them on one at a time, and Header not beside
// Recv.
type Stream struct {
	l      *Link
	id     uint64
	served bool // the other side opened it
	ctx    context.Context

	mu        sync.Mutex
	stop      func() bool // opener: stops the watch on ctx
	in        [][]byte    // messages received, not taken yet
	inDone    bool        // no more: the opener half-closed, or the server ended
	unGranted int         // bytes received and not granted back
	taken     int         // of those, taken by Recv
	credit    int         // bytes we may still send
	sentDone  bool        // we half-closed (opener) or ended (server)
	err       error       // the stream failed: canceled, timed out, link down

	// The opener's view of the server's side.
	header    rpc.Metadata
	gotHeader bool
	ended     bool
	st        *Status
	trailer   rpc.Metadata

	readable chan struct{} // something for Recv or Header
	writable chan struct{} // credit for Send, or the end
}

func newStream(l *Link, id uint64, served bool, ctx context.Context) *Stream {
	return &Stream{l: l, id: id, served: served, ctx: ctx, credit: streamWindow,
		readable: make(chan struct{}, 1), writable: make(chan struct{}, 1)}
}

// wake tells the waiters to look again; s.mu is held.
func (s *Stream) wake() {
	for _, c := range [...]chan struct{}{s.readable, s.writable} {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// OpenStream opens a stream to the other side's StreamServer with head as
// AppendProtoCall writes it (copied). ctx's deadline travels with it; when
// ctx ends, the stream is canceled on both sides. Errors wrap ErrLinkDown
// or ErrTooBig, or are ctx's, or ErrRetired after Retire.
func (l *Link) OpenStream(ctx context.Context, head []byte) (*Stream, error) {
	if len(head) > maxFramed {
		return nil, fmt.Errorf("%w: the stream's head is %d bytes", ErrTooBig, len(head))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.nextID++
	id := l.nextID
	l.mu.Unlock()
	s := newStream(l, id, false, ctx)
	l.smu.Lock()
	if l.streamsDone {
		l.smu.Unlock()
		return nil, l.downErr()
	}
	if l.streamsRetired {
		l.smu.Unlock()
		return nil, ErrRetired
	}
	l.opened[id] = s
	l.smu.Unlock()
	var timeout uint64
	if dl, ok := ctx.Deadline(); ok {
		timeout = uint64(max(time.Until(dl).Microseconds(), 1))
	}
	var tb [binary.MaxVarintLen64]byte
	if err := l.send(fastpath.Try, frameOpen, id, tb[:binary.PutUvarint(tb[:], timeout)], head, nil); err != nil {
		s.fail(err)
		return nil, err
	}
	// Watched once the server knows the stream, so that a cancel never
	// overtakes its open.
	stop := context.AfterFunc(ctx, s.cancel)
	s.mu.Lock()
	s.stop = stop
	over := s.ended || s.err != nil
	s.mu.Unlock()
	if over {
		stop()
	}
	return s, nil
}

// downErr is the error of a link that ended.
func (l *Link) downErr() error {
	<-l.done
	return l.err
}

// cancel ends an opened stream whose ctx ended, and tells the server.
func (s *Stream) cancel() {
	if s.fail(s.ctx.Err()) {
		_ = s.l.send(fastpath.Try, frameCancel, s.id, nil, nil, nil)
	}
}

// ctxDone ends a stream whose ctx ended: an opened one is canceled on both
// sides, a served one ends here (its opener canceled, its deadline
// passed, or the link ended).
func (s *Stream) ctxDone() {
	if s.served {
		s.fail(s.ctx.Err())
		return
	}
	s.cancel()
}

// fail ends the stream with err unless it has ended; it says whether it
// did. The stream leaves its link's table.
func (s *Stream) fail(err error) bool {
	s.mu.Lock()
	failed := s.err == nil && !s.ended
	if failed {
		s.err = err
		s.in = nil
		s.wake()
	}
	s.mu.Unlock()
	s.l.forgetStream(s)
	return failed
}

func (l *Link) forgetStream(s *Stream) {
	l.smu.Lock()
	if s.served {
		delete(l.served, s.id)
	} else {
		delete(l.opened, s.id)
	}
	l.smu.Unlock()
	s.mu.Lock()
	stop := s.stop
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// Send sends one message, once the other side has granted the credit. It
// returns io.EOF once the server ended the stream (opener: End says how),
// an error wrapping ErrTooBig for a message larger than a frame, or the
// error the stream failed with.
func (s *Stream) Send(msg []byte) error {
	if len(msg) > maxFramed {
		return fmt.Errorf("%w: a %d-byte message, more than the %d a plugin message may have", ErrTooBig, len(msg), maxFramed)
	}
	c := cost(msg)
	for {
		s.mu.Lock()
		switch {
		case s.err != nil:
			s.mu.Unlock()
			return s.err
		case s.ended:
			s.mu.Unlock()
			return io.EOF
		case s.sentDone:
			s.mu.Unlock()
			return ErrSendClosed
		case s.credit >= c || s.credit == streamWindow:
			s.credit -= c
			s.mu.Unlock()
			kind := byte(frameSend)
			if s.served {
				kind = frameMessage
			}
			return s.l.send(fastpath.Try, kind, s.id, msg, nil, nil)
		}
		s.mu.Unlock()
		select {
		case <-s.writable:
		case <-s.ctx.Done():
			s.ctxDone()
		}
	}
}

// Recv returns the next message, or io.EOF when no more will come (the
// opener half-closed; the server ended, and End says how), or the error
// the stream failed with.
func (s *Stream) Recv() ([]byte, error) {
	for {
		s.mu.Lock()
		if s.err != nil {
			s.mu.Unlock()
			return nil, s.err
		}
		if len(s.in) > 0 {
			msg := s.in[0]
			s.in[0] = nil
			s.in = s.in[1:]
			// Credit goes back in batches, and whenever Recv has taken all
			// there is, so that a sender waiting to send a large message is
			// never left waiting on credit we hold.
			s.taken += cost(msg)
			grant := 0
			if !s.inDone && (s.taken >= streamWindow/2 || len(s.in) == 0) {
				grant, s.taken = s.taken, 0
				s.unGranted -= grant
			}
			s.mu.Unlock()
			if grant > 0 {
				kind := byte(frameCreditUp)
				if !s.served {
					kind = frameCredit
				}
				var b [binary.MaxVarintLen64]byte
				_ = s.l.send(fastpath.Try, kind, s.id, b[:binary.PutUvarint(b[:], uint64(grant))], nil, nil)
			}
			return msg, nil
		}
		if s.inDone {
			s.mu.Unlock()
			return nil, io.EOF
		}
		s.mu.Unlock()
		select {
		case <-s.readable:
		case <-s.ctx.Done():
			s.ctxDone()
		}
	}
}

// CloseSend tells the server that no more messages come (opener).
func (s *Stream) CloseSend() error {
	s.mu.Lock()
	if s.err != nil || s.sentDone || s.ended {
		err := s.err
		s.mu.Unlock()
		return err
	}
	s.sentDone = true
	s.mu.Unlock()
	return s.l.send(fastpath.Try, frameCloseSend, s.id, nil, nil, nil)
}

// Header waits for the server's response header: it returns when the
// header, a first message or the end arrived (opener).
func (s *Stream) Header() (rpc.Metadata, error) {
	for {
		s.mu.Lock()
		switch {
		case s.gotHeader || len(s.in) > 0 || s.ended:
			md := s.header
			s.mu.Unlock()
			return md, nil
		case s.err != nil:
			s.mu.Unlock()
			return nil, s.err
		}
		s.mu.Unlock()
		select {
		case <-s.readable:
		case <-s.ctx.Done():
			s.ctxDone()
		}
	}
}

// End is how the server ended the stream, once Recv returned io.EOF
// (opener): st nil for OK, and the trailer.
func (s *Stream) End() (st *Status, trailer rpc.Metadata) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st, s.trailer
}

// SendHeader sends the response header (server), before any message.
func (s *Stream) SendHeader(md rpc.Metadata) error {
	b, err := AppendMetadata(nil, md)
	if err != nil {
		return err
	}
	_, pos, _ := uvarintAt(b, 0) // the block, without its length
	return s.l.send(fastpath.Try, frameHeader, s.id, b[pos:], nil, nil)
}

// received adds a message from the other side; a peer that sends past its
// credit, or after its close, breaks the link.
func (s *Stream) received(msg []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inDone {
		return fmt.Errorf("%w: a message on stream %d after its close", ErrCorrupt, s.id)
	}
	c := cost(msg)
	if s.unGranted > 0 && s.unGranted+c > streamWindow {
		return fmt.Errorf("%w: stream %d sent past its credit", ErrCorrupt, s.id)
	}
	s.unGranted += c
	if s.err == nil {
		s.in = append(s.in, msg)
		s.wake()
	}
	return nil
}

// granted adds credit the other side granted.
func (s *Stream) granted(n uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n > uint64(streamWindow-s.credit) {
		return fmt.Errorf("%w: stream %d granted more credit than it was sent", ErrCorrupt, s.id)
	}
	s.credit += int(n)
	s.wake()
	return nil
}

// closedIn records the opener's half-close (server).
func (s *Stream) closedIn() {
	s.mu.Lock()
	s.inDone = true
	s.wake()
	s.mu.Unlock()
}

// headerIn records the server's header (opener).
func (s *Stream) headerIn(b []byte) error {
	md, err := ParseMetadata(b)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.header, s.gotHeader = md, true
	s.wake()
	s.mu.Unlock()
	return nil
}

// endIn records the server's end (opener).
func (s *Stream) endIn(b []byte) error {
	resp, trailer, st, err := ParseProtoReply(b)
	if err != nil {
		return err
	}
	if len(resp) > 0 {
		return fmt.Errorf("%w: the end of stream %d carries a message", ErrCorrupt, s.id)
	}
	s.mu.Lock()
	s.ended, s.inDone, s.st, s.trailer = true, true, st, trailer
	s.wake()
	s.mu.Unlock()
	s.l.forgetStream(s)
	return nil
}

// streamFrame handles a frame of a stream; an error breaks the link.
func (l *Link) streamFrame(kind byte, id uint64, rest []byte) error {
	if kind == frameOpen {
		return l.openServed(id, rest)
	}
	served := kind == frameSend || kind == frameCloseSend || kind == frameCredit
	l.smu.Lock()
	var s *Stream
	if served {
		s = l.served[id]
	} else {
		s = l.opened[id]
	}
	l.smu.Unlock()
	if s == nil {
		return nil // it ended here first
	}
	switch kind {
	case frameSend, frameMessage:
		return s.received(rest)
	case frameCloseSend:
		s.closedIn()
	case frameCredit, frameCreditUp:
		n, k := binary.Uvarint(rest)
		if k <= 0 {
			return fmt.Errorf("%w: bad credit", ErrCorrupt)
		}
		return s.granted(n)
	case frameHeader:
		return s.headerIn(rest)
	case frameEnd:
		return s.endIn(rest)
	}
	return nil
}

// openServed starts serving a stream the other side opened, on a goroutine
// of its own.
func (l *Link) openServed(id uint64, rest []byte) error {
	timeout, n := binary.Uvarint(rest)
	if n <= 0 {
		return fmt.Errorf("%w: bad stream timeout", ErrCorrupt)
	}
	head := rest[n:]
	var ctx context.Context
	var release context.CancelFunc
	if timeout > 0 {
		ctx, release = context.WithTimeout(l.serveCtx, time.Duration(min(timeout, 1<<40))*time.Microsecond)
	} else {
		ctx, release = context.WithCancel(l.serveCtx)
	}
	s := newStream(l, id, true, ctx)
	l.smu.Lock()
	if l.served[id] != nil {
		l.smu.Unlock()
		release()
		return fmt.Errorf("%w: stream %d opened twice", ErrCorrupt, id)
	}
	if l.streamsDone {
		l.smu.Unlock()
		release()
		return nil
	}
	l.served[id] = s
	l.smu.Unlock()
	l.cmu.Lock()
	l.cancels[id] = func() { s.fail(context.Canceled); release() }
	l.cmu.Unlock()
	go func() {
		var st *Status
		var trailer rpc.Metadata
		if srv, ok := l.inv.(StreamServer); ok {
			st, trailer = srv.ServeStream(ctx, head, s)
		} else {
			st = &Status{Code: codes.Unimplemented, Message: "this side serves no protobuf streams"}
		}
		l.cmu.Lock()
		delete(l.cancels, id)
		l.cmu.Unlock()
		release()
		s.mu.Lock()
		s.sentDone = true
		s.mu.Unlock()
		l.forgetStream(s)
		// An opener that canceled has forgotten the stream and ignores it.
		var end []byte
		if st != nil {
			end = AppendProtoError(nil, st, trailer)
		} else if end, _ = AppendProtoOK(nil, trailer); end == nil {
			end = []byte{0, 0} // OK, and a trailer past the bounds left out
		}
		_ = l.send(fastpath.Try, frameEnd, id, end, nil, nil)
	}()
	return nil
}

// failStreams fails every stream of a link that ended.
func (l *Link) failStreams(err error) {
	l.smu.Lock()
	l.streamsDone = true
	all := make([]*Stream, 0, len(l.opened)+len(l.served))
	for _, s := range l.opened {
		all = append(all, s)
	}
	for _, s := range l.served {
		all = append(all, s)
	}
	l.smu.Unlock()
	for _, s := range all {
		s.fail(err)
	}
}
