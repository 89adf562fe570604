// Package handoff serves net/http on some of the connections of a listener
// that is not net/http's: a server that tells protocols apart by a
// connection's first bytes (node/qos: HTTP or telnet; node/triple: HTTP/2
// or HTTP/1.1) hands the HTTP ones to an http.Server through a Listener.
package handoff

import (
	"net"
	"sync"
)

// Listener is a net.Listener fed with connections accepted elsewhere, for
// an http.Server's Serve. It is safe for concurrent use.
type Listener struct {
	addr net.Addr
	ch   chan net.Conn
	once sync.Once
	done chan struct{}
}

// NewListener returns a Listener whose Addr is addr.
func NewListener(addr net.Addr) *Listener {
	return &Listener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

// Hand waits until Accept takes c, and reports true; false, without
// taking c, once the listener is closed: the caller closes c then.
func (l *Listener) Hand(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

// Accept returns the next connection handed over; net.ErrClosed once the
// listener is closed.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close ends Accept and Hand; the connections handed over before stay
// the server's. It may be called more than once.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *Listener) Addr() net.Addr { return l.addr }
