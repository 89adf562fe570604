package fastpath

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/sockio"
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

func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// Frames from many goroutines, in every mode that writes at once, arrive
// whole and in each sender's order, in fewer writes than frames.
func TestWriterCoalescesAndKeepsOrder(t *testing.T) {
	client, server := tcpPair(t)
	cc := &countingConn{Conn: client}
	w := NewWriter(cc, sockio.New(client), WriterConfig{Stall: time.Second})
	done := make(chan struct{})
	go func() { defer close(done); w.Run() }()

	const senders, frames = 16, 200
	modes := []Mode{Queue, Flush, Try}
	var wg sync.WaitGroup
	for g := 0; g < senders; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < frames; i++ {
				var head, body [4]byte
				binary.BigEndian.PutUint32(head[:], uint32(g))
				binary.BigEndian.PutUint32(body[:], uint32(i))
				if err := w.Write(modes[i%len(modes)], head[:], body[:]); err != nil {
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
		t.Errorf("%d blocking writes for %d frames: nothing was coalesced", got, senders*frames)
	}
	w.CloseAfterFlush()
	<-done
	if err := w.Write(Flush, []byte{1}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after close = %v, want ErrClosed", err)
	}
}

// Held frames wait for FlushHeld, and then go out in one write with the
// frames queued behind them.
func TestWriterHoldsUntilFlushHeld(t *testing.T) {
	client, server := tcpPair(t)
	w := NewWriter(client, sockio.New(client), WriterConfig{})
	for _, s := range []string{"a", "b", "c"} {
		if err := w.Write(Hold, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	server.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := server.Read(make([]byte, 8)); n != 0 || err == nil {
		t.Fatalf("held frames were written (%d bytes, %v) before FlushHeld", n, err)
	}
	w.FlushHeld()
	server.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, 3)
	if _, err := io.ReadFull(server, got); err != nil || string(got) != "abc" {
		t.Fatalf("after FlushHeld read %q, %v; want abc", got, err)
	}
}

// The pending buffer never shares an array with the spare, whatever the
// sizes written, so a write in progress never sees its bytes overwritten.
func TestWriterBuffersApart(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	var conns [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "pair")
		conns[i], err = net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		defer conns[i].Close()
	}
	go io.Copy(io.Discard, conns[1])
	w := NewWriter(conns[0], sockio.New(conns[0]), WriterConfig{})
	go w.Run()
	defer w.Fail(ErrClosed)
	for i, size := range []int{10, 10, 2 << 20, 10, 10, 2 << 20, 10} {
		if err := w.Write(Try, make([]byte, size)); err != nil {
			t.Fatalf("write %d (%d bytes): %v", i, size, err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for w.Unsent() > 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		w.mu.Lock()
		shared := sameArray(w.buf, w.spare)
		w.mu.Unlock()
		if shared {
			t.Fatalf("after write %d (%d bytes) the pending buffer and the spare share an array", i, size)
		}
	}
}

// sameArray reports whether a and b are slices of one array.
func sameArray(a, b []byte) bool {
	return cap(a) > 0 && cap(b) > 0 && &a[:cap(a)][cap(a)-1] == &b[:cap(b)][cap(b)-1]
}

// A peer that stops reading costs at most MaxPending bytes: past them the
// Writer fails with ErrNotReading and closes the connection.
func TestWriterGivesUpOnPeerNotReading(t *testing.T) {
	client, _ := tcpPair(t)
	failed := make(chan struct{})
	w := NewWriter(client, sockio.New(client), WriterConfig{MaxPending: 1 << 20, OnFail: func() { close(failed) }})
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		err = w.Write(Queue, make([]byte, 64<<10)) // nobody runs the writer goroutine
	}
	if !errors.Is(err, ErrNotReading) {
		t.Fatalf("Write = %v, want ErrNotReading", err)
	}
	select {
	case <-failed:
	case <-time.After(5 * time.Second):
		t.Fatal("OnFail did not run")
	}
	if err := w.WaitUnsent(0); !errors.Is(err, ErrNotReading) {
		t.Errorf("WaitUnsent on a failed Writer = %v", err)
	}
}

// A blocking write (Flush) arms the Stall deadline; once it has passed, a
// later Try write must still go out. Before, the deadline stayed on the
// connection, and the poller refused every raw write after it: with
// protocol.heartbeat = 60 (ms) most calls of an idle connection failed,
// and with the default a connection silent for 3 minutes after a blocking
// write lost its next response.
func TestWriterStaleStallDeadline(t *testing.T) {
	client, server := tcpPair(t)
	w := NewWriter(client, sockio.New(client), WriterConfig{Stall: 20 * time.Millisecond})
	if err := w.Write(Flush, []byte("blocking")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond) // past the stall deadline
	if err := w.Write(Try, []byte("-later")); err != nil {
		t.Fatalf("Try write after the stall deadline passed: %v", err)
	}
	got := make([]byte, len("blocking-later"))
	_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(server, got); err != nil || string(got) != "blocking-later" {
		t.Fatalf("read %q, %v", got, err)
	}
}

// Late frames go out behind the frames of the next write; with no write to
// carry them, FlushLate, CloseAfterFlush or, once they waited for its
// stall, the watchdog writes them; without a watchdog they go at once.
func TestWriterLateFrames(t *testing.T) {
	const stall = 30 * time.Millisecond
	for _, c := range []struct {
		name     string
		watchdog time.Duration // 0: none
		then     func(w *Writer) error
		want     string
		notFor   time.Duration // nothing arrives this long after Late
	}{
		{"behind the next write", time.Hour, func(w *Writer) error { return w.Write(Try, []byte("answer")) }, "answer" + "ack", 50 * time.Millisecond},
		{"behind held frames", time.Hour, func(w *Writer) error {
			if err := w.Write(Hold, []byte("answer")); err != nil {
				return err
			}
			w.FlushHeld()
			return nil
		}, "answer" + "ack", 50 * time.Millisecond},
		{"FlushLate", time.Hour, func(w *Writer) error { w.FlushLate(); return nil }, "ack", 50 * time.Millisecond},
		{"CloseAfterFlush", time.Hour, func(w *Writer) error { w.CloseAfterFlush(); return nil }, "ack", 50 * time.Millisecond},
		{"the watchdog, after its stall", stall, func(*Writer) error { return nil }, "ack", stall},
		{"no watchdog", 0, func(*Writer) error { return nil }, "ack", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			client, server := tcpPair(t)
			cfg := WriterConfig{}
			if c.watchdog > 0 {
				cfg.Late = NewInline(c.watchdog)
				defer cfg.Late.Stop()
			}
			w := NewWriter(client, sockio.New(client), cfg)
			go w.Run()
			defer w.Fail(ErrClosed)
			sent := time.Now()
			if err := w.Late([]byte("ack")); err != nil {
				t.Fatal(err)
			}
			if c.notFor > 0 {
				_ = server.SetReadDeadline(sent.Add(c.notFor * 9 / 10))
				if n, err := server.Read(make([]byte, 16)); n > 0 || !isTimeout(err) {
					t.Fatalf("%d bytes (%v) arrived %v after Late, want none before %v", n, err, time.Since(sent), c.notFor)
				}
			}
			if err := c.then(w); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, len(c.want))
			_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadFull(server, got); err != nil || string(got) != c.want {
				t.Fatalf("read %q, %v; want %q", got, err, c.want)
			}
			for end := time.Now().Add(time.Second); w.Unsent() != 0 && time.Now().Before(end); { // the writer counts after the socket took them
				time.Sleep(time.Millisecond)
			}
			if w.HasLate() || w.Unsent() != 0 {
				t.Errorf("after the write: HasLate %v, %d bytes unsent", w.HasLate(), w.Unsent())
			}
		})
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
