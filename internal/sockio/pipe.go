package sockio

import (
	"errors"
	"net"
	"os"
	"time"
)

// PipeConn is a connection over two pipes, one each way: it reads r and
// writes w, both non-blocking (os.Pipe's, or files opened with the
// descriptor non-blocking). A plugin link is one: a socket signals its
// writer every time the reader takes bytes (an edge the runtime's poller
// wakes a thread for, with no goroutine waiting), a pipe only when it was
// full.
type PipeConn struct{ r, w *os.File }

// NewPipeConn returns the connection that reads r and writes w.
func NewPipeConn(r, w *os.File) *PipeConn { return &PipeConn{r: r, w: w} }

func (c *PipeConn) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c *PipeConn) Write(b []byte) (int, error) { return c.w.Write(b) }

// Close closes both pipes: the other side reads the end, and its writes
// fail.
func (c *PipeConn) Close() error { return errors.Join(c.r.Close(), c.w.Close()) }

func (c *PipeConn) LocalAddr() net.Addr  { return pipeAddr{} }
func (c *PipeConn) RemoteAddr() net.Addr { return pipeAddr{} }

func (c *PipeConn) SetDeadline(t time.Time) error {
	return errors.Join(c.r.SetReadDeadline(t), c.w.SetWriteDeadline(t))
}
func (c *PipeConn) SetReadDeadline(t time.Time) error  { return c.r.SetReadDeadline(t) }
func (c *PipeConn) SetWriteDeadline(t time.Time) error { return c.w.SetWriteDeadline(t) }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
