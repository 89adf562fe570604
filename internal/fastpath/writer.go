package fastpath

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/internal/sockio"
)

// ErrClosed is the error of a write to a Writer that was closed, or failed
// without an error of its own.
var ErrClosed = errors.New("connection closed")

// ErrNotReading wraps the error of a Writer given up because its peer let
// more than MaxPending bytes pile up.
var ErrNotReading = errors.New("the peer is not reading")

// A Mode says who writes a frame and whether that may wait on the socket.
type Mode uint8

const (
	// Queue leaves the frame to the writer goroutine (Run), or to the
	// write in progress. For a goroutine that must never wait on this peer
	// nor write for it (a connection's reader answering a heartbeat).
	Queue Mode = iota
	// Flush: with no write in progress the caller writes the batch itself,
	// waiting on the socket for up to Stall, for a few rounds before it
	// leaves the rest to the writer goroutine. It saves a goroutine hop per
	// frame when traffic is light (a pool worker answering its request).
	Flush
	// Try: with no write in progress the caller writes what the socket
	// takes now and leaves the rest to the writer goroutine: for a
	// goroutine that serves many peers and must not be held up by one that
	// stopped reading (a plugin link's reader).
	Try
	// Hold keeps the frame until FlushHeld, which a Holder calls when its
	// burst ends, so that one write carries the burst's frames.
	Hold
)

// WriterConfig configures a Writer.
type WriterConfig struct {
	// Stall bounds how long one blocking write may wait on a peer that
	// stopped reading; the Writer then fails. 0: no bound.
	Stall time.Duration
	// MaxPending bounds the bytes waiting to be written; past it the
	// Writer fails with ErrNotReading rather than grow. 0: 64 MiB.
	MaxPending int
	// OnFail, if set, runs once when the Writer fails (after it closed the
	// connection), to stop what waits on the connection.
	OnFail func()
	// Late is the watchdog that writes late frames (Writer.Late) no other
	// write took within its stall. nil: Late writes at once, as Try.
	Late *Inline
}

// A Writer owns the write side of one connection. Frames are appended to
// one pending buffer and written in batches: whoever finds no write in
// progress writes everything pending (how, its Mode says), while the
// others only append. Under load one write carries many frames; when one
// goroutine sends alone, it writes its frame itself, without a hop.
type Writer struct {
	conn       net.Conn
	sock       *sockio.Conn
	stall      time.Duration
	maxPending int
	onFail     func()
	wake       chan struct{} // capacity 1: "write what is pending"
	lastWrite  atomic.Int64  // MonoNow of the last completed write

	// unsent counts the bytes queued and not yet taken by the socket; a
	// reader that waits for it to drop (WaitUnsent) sets waiting and is
	// woken on drained after every write and when the connection fails.
	unsent  atomic.Int64
	waiting atomic.Bool
	drained chan struct{} // capacity 1

	watchdog  *Inline      // writes late frames that waited its stall
	lateSince atomic.Int64 // MonoNow when the oldest late frame came; 0: none

	mu      sync.Mutex
	buf     []byte // frames waiting to be written
	late    []byte // frames that go behind the next write's (Late)
	spare   []byte // the buffer last written, reused next round; never buf's array
	writing bool   // a write is in progress
	closed  bool
	closing bool // CloseAfterFlush was called
	err     error
}

// NewWriter writes to conn through sock (sockio.New(conn), which the
// connection's reader may share).
func NewWriter(conn net.Conn, sock *sockio.Conn, cfg WriterConfig) *Writer {
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 64 << 20
	}
	w := &Writer{conn: conn, sock: sock, stall: cfg.Stall, maxPending: cfg.MaxPending, onFail: cfg.OnFail,
		watchdog: cfg.Late, wake: make(chan struct{}, 1), drained: make(chan struct{}, 1)}
	w.lastWrite.Store(MonoNow())
	return w
}

// SinceWrite is how long ago the last write completed (or the Writer was
// made): a client sends a heartbeat after a quiet while.
func (w *Writer) SinceWrite() time.Duration { return time.Duration(MonoNow() - w.lastWrite.Load()) }

// Unsent is the number of bytes queued and not yet taken by the socket.
func (w *Writer) Unsent() int64 { return w.unsent.Load() }

// Write appends one frame, the concatenation of parts (copied), and writes
// it as mode says. The error is the Writer's once it failed or closed.
func (w *Writer) Write(mode Mode, parts ...[]byte) error {
	w.mu.Lock()
	if err := w.queueLocked(&w.buf, parts); err != nil {
		return err
	}
	if w.writing {
		w.mu.Unlock()
		return nil
	}
	switch mode {
	case Queue:
		w.mu.Unlock()
		w.signal()
		return nil
	case Hold:
		w.mu.Unlock()
		return nil
	}
	w.writing = true
	w.mu.Unlock()
	if mode == Try {
		w.try()
		return nil
	}
	w.flush(flushRounds)
	return nil
}

// queueLocked appends the frame parts make to *dst, the pending or the
// late frames; it fails the Writer past MaxPending, and returns its error
// once it failed or closed. w.mu is held; on an error it is released.
func (w *Writer) queueLocked(dst *[]byte, parts [][]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if w.closed || w.closing {
		err := w.err
		w.mu.Unlock()
		if err == nil {
			err = ErrClosed
		}
		return err
	}
	if pending := len(w.buf) + len(w.late); pending+n > w.maxPending {
		w.mu.Unlock()
		err := fmt.Errorf("%w: %d bytes pending", ErrNotReading, pending)
		w.Fail(err)
		return err
	}
	for _, p := range parts {
		*dst = append(*dst, p...)
	}
	w.unsent.Add(int64(n))
	return nil
}

// Late appends a frame that may wait a little: it goes out behind the
// frames of the next write, or, when none comes, once it waited for the
// stall of the Late watchdog. For a control frame whose answer may be
// delayed briefly (an HTTP/2 PING's ack), so that it rides with a call's
// answer rather than costing a write, and a wake-up of the peer, of its
// own.
func (w *Writer) Late(parts ...[]byte) error {
	if w.watchdog == nil {
		return w.Write(Try, parts...)
	}
	w.mu.Lock()
	if err := w.queueLocked(&w.late, parts); err != nil {
		return err
	}
	first := w.lateSince.Load() == 0
	if first {
		w.lateSince.Store(MonoNow())
	}
	w.mu.Unlock()
	if first {
		w.watchdog.watchLate(w)
	}
	return nil
}

// HasLate says whether late frames wait for a write.
func (w *Writer) HasLate() bool { return w.lateSince.Load() != 0 }

// FlushLate writes the late frames now, with whatever else is pending, as
// Try does.
func (w *Writer) FlushLate() {
	w.mu.Lock()
	if w.closed || len(w.late) == 0 {
		w.mu.Unlock()
		return
	}
	w.buf = append(w.buf, w.late...)
	w.late = w.late[:0]
	w.lateSince.Store(0)
	if w.writing { // the write in progress takes them next
		w.mu.Unlock()
		return
	}
	w.writing = true
	w.mu.Unlock()
	w.try()
}

// FlushHeld writes what was held back, as Try does; it implements
// Flusher. With a write in progress there is nothing to do: that write
// takes it.
func (w *Writer) FlushHeld() {
	w.mu.Lock()
	if w.writing || w.closed || len(w.buf) == 0 {
		w.mu.Unlock()
		return
	}
	w.writing = true
	w.mu.Unlock()
	w.try()
}

// take starts a write: it returns what is pending, the late frames behind
// the rest, and makes the spare the new pending buffer. w.mu is held and
// w.writing set. The spare stops being the spare, so that the pending
// buffer never shares an array with a buffer being written.
func (w *Writer) take() []byte {
	out := w.buf
	if len(w.late) > 0 {
		out = append(out, w.late...)
		w.late = w.late[:0]
		w.lateSince.Store(0)
	}
	w.buf = w.spare[:0]
	w.spare = nil
	return out
}

// done ends a write of out that the socket took whole: out becomes the
// spare unless it grew huge. w.mu is held.
func (w *Writer) done(out []byte) {
	if cap(out) <= 1<<20 {
		w.spare = out[:0]
	}
}

// try writes what the socket takes of the pending batch now; the rest goes
// to the writer goroutine. w.writing is set.
func (w *Writer) try() {
	w.mu.Lock()
	if len(w.buf) == 0 || w.closed {
		w.writing = false
		w.mu.Unlock()
		return
	}
	out := w.take()
	w.mu.Unlock()

	n, err := w.sock.TryWrite(out)
	if n > 0 {
		w.lastWrite.Store(MonoNow())
		w.wrote(n)
	}
	if err != nil {
		w.Fail(err)
		return
	}
	w.mu.Lock()
	if rest := out[n:]; len(rest) > 0 {
		// Ahead of what was queued meanwhile, to keep the order.
		w.buf = append(append(make([]byte, 0, len(rest)+len(w.buf)), rest...), w.buf...)
	} else {
		w.done(out)
	}
	w.writing = false
	more := len(w.buf) > 0
	w.mu.Unlock()
	if more {
		w.signal()
	}
}

// flushRounds bounds the batches a Flush caller writes for others before
// it hands over to the writer goroutine and gets back to its own work.
const flushRounds = 2

// flush writes pending batches, waiting on the socket, until none is left,
// or until it wrote rounds batches (0: no limit) and leaves the rest to
// the writer goroutine. w.writing is set.
func (w *Writer) flush(rounds int) {
	for n := 1; ; n++ {
		w.mu.Lock()
		if len(w.buf) > 0 && rounds > 0 && n > rounds {
			w.writing = false
			w.mu.Unlock()
			w.signal()
			return
		}
		if len(w.buf) == 0 || w.closed {
			w.writing = false
			last := w.closing && !w.closed
			w.mu.Unlock()
			if last {
				w.Fail(ErrClosed)
			}
			return
		}
		out := w.take()
		w.mu.Unlock()

		var err error
		if w.stall > 0 {
			err = w.conn.SetWriteDeadline(time.Now().Add(w.stall))
		}
		var m int
		if err == nil {
			m, err = w.conn.Write(out)
		}
		if w.stall > 0 && err == nil {
			// A deadline left behind would fail every later TryWrite
			// once it passed: the poller refuses raw writes after it.
			err = w.conn.SetWriteDeadline(time.Time{})
		}
		w.lastWrite.Store(MonoNow())
		w.wrote(m)
		if err != nil {
			w.Fail(err)
			return
		}
		w.mu.Lock()
		w.done(out)
		w.mu.Unlock()
	}
}

// wrote accounts for n bytes the socket took and wakes a waiting reader.
func (w *Writer) wrote(n int) {
	w.unsent.Add(-int64(n))
	if w.waiting.Load() {
		w.wakeReader()
	}
}

func (w *Writer) wakeReader() {
	select {
	case w.drained <- struct{}{}:
	default:
	}
}

// WaitUnsent waits until at most limit bytes are unsent, or the Writer
// failed. It is for the connection's one reader: backpressure on a peer
// that sends requests but does not read their answers.
func (w *Writer) WaitUnsent(limit int64) error {
	for w.unsent.Load() > limit {
		w.waiting.Store(true)
		// Checked again after announcing the wait: a write that finished
		// before it was not seen as waited for.
		if w.unsent.Load() <= limit {
			break
		}
		w.mu.Lock()
		closed, err := w.closed, w.err
		w.mu.Unlock()
		if closed {
			w.waiting.Store(false)
			if err == nil {
				err = ErrClosed
			}
			return err
		}
		<-w.drained
	}
	w.waiting.Store(false)
	return nil
}

func (w *Writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run is the writer goroutine: it writes what others left, waiting on the
// socket, until the Writer fails or closes. The connection's owner runs it.
func (w *Writer) Run() {
	for range w.wake {
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			return
		}
		if w.writing { // the write in progress takes it
			w.mu.Unlock()
			continue
		}
		w.writing = true
		w.mu.Unlock()
		w.flush(0)
	}
}

// CloseAfterFlush writes what is queued, refuses new frames, then closes
// the connection.
func (w *Writer) CloseAfterFlush() {
	w.mu.Lock()
	w.closing = true
	w.buf = append(w.buf, w.late...)
	w.late = nil
	w.lateSince.Store(0)
	w.mu.Unlock()
	w.signal()
}

// Fail closes the connection at once; the first error is kept and
// returned by later writes.
func (w *Writer) Fail(err error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.writing = false
	w.err = err
	w.buf = nil
	w.late = nil
	w.lateSince.Store(0)
	w.mu.Unlock()
	w.conn.Close()
	w.signal()
	w.wakeReader()
	if w.onFail != nil {
		w.onFail()
	}
}

// Err is the error the Writer failed with, nil while it works.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed && w.err == nil {
		return ErrClosed
	}
	return w.err
}
