//go:build unix

package fault

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Healthy calls keep their latency beside slow neighbours: a consumer
// that stops reading its answers, connected to the healthy provider, and a
// provider whose handler is stuck (deaf to deadlines), called by the same
// consumer process as the healthy calls. The healthy calls' p50 and p99
// with the neighbours are compared with the same load just before
// (generous bounds: the two cores are shared with the neighbours and
// everyone else's tests).
func TestSlowNeighbours(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	healthy := startProvider(t, zkAddr)
	stuck := launchProvider(t, providerOpts{registry: "zookeeper://" + zkAddr, group: "slow", stuck: time.Minute})
	stuck.waitReady(t, 20*time.Second)
	c, _ := newConsumer(t, zkAddr, 1, "")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	slowRef, err := c.Reference(ctx, consumer.ReferenceConfig{Interface: providertest.GreeterInterface, Version: providertest.GreeterVersion, Group: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the consumer to see the stuck provider", 10*time.Second, func() bool { return len(slowRef.Providers()) == 1 })

	const phase = 2 * time.Second
	const callers = 4 // healthy ones
	measure := func() summary {
		l := startLoad(t, c, callers, phase+5*time.Second, hello)
		time.Sleep(phase)
		return summarize(l.calls(), nil)
	}
	before := measure()

	// The stuck provider: 16 callers in the healthy calls' consumer, each
	// call waiting for its attempts' timeouts.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var slowCalls, slowTimeouts, slowOther atomic.Int64
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := slowRef.Invoke(context.Background(), &rpc.Invocation{Service: providertest.GreeterInterface, Version: providertest.GreeterVersion,
					Group: "slow", Method: "sayHello", ParamTypes: []string{"java.lang.String"}, Args: []any{"slow"}})
				slowCalls.Add(1)
				if errors.Is(err, rpc.ErrTimeout) {
					slowTimeouts.Add(1)
				} else {
					slowOther.Add(1)
				}
			}
		}()
	}
	// The consumer that stops reading: requests for 64 KiB answers, never
	// read, on 4 connections to the healthy provider.
	readers := make([]*unreadConn, 4)
	for i := range readers {
		readers[i] = startUnread(t, healthy.addr)
	}
	// The unread answers pile up until the provider stops reading those
	// connections (and the kernel's socket buffers, megabytes, are full).
	blocked := time.Now()
	for last := int64(-1); ; {
		n := unreadSent(readers)
		if n == last {
			break
		}
		if time.Since(blocked) > 15*time.Second {
			t.Fatalf("the unread consumer still sends after 15s (%d KiB): the provider keeps reading it", n>>10)
		}
		last = n
		time.Sleep(300 * time.Millisecond)
	}
	blockedAfter := time.Since(blocked)
	sentBefore := unreadSent(readers)
	with := measure()
	sentAfter := unreadSent(readers)
	close(stop)
	for _, u := range readers {
		u.close()
	}
	wg.Wait()

	t.Logf("healthy calls alone: %v, p50 %v", before, before.p50.Round(time.Microsecond))
	t.Logf("with the neighbours: %v, p50 %v", with, with.p50.Round(time.Microsecond))
	t.Logf("stuck provider: %d calls ended, %d timed out, %d otherwise; the unread consumer got %d KiB of requests in (its writes blocked within %v), none more while measured: %v",
		slowCalls.Load(), slowTimeouts.Load(), slowOther.Load(), sentBefore>>10, blockedAfter.Round(time.Millisecond), sentAfter == sentBefore)

	if before.failed != 0 || with.failed != 0 {
		t.Errorf("healthy calls failed: %d alone (first %v), %d with the neighbours (first %v)", before.failed, before.firstErr, with.failed, with.firstErr)
	}
	if with.calls < 1000 || before.calls < 1000 {
		t.Fatalf("too few healthy calls to compare: %d alone, %d with the neighbours", before.calls, with.calls)
	}
	if with.p50 > 3*before.p50+time.Millisecond {
		t.Errorf("healthy p50 %v with the neighbours, %v alone: want at most 3x + 1ms", with.p50, before.p50)
	}
	if with.p99 > 4*before.p99+5*time.Millisecond {
		t.Errorf("healthy p99 %v with the neighbours, %v alone: want at most 4x + 5ms", with.p99, before.p99)
	}
	// The neighbours were there: calls to the stuck provider timed out,
	// and the provider stopped reading the unread consumer.
	if slowTimeouts.Load() == 0 || slowOther.Load() != 0 {
		t.Errorf("calls to the stuck provider: %d timed out, %d ended otherwise; want timeouts only", slowTimeouts.Load(), slowOther.Load())
	}
	if sentAfter != sentBefore {
		t.Errorf("the unread consumer sent %d more bytes while measured: the provider kept reading it", sentAfter-sentBefore)
	}
}

// unreadConn is a consumer connection that sends sayHello requests with a
// 64 KiB name and never reads the answers.
type unreadConn struct {
	conn net.Conn
	sent atomic.Int64
	done chan struct{}
}

func startUnread(t *testing.T, addr string) *unreadConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	u := &unreadConn{conn: conn, done: make(chan struct{})}
	enc := protocol.NewEncoder(16 << 20)
	name := strings.Repeat("x", 64<<10)
	go func() {
		defer close(u.done)
		// At most 64 MiB, for 20 s: the writes block once the provider
		// stops reading (and the socket buffers are full).
		_ = conn.SetWriteDeadline(time.Now().Add(20 * time.Second))
		var frame []byte
		for id := int64(1); u.sent.Load() < 64<<20; id++ {
			var err error
			frame, err = enc.AppendRequest(frame[:0], &protocol.Request{ID: id, TwoWay: true,
				Path: providertest.GreeterInterface, Version: providertest.GreeterVersion, Method: "sayHello",
				ParamDesc: "Ljava/lang/String;", Args: []any{name},
				Attachments: map[string]any{"path": providertest.GreeterInterface, "interface": providertest.GreeterInterface,
					"version": providertest.GreeterVersion, "timeout": "1000"}})
			if err != nil {
				return
			}
			n, err := conn.Write(frame)
			u.sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	return u
}

func (u *unreadConn) close() {
	u.conn.Close()
	<-u.done
}

func unreadSent(us []*unreadConn) int64 {
	var n int64
	for _, u := range us {
		n += u.sent.Load()
	}
	return n
}
