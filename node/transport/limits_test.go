package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/syncbuf"
)

// header is a request header (two-way, hessian2) announcing bodyLen bytes.
func header(id int64, bodyLen int) []byte {
	b := []byte{0xda, 0xbb, 0xc2, 0}
	b = binary.BigEndian.AppendUint64(b, uint64(id))
	return binary.BigEndian.AppendUint32(b, uint32(bodyLen))
}

// closedWithin reads conn until the server closes it, failing after d.
func closedWithin(t *testing.T, conn net.Conn, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	conn.SetReadDeadline(start.Add(d))
	// A reset counts: the server closed with bytes of ours unread.
	if _, err := io.Copy(io.Discard, conn); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("connection not closed by the server within %v: %v", d, err)
	}
	return time.Since(start)
}

// The server keeps at most Accepts connections, as Java's accepts: one more
// is closed at once, with an error log that names the key; once a
// connection goes, a new one is taken again.
func TestAcceptsRefusesOverLimit(t *testing.T) {
	var logs syncbuf.Buffer
	s := startServer(t, "", greeter, ServerConfig{Accepts: 2, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	a := dial(t, s, ClientConfig{})
	callHello(t, a, "a")
	b := rawConn(t, s.Addr().String())
	waitFor(t, "two connections", func() bool { return s.Stats().Connections == 2 })

	over := rawConn(t, s.Addr().String())
	closedWithin(t, over, 2*time.Second)
	if st := s.Stats(); st.Refused != 1 || st.Connections != 2 {
		t.Fatalf("stats %+v, want 1 refused and 2 connections", st)
	}
	if !strings.Contains(logs.String(), "reached protocol.accepts") || !strings.Contains(logs.String(), "accepts=2") {
		t.Fatalf("log %q lacks the refusal", logs.String())
	}
	callHello(t, a, "a still served")

	b.Close()
	waitFor(t, "the closed connection removed", func() bool { return s.Stats().Connections == 1 })
	c := rawConn(t, s.Addr().String())
	c.Write(rawFrame(0xe2, 0, 7, []byte{0x4e}))
	if f := readFrame(t, c); f[2] != 0x22 {
		t.Fatalf("heartbeat answer % x on the connection taken after one left", f[:4])
	}
}

// A header that announces a large body commits no memory for it: 40
// connections announcing 8 MiB each and sending one byte of it cost the
// server a few MiB of heap, not 320 MiB, and every connection is closed
// when its frame does not complete within FrameTimeout.
func TestHeaderAloneCommitsNoBody(t *testing.T) {
	s := startServer(t, "", greeter, ServerConfig{FrameTimeout: 2 * time.Second})
	cl := dial(t, s, ClientConfig{})
	callHello(t, cl, "warm")
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	before := heap()
	const conns = 40
	attackers := make([]net.Conn, conns)
	for i := range attackers {
		attackers[i] = rawConn(t, s.Addr().String())
		attackers[i].Write(append(header(int64(i), 8<<20), 0x4e))
	}
	waitFor(t, "the attackers connected", func() bool { return s.Stats().Connections == conns+1 })
	time.Sleep(200 * time.Millisecond) // let every reader take its header
	grew := int64(heap()) - int64(before)
	t.Logf("heap grew %d KiB with %d headers announcing 8 MiB each", grew>>10, conns)
	if grew > 32<<20 {
		t.Errorf("heap grew %d MiB for %d unsent 8 MiB bodies", grew>>20, conns)
	}
	callHello(t, cl, "during")
	for _, a := range attackers {
		if took := closedWithin(t, a, 10*time.Second); took > 8*time.Second {
			t.Errorf("an incomplete frame kept its connection %v with FrameTimeout 2s", took)
		}
	}
	callHello(t, cl, "after")
}

// A frame dripping in byte by byte is cut at FrameTimeout, while a quiet
// connection stays until the heartbeat timeout.
func TestFrameTimeoutClosesDrip(t *testing.T) {
	s := startServer(t, "", greeter, ServerConfig{FrameTimeout: 300 * time.Millisecond})
	quiet := rawConn(t, s.Addr().String())
	drip := rawConn(t, s.Addr().String())
	frame := rawFrame(0xe2, 0, 1, []byte{0x4e})
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for i := 0; i < len(frame); i++ {
			if _, err := drip.Write(frame[i : i+1]); err != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	took := closedWithin(t, drip, 3*time.Second)
	t.Logf("dripping connection closed after %v", took)
	quiet.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := quiet.Read(make([]byte, 1)); !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) {
		t.Fatalf("quiet connection: %v, want it still open", err)
	}
	quiet.SetDeadline(time.Now().Add(3 * time.Second))
	quiet.Write(frame)
	if f := readFrame(t, quiet); f[2] != 0x22 {
		t.Fatalf("heartbeat answer % x", f[:4])
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// With BodyMemory taken by a body that does not arrive, a new large request
// waits for memory on its own connection only: small calls elsewhere go
// on, and the large one is served once the stalled frame is cut.
func TestBodyMemoryExhaustedOnlyDelaysLargeBodies(t *testing.T) {
	const payload = 1 << 20
	s := startServer(t, "", greeter, ServerConfig{Payload: payload, BodyMemory: payload, FrameTimeout: time.Second})
	small := dial(t, s, ClientConfig{})
	large := dial(t, s, ClientConfig{Timeout: 5 * time.Second})
	callHello(t, large, "warm")

	hog := rawConn(t, s.Addr().String())
	hog.Write(append(header(1, payload-100), 0x4e))
	time.Sleep(100 * time.Millisecond) // its reader reserves the whole budget

	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := large.Invoke(context.Background(), hello(strings.Repeat("x", 200<<10)))
		done <- err
	}()
	for range 20 {
		callHello(t, small, "small")
	}
	if err := <-done; err != nil {
		t.Fatalf("large call: %v", err)
	}
	took := time.Since(start)
	t.Logf("the large call waited %v for the stalled body's memory", took)
	if took < 500*time.Millisecond {
		t.Errorf("the large call took %v: it did not wait for the budget held by the stalled frame", took)
	}
	closedWithin(t, hog, 3*time.Second)
}

// A consumer that sends heartbeats without reading the answers has its
// reading stopped once maxUnsent bytes of answers wait for it, instead of
// the server buffering them; other connections are served meanwhile.
func TestUnreadRepliesStopReading(t *testing.T) {
	s := startServer(t, "", greeter, ServerConfig{})
	cl := dial(t, s, ClientConfig{})
	flood, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer flood.Close()
	flood.(*net.TCPConn).SetReadBuffer(4 << 10)
	var sc *serverConn
	waitFor(t, "the flooding connection", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for c := range s.conns {
			if c.conn.RemoteAddr().String() == flood.LocalAddr().String() {
				sc = c
			}
		}
		return sc != nil
	})

	// 64 MiB of heartbeats: far more answers than kernel buffers hold.
	hb := bytes.Repeat(rawFrame(0xe2, 0, 1, []byte{0x4e}), 4096)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		flood.SetWriteDeadline(time.Now().Add(20 * time.Second))
		for range 64 << 20 / len(hb) {
			if _, err := flood.Write(hb); err != nil {
				return
			}
		}
	}()
	// The flood ends when the server stops reading it: its writes block.
	var peak int64
	stalled := time.Now()
	for last := int64(-1); time.Since(stalled) < 500*time.Millisecond; time.Sleep(20 * time.Millisecond) {
		n := sc.w.Unsent()
		peak = max(peak, n)
		if n != last {
			last, stalled = n, time.Now()
		}
		if n > maxPending/2 {
			break
		}
	}
	t.Logf("answers waiting for the flooding peer peaked at %d KiB", peak>>10)
	if peak > maxUnsent+64<<10 {
		t.Errorf("%d KiB of answers queued for a peer that does not read; want at most about %d KiB", peak>>10, maxUnsent>>10)
	}
	callHello(t, cl, "others served")
	flood.Close()
	wg.Wait()
}

// The body budget serves waiters in arrival order, and a waiter that gives
// up leaves the bytes to those behind it.
func TestBodyBudgetOrder(t *testing.T) {
	b := newBodyBudget(10)
	ctx := context.Background()
	if err := b.acquire(ctx, 8); err != nil {
		t.Fatal(err)
	}
	got := make(chan int, 3)
	wait := func(n int, ctx context.Context) {
		if err := b.acquire(ctx, n); err == nil {
			got <- n
		} else {
			got <- -n
		}
	}
	gone, giveUp := context.WithCancel(ctx)
	go wait(6, gone) // first in line, gives up
	waitFor(t, "the first waiter queued", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.waiters) == 1 })
	go wait(5, ctx)
	waitFor(t, "the second waiter queued", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.waiters) == 2 })
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := b.acquire(short, 1); err == nil {
		t.Fatal("a newcomer took bytes ahead of the waiters")
	}
	giveUp()
	if n := <-got; n != -6 {
		t.Fatalf("got %d, want the first waiter to give up", n)
	}
	b.release(8)
	if n := <-got; n != 5 {
		t.Fatalf("got %d, want the second waiter served", n)
	}
}
