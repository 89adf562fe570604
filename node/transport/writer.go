package transport

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/node/protocol"
)

// maxPending bounds the bytes queued for a peer that stopped reading; past
// it the connection is given up rather than growing without limit.
const maxPending = 64 << 20

var errWriterClosed = errors.New("connection closed")

// frameWriter owns the write side of one connection. Any goroutine may
// enqueue encoded frames; the writer goroutine (run) writes everything
// queued since its last write in one call.
type frameWriter struct {
	conn      net.Conn
	wake      chan struct{} // capacity 1: "there is something to write"
	lastWrite atomic.Int64  // unix nanos of the last completed write

	mu       sync.Mutex
	buf      []byte // frames waiting to be written
	spare    []byte // the buffer being written, reused next round
	closed   bool
	flushing bool // closeAfterFlush was called
	err      error
}

func newFrameWriter(conn net.Conn) *frameWriter {
	w := &frameWriter{conn: conn, wake: make(chan struct{}, 1)}
	w.lastWrite.Store(time.Now().UnixNano())
	return w
}

// enqueue appends frame (copied) to the pending batch.
func (w *frameWriter) enqueue(frame []byte) error {
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
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return nil
}

// run writes batches until the writer is closed or a write fails; the
// connection's owner runs it on its own goroutine.
func (w *frameWriter) run() {
	for range w.wake {
		w.mu.Lock()
		out := w.buf
		w.buf = w.spare[:0]
		closed, flushing := w.closed, w.flushing
		w.mu.Unlock()
		if closed {
			return
		}
		if len(out) > 0 {
			_, err := w.conn.Write(out)
			w.lastWrite.Store(time.Now().UnixNano())
			if err != nil {
				w.fail(err)
				return
			}
		}
		w.mu.Lock()
		if cap(out) <= 1<<20 { // keep a reasonable buffer, drop a huge one
			w.spare = out[:0]
		} else {
			w.spare = nil
		}
		more := len(w.buf) > 0
		w.mu.Unlock()
		if flushing && !more {
			w.fail(errWriterClosed)
			return
		}
		if more {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
}

// closeAfterFlush writes what is queued, refuses new frames, then closes the
// connection.
func (w *frameWriter) closeAfterFlush() {
	w.mu.Lock()
	w.flushing = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// fail closes the connection at once; the first error is kept.
func (w *frameWriter) fail(err error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.err = err
	w.buf = nil
	w.mu.Unlock()
	w.conn.Close()
	select {
	case w.wake <- struct{}{}:
	default:
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
