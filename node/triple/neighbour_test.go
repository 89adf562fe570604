package triple

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// neighbour is a healthy grpc-go client on a connection of its own that
// calls in a loop while a test misbehaves on another: every call must
// succeed, each within a second.
type neighbour struct {
	calls, fails atomic.Int64
	slowest      atomic.Int64
	stop         chan struct{}
	done         sync.WaitGroup
	firstErr     atomic.Value
}

func startNeighbour(t *testing.T, addr string) *neighbour {
	cc := dial(t, addr)
	n := &neighbour{stop: make(chan struct{})}
	n.done.Add(1)
	go func() {
		defer n.done.Done()
		for {
			select {
			case <-n.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			t0 := time.Now()
			resp, err := invoke(ctx, cc, "/s/Echo", []byte("hi"))
			cancel()
			if d := int64(time.Since(t0)); d > n.slowest.Load() {
				n.slowest.Store(d)
			}
			if err == nil && string(resp) != "echo:hi" {
				err = errors.New("wrong answer " + string(resp))
			}
			if err != nil {
				n.fails.Add(1)
				n.firstErr.CompareAndSwap(nil, err.Error())
			}
			n.calls.Add(1)
			time.Sleep(time.Millisecond)
		}
	}()
	t.Cleanup(func() { n.check(t) })
	return n
}

// check stops the neighbour and fails t unless it was served throughout.
func (n *neighbour) check(t *testing.T) {
	select {
	case <-n.stop:
		return
	default:
	}
	// Served after the attack too.
	for before, end := n.calls.Load(), time.Now().Add(5*time.Second); n.calls.Load() < before+3 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	close(n.stop)
	n.done.Wait()
	if n.calls.Load() == 0 {
		t.Error("the neighbour made no call")
	}
	if f := n.fails.Load(); f > 0 {
		t.Errorf("the neighbour failed %d of %d calls: %v", f, n.calls.Load(), n.firstErr.Load())
	}
	if s := time.Duration(n.slowest.Load()); s > time.Second {
		t.Errorf("the neighbour's slowest call took %v", s)
	}
	t.Logf("neighbour: %d calls, slowest %v", n.calls.Load(), time.Duration(n.slowest.Load()))
}
