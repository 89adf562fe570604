// Package sockio reads and writes the sockets of the call path (a
// connection's reader, a plugin link's reader, writes that must not block)
// with raw system calls on the non-blocking descriptor, waiting in the
// runtime's poller as net.Conn does. A plugin link is two pipes, one each
// way, made one connection by PipeConn.
//
// Why not net.Conn's own Read and Write: they enter the system call through
// the scheduler (entersyscall), and in a process whose processors all went
// idle that wakes the runtime's monitor thread (sysmon), which then polls
// every 20µs for a millisecond. A provider or plugin that serves one call
// at a time (a dubbo-go consumer sends each request on its own) goes idle
// between calls, so every call paid two thread wake-ups and a burst of
// polling for it: about a fifth of the CPU time per call at one caller. A
// read or write of a non-blocking socket never blocks, so it needs none of
// the scheduler's hand-off.
//
// Writes never wait: TryWrite writes what the socket buffer takes now and
// leaves the rest to the caller, so one peer that stopped reading cannot
// hold up a goroutine that serves many (without arming a write deadline,
// whose timer would wake the poller).
package sockio

import (
	"errors"
	"io"
	"net"
	"syscall"
	"unsafe"
)

// Conn reads and writes one connection. Read is for one goroutine at a
// time (a connection's reader), and so is TryWrite (the goroutine writing
// for the connection's Writer); the two may run at once.
type Conn struct {
	conn net.Conn
	// The descriptors read and written: one for a socket, two for a
	// PipeConn; nil when conn has none (net.Pipe).
	rraw, wraw syscall.RawConn
	// The read and the write in progress, and the functions that do them
	// on the descriptor, made once: a closure per call, which the poller
	// keeps, would cost three allocations a read or a write.
	rd, wr          rawIO
	readFn, writeFn func(fd uintptr) bool
}

// rawIO is a read or a write in progress.
type rawIO struct {
	b   []byte
	n   int
	err error
}

// New returns a Conn for conn.
func New(conn net.Conn) *Conn {
	c := &Conn{conn: conn}
	switch sc := conn.(type) {
	case *PipeConn:
		r, rerr := sc.r.SyscallConn()
		w, werr := sc.w.SyscallConn()
		if rerr == nil && werr == nil {
			c.rraw, c.wraw = r, w
		}
	case syscall.Conn:
		if raw, err := sc.SyscallConn(); err == nil {
			c.rraw, c.wraw = raw, raw
		}
	}
	c.readFn, c.writeFn = c.read, c.write
	return c
}

// Read reads like conn.Read: it waits until data arrives, the connection
// fails or its read deadline passes (a net.Error whose Timeout is true).
// The end of the stream is io.EOF.
func (c *Conn) Read(b []byte) (int, error) {
	if c.rraw == nil {
		return c.conn.Read(b)
	}
	if len(b) == 0 {
		return 0, nil
	}
	c.rd = rawIO{b: b}
	err := c.rraw.Read(c.readFn)
	n, rerr := c.rd.n, c.rd.err
	c.rd = rawIO{}
	if err == nil {
		err = rerr
	}
	return n, err
}

// read reads c.rd.b from fd; false: nothing to read yet, wait in the
// poller.
func (c *Conn) read(fd uintptr) bool {
	b := c.rd.b
	for {
		m, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		switch errno {
		case 0:
			c.rd.n = int(m)
			if m == 0 {
				c.rd.err = io.EOF
			}
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		default:
			c.rd.err = errno
			return true
		}
	}
}

// TryWrite writes as much of b as the socket takes now and says how much.
// A connection without a file descriptor is written in full, blocking.
func (c *Conn) TryWrite(b []byte) (int, error) {
	if c.wraw == nil {
		return c.conn.Write(b)
	}
	c.wr = rawIO{b: b}
	err := c.wraw.Write(c.writeFn)
	n, werr := c.wr.n, c.wr.err
	c.wr = rawIO{}
	if err == nil {
		err = werr
	}
	if err != nil && !errors.Is(err, syscall.EAGAIN) {
		return n, err
	}
	return n, nil
}

// write writes what of c.wr.b fd takes now; it never waits.
func (c *Conn) write(fd uintptr) bool {
	b := c.wr.b
	for c.wr.n < len(b) {
		m, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[c.wr.n])), uintptr(len(b)-c.wr.n))
		switch errno {
		case 0:
			if m == 0 {
				return true
			}
			c.wr.n += int(m)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return true // full: the rest is the caller's
		default:
			c.wr.err = errno
			return true
		}
	}
	return true
}
