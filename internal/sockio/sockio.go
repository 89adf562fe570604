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

// Conn reads and writes one connection.
type Conn struct {
	conn net.Conn
	// The descriptors read and written: one for a socket, two for a
	// PipeConn; nil when conn has none (net.Pipe).
	rraw, wraw syscall.RawConn
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
	var n int
	var rerr error
	err := c.rraw.Read(func(fd uintptr) bool {
		for {
			m, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch errno {
			case 0:
				n = int(m)
				if n == 0 {
					rerr = io.EOF
				}
				return true
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait in the poller
			default:
				rerr = errno
				return true
			}
		}
	})
	if err == nil {
		err = rerr
	}
	return n, err
}

// TryWrite writes as much of b as the socket takes now and says how much.
// A connection without a file descriptor is written in full, blocking.
func (c *Conn) TryWrite(b []byte) (int, error) {
	if c.wraw == nil {
		return c.conn.Write(b)
	}
	var n int
	var werr error
	err := c.wraw.Write(func(fd uintptr) bool {
		for n < len(b) {
			m, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n))
			switch errno {
			case 0:
				if m == 0 {
					return true
				}
				n += int(m)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return true // full: the rest is the caller's
			default:
				werr = errno
				return true
			}
		}
		return true
	})
	if err == nil {
		err = werr
	}
	if err != nil && !errors.Is(err, syscall.EAGAIN) {
		return n, err
	}
	return n, nil
}
