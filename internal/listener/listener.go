// Package listener holds what the servers of the node (node/transport,
// node/triple, node/qos) do alike with the listeners they accept from:
// Accept rides out a failing Accept, and a Handoff serves net/http on some
// of a listener's connections, the ones a server that tells protocols apart
// by their first bytes (qos: HTTP or telnet; triple: HTTP/2 or HTTP/1.1)
// finds to be HTTP.
package listener

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Accept returns ln's next connection. A failure that does not end ln (out
// of file descriptors and the like) is logged and retried after a pause
// that doubles from 5ms up to 1s; the error is returned once ln is closed
// (net.ErrClosed) or, when closing is not nil, once closing says the
// server is closing.
func Accept(ln net.Listener, log *slog.Logger, closing func() bool) (net.Conn, error) {
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err == nil || errors.Is(err, net.ErrClosed) || closing != nil && closing() {
			return c, err
		}
		backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
		log.Warn("accept failed", "addr", ln.Addr(), "err", err, "retry_in", backoff)
		time.Sleep(backoff)
	}
}

// Handoff is a net.Listener fed with connections accepted elsewhere, for
// an http.Server's Serve. It is safe for concurrent use.
type Handoff struct {
	addr net.Addr
	ch   chan net.Conn
	once sync.Once
	done chan struct{}
}

// NewHandoff returns a Handoff whose Addr is addr.
func NewHandoff(addr net.Addr) *Handoff {
	return &Handoff{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

// Hand waits until Accept takes c, and reports true; false, without
// taking c, once the listener is closed: the caller closes c then.
func (l *Handoff) Hand(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

// Accept returns the next connection handed over; net.ErrClosed once the
// listener is closed.
func (l *Handoff) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close ends Accept and Hand; the connections handed over before stay
// the server's. It may be called more than once.
func (l *Handoff) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *Handoff) Addr() net.Addr { return l.addr }
