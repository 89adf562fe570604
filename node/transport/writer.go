package transport

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/internal/sockio"
	"github.com/dubbo-lab/dubbo/node/protocol"
)

// maxPending bounds the bytes queued for a peer that stopped reading; past
// it the connection is given up rather than growing without limit.
const maxPending = 64 << 20

var errWriterClosed = errors.New("connection closed")

// epoch anchors monoNow. time.Since reads the monotonic clock, so the
// connection timestamps survive wall-clock jumps.
var epoch = time.Now()

// monoNow is the time in nanoseconds since epoch, for atomic timestamps.
func monoNow() int64 { return int64(time.Since(epoch)) }

// frameWriter owns the write side of one connection. Frames are appended
// to one pending buffer and written in batches: whoever finds no write in
// progress becomes the flusher and writes everything pending, again and
// again until nothing is left, while other goroutines only append. A
// caller that must not block on the socket (the reader goroutine) leaves the
// flushing to the writer goroutine (run) instead.
type frameWriter struct {
	conn      net.Conn
	sock      *sockio.Conn  // the connection's reads and non-blocking writes
	stall     time.Duration // longest a single write may block
	wake      chan struct{} // capacity 1: "flush what is pending"
	lastWrite atomic.Int64  // monoNow of the last completed write
	// unsent counts the bytes queued and not yet taken by the socket; a
	// reader that waits for it to drop (waitUnsent) sets waiting and is
	// woken on drained after every write and when the connection fails.
	unsent  atomic.Int64
	waiting atomic.Bool
	drained chan struct{} // capacity 1
	// onFail, if set, runs once when the connection fails (before its
	// reader notices), to stop what waits on the connection.
	onFail func()

	mu       sync.Mutex
	buf      []byte // frames waiting to be written
	spare    []byte // the buffer being written, reused next round
	writing  bool   // a flusher is active
	closed   bool
	flushing bool // closeAfterFlush was called
	err      error
}

// newFrameWriter writes to conn; a write blocked for stall (a peer that
// stopped reading) fails the connection.
func newFrameWriter(conn net.Conn, stall time.Duration) *frameWriter {
	w := &frameWriter{conn: conn, sock: sockio.New(conn), stall: stall, wake: make(chan struct{}, 1), drained: make(chan struct{}, 1)}
	w.lastWrite.Store(monoNow())
	return w
}

// How a frame gets written.
type writeMode uint8

const (
	// queued: the writer goroutine or the active flusher writes it.
	queued writeMode = iota
	// inline: with no write in progress the caller writes the batch
	// itself, which saves a goroutine hop per call when traffic is light.
	inline
	// brief is inline for a caller that must not be held up by a peer that
	// stopped reading (the goroutine of a plugin link, serving every
	// consumer): what the socket does not take at once is left to the
	// writer goroutine.
	brief
	// held waits for FlushHeld, which a callctx.Holder calls when its
	// burst ends.
	held
)

// enqueue appends frame (copied) to the pending batch and writes it as
// mode says.
func (w *frameWriter) enqueue(frame []byte, mode writeMode) error {
	w.mu.Lock()
	if w.closed || w.flushing {
		err := w.err
		w.mu.Unlock()
		if err == nil {
			err = errWriterClosed
		}
		return err
	}
	if len(w.buf)+len(frame) > maxPending {
		w.mu.Unlock()
		w.fail(fmt.Errorf("peer is not reading: %d bytes pending", len(w.buf)))
		return errWriterClosed
	}
	w.buf = append(w.buf, frame...)
	w.unsent.Add(int64(len(frame)))
	if w.writing {
		w.mu.Unlock()
		return nil
	}
	switch mode {
	case queued:
		w.mu.Unlock()
		w.signal()
		return nil
	case held:
		w.mu.Unlock()
		return nil
	}
	w.writing = true
	w.mu.Unlock()
	if mode == brief {
		w.flushBrief()
		return nil
	}
	w.flush(inlineRounds)
	return nil
}

// FlushHeld writes what was held back, as brief does; it implements
// callctx.Flusher.
func (w *frameWriter) FlushHeld() {
	w.mu.Lock()
	if w.writing || w.closed || len(w.buf) == 0 {
		w.mu.Unlock()
		return
	}
	w.writing = true
	w.mu.Unlock()
	w.flushBrief()
}

// flushBrief writes what the socket takes of the pending batch now; the
// rest goes to the writer goroutine. w.writing is set.
func (w *frameWriter) flushBrief() {
	w.mu.Lock()
	out := w.buf
	if len(out) == 0 || w.closed {
		w.writing = false
		w.mu.Unlock()
		return
	}
	w.buf = w.spare[:0]
	w.spare = nil
	w.mu.Unlock()

	n, err := w.sock.TryWrite(out)
	if n > 0 {
		w.lastWrite.Store(monoNow())
		w.wrote(n)
	}
	if err != nil {
		w.fail(err)
		return
	}
	w.mu.Lock()
	if rest := out[n:]; len(rest) > 0 {
		// Ahead of what was queued meanwhile, to keep the order.
		w.buf = append(append(make([]byte, 0, len(rest)+len(w.buf)), rest...), w.buf...)
	} else if cap(out) <= 1<<20 {
		w.spare = out[:0]
	}
	w.writing = false
	more := len(w.buf) > 0
	w.mu.Unlock()
	if more {
		w.signal()
	}
}

// wrote accounts for n bytes the socket took and wakes a waiting reader.
func (w *frameWriter) wrote(n int) {
	w.unsent.Add(-int64(n))
	if w.waiting.Load() {
		w.wakeReader()
	}
}

func (w *frameWriter) wakeReader() {
	select {
	case w.drained <- struct{}{}:
	default:
	}
}

// waitUnsent waits until at most limit bytes are unsent, or the connection
// failed. It is for the connection's one reader: backpressure on a peer
// that sends requests but does not read their responses.
func (w *frameWriter) waitUnsent(limit int64) error {
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
				err = errWriterClosed
			}
			return err
		}
		<-w.drained
	}
	w.waiting.Store(false)
	return nil
}

func (w *frameWriter) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run is the writer goroutine: it flushes on request until the connection
// closes. The connection's owner runs it.
func (w *frameWriter) run() {
	for range w.wake {
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			return
		}
		if w.writing { // the active flusher will write it
			w.mu.Unlock()
			continue
		}
		w.writing = true
		w.mu.Unlock()
		w.flush(0)
	}
}

// inlineRounds bounds the batches a caller writes for others before it
// hands over to the writer goroutine and gets back to its own call.
const inlineRounds = 2

// flush writes pending batches until none is left, or until it wrote
// rounds batches (0: no limit) and hands the rest to the writer goroutine.
// w.writing is set.
func (w *frameWriter) flush(rounds int) {
	for n := 1; ; n++ {
		w.mu.Lock()
		out := w.buf
		if len(out) > 0 && rounds > 0 && n > rounds {
			w.writing = false
			w.mu.Unlock()
			w.signal()
			return
		}
		if len(out) == 0 || w.closed {
			w.writing = false
			done := w.flushing && !w.closed
			w.mu.Unlock()
			if done {
				w.fail(errWriterClosed)
			}
			return
		}
		w.buf = w.spare[:0]
		w.spare = nil
		w.mu.Unlock()

		err := w.conn.SetWriteDeadline(time.Now().Add(w.stall))
		var n int
		if err == nil {
			n, err = w.conn.Write(out)
		}
		w.lastWrite.Store(monoNow())
		w.wrote(n)
		if err != nil {
			w.fail(err)
			return
		}
		w.mu.Lock()
		if cap(out) <= 1<<20 { // keep a reasonable buffer, drop a huge one
			w.spare = out[:0]
		}
		w.mu.Unlock()
	}
}

// closeAfterFlush writes what is queued, refuses new frames, then closes the
// connection.
func (w *frameWriter) closeAfterFlush() {
	w.mu.Lock()
	w.flushing = true
	w.mu.Unlock()
	w.signal()
}

// fail closes the connection at once; the first error is kept.
func (w *frameWriter) fail(err error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.writing = false
	w.err = err
	w.buf = nil
	w.mu.Unlock()
	w.conn.Close()
	w.signal()
	w.wakeReader()
	if w.onFail != nil {
		w.onFail()
	}
}

// encoders hands out per-goroutine encoders with a scratch buffer, so
// frames are encoded outside the writer's lock.
type encoders struct {
	pool sync.Pool
}

type encoder struct {
	*protocol.Encoder
	buf []byte
}

func newEncoders(payload int) *encoders {
	e := &encoders{}
	e.pool.New = func() any { return &encoder{Encoder: protocol.NewEncoder(payload)} }
	return e
}

func (e *encoders) get() *encoder { return e.pool.Get().(*encoder) }

func (e *encoders) put(enc *encoder) {
	if cap(enc.buf) > 64<<10 {
		enc.buf = nil
	}
	e.pool.Put(enc)
}
