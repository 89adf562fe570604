// Package trywrite writes to a socket without blocking: what the socket
// buffer takes now is written, the rest is left to the caller. Goroutines
// that serve many peers (a connection's reader, a plugin link's reader)
// write this way so that one peer that stopped reading cannot hold them up,
// without arming a write deadline, whose timer wakes the runtime's poller.
package trywrite

import (
	"errors"
	"net"
	"os"
	"syscall"
)

// Writer writes to one connection.
type Writer struct {
	conn net.Conn
	raw  syscall.RawConn // nil when conn has no file descriptor (net.Pipe)
}

// New returns a Writer for conn.
func New(conn net.Conn) *Writer {
	w := &Writer{conn: conn}
	if sc, ok := conn.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			w.raw = raw
		}
	}
	return w
}

// Write writes as much of b as the socket takes now and says how much. A
// connection without a file descriptor is written in full, blocking.
func (w *Writer) Write(b []byte) (int, error) {
	if w.raw == nil {
		return w.conn.Write(b)
	}
	var n int
	var werr error
	err := w.raw.Write(func(fd uintptr) bool {
		for n < len(b) {
			m, err := syscall.Write(int(fd), b[n:])
			if m > 0 {
				n += m
			}
			switch {
			case err == syscall.EINTR:
				continue
			case err == syscall.EAGAIN:
				return true // full: the rest is the caller's
			case err != nil:
				werr = err
				return true
			case m == 0:
				return true
			}
		}
		return true
	})
	if err == nil {
		err = werr
	}
	// A write deadline that an earlier, blocking write of the caller set
	// and that has passed since refuses the write before any byte is
	// tried: that says nothing of the socket now. Leave the bytes to the
	// caller, as for a full buffer.
	if err != nil && !errors.Is(err, syscall.EAGAIN) && !(n == 0 && errors.Is(err, os.ErrDeadlineExceeded)) {
		return n, err
	}
	return n, nil
}
