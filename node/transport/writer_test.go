package transport

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingConn counts Write calls.
type countingConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

func TestFrameWriterCoalescesAndKeepsOrder(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	cc := &countingConn{Conn: client}
	w := newFrameWriter(cc, time.Second)
	done := make(chan struct{})
	go func() { defer close(done); w.run() }()

	const senders, frames = 16, 200
	var wg sync.WaitGroup
	for g := 0; g < senders; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < frames; i++ {
				var f [8]byte
				binary.BigEndian.PutUint32(f[:4], uint32(g))
				binary.BigEndian.PutUint32(f[4:], uint32(i))
				if err := w.enqueue(f[:], writeMode(i%3)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	next := make([]uint32, senders)
	server.SetReadDeadline(time.Now().Add(5 * time.Second))
	for n := 0; n < senders*frames; n++ {
		var f [8]byte
		if _, err := io.ReadFull(server, f[:]); err != nil {
			t.Fatalf("after %d frames: %v", n, err)
		}
		g, i := binary.BigEndian.Uint32(f[:4]), binary.BigEndian.Uint32(f[4:])
		if i != next[g] {
			t.Fatalf("sender %d: frame %d arrived when %d was due", g, i, next[g])
		}
		next[g]++
	}
	wg.Wait()
	if got := cc.writes.Load(); got >= senders*frames {
		t.Errorf("%d writes for %d frames: nothing was coalesced", got, senders*frames)
	}
	w.closeAfterFlush()
	<-done
	if err := w.enqueue([]byte{1}, inline); err == nil {
		t.Fatal("enqueue after close succeeded")
	}
}
