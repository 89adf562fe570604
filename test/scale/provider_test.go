//go:build unix

package scale

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/internal/testkit/syncbuf"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/transport"
)

// providerProc is a provider process (runProvider), killed when the test
// ends.
type providerProc struct {
	pid   int
	addr  string
	stdin io.WriteCloser
	lines chan string
}

func startProviderProc(t testing.TB) *providerProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRole+"=provider")
	logs := &syncbuf.Buffer{Limit: 1 << 20}
	cmd.Stderr = logs
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &providerProc{pid: cmd.Process.Pid, stdin: stdin, lines: make(chan string, 16)}
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("provider process %d stderr:\n%s", p.pid, logs.String())
		}
	})
	select {
	case line := <-p.lines:
		addr, ok := strings.CutPrefix(line, "READY ")
		if !ok {
			t.Fatalf("provider process said %q, want READY <addr>", line)
		}
		p.addr = addr
	case <-exited:
		t.Fatalf("provider process exited:\n%s", logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("provider process not ready after 30s:\n%s", logs.String())
	}
	return p
}

// goroutines asks the provider process how many goroutines it runs.
func (p *providerProc) goroutines(t testing.TB) int {
	t.Helper()
	if _, err := io.WriteString(p.stdin, "\n"); err != nil {
		t.Fatalf("ask the provider: %v", err)
	}
	select {
	case line := <-p.lines:
		n, err := strconv.Atoi(strings.TrimPrefix(line, "GOROUTINES "))
		if err != nil {
			t.Fatalf("provider answered %q", line)
		}
		return n
	case <-time.After(30 * time.Second):
		t.Fatal("provider did not say its goroutines within 30s")
		return 0
	}
}

func sayHello() *rpc.Invocation {
	return &rpc.Invocation{Service: providertest.GreeterInterface, Version: providertest.GreeterVersion,
		Method: "sayHello", ParamTypes: []string{"java.lang.String"}, Args: []any{"world"}}
}

// callLatencies makes n sayHello calls one after another through c.
func callLatencies(c *transport.Client, n int) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, n)
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		res, err := c.Invoke(ctx, sayHello())
		took := time.Since(start)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("sayHello through the healthy connection: %w", err)
		}
		if res.Value != "Hello, world" {
			return nil, fmt.Errorf("sayHello through the healthy connection = %#v, exception %v", res.Value, res.Exception)
		}
		lat = append(lat, took)
	}
	slices.Sort(lat)
	return lat, nil
}

func mustLatencies(t testing.TB, c *transport.Client, n int) []time.Duration {
	t.Helper()
	lat, err := callLatencies(c, n)
	if err != nil {
		t.Fatal(err)
	}
	return lat
}

// connsResult holds the figures of a provider holding many connections.
type connsResult struct {
	conns                 int
	open                  time.Duration   // every connection dialled
	idleLat, loadedLat    []time.Duration // alone; beside the connections heartbeating
	busyLat               []time.Duration // while every connection makes a call
	idle, loaded          procStat
	idleGo, loadedGo, end int // the provider's goroutines
}

// connHeartbeat is the heartbeat of the many connections, so that the
// provider answers conns/5 heartbeats a second while it is measured
// (Dubbo's default, 60 s, would leave them silent).
const connHeartbeat = 5 * time.Second

// runProviderConns opens conns connections to a provider process beside
// one healthy one and checks that it answers on every one of them, that
// the healthy one keeps serving meanwhile, and that the provider's
// goroutines go back down when they close.
func runProviderConns(t testing.TB, conns, calls int) connsResult {
	t.Helper()
	res := connsResult{conns: conns}
	p := startProviderProc(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	healthy, err := transport.Dial(ctx, p.addr, transport.ClientConfig{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer healthy.Close()
	res.idleLat = mustLatencies(t, healthy, calls)
	res.idle, res.idleGo = statOf(t, p.pid), p.goroutines(t)

	clients := make([]*transport.Client, conns)
	defer func() {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
	}()
	var failed atomic.Int64
	var firstErr atomic.Value
	each := func(work func(i int) error) {
		var wg sync.WaitGroup
		sem := make(chan struct{}, 64)
		for i := range clients {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if err := work(i); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}()
		}
		wg.Wait()
	}
	start := time.Now()
	each(func(i int) error {
		c, err := transport.Dial(ctx, p.addr, transport.ClientConfig{Heartbeat: connHeartbeat, Logger: quiet()})
		clients[i] = c
		return err
	})
	res.open = time.Since(start)
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d connections failed to open; first: %v", n, conns, firstErr.Load())
	}
	// Every connection is served, while the healthy one is timed.
	var busyErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		res.busyLat, busyErr = callLatencies(healthy, calls)
	}()
	each(func(i int) error {
		cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
		defer ccancel()
		r, err := clients[i].Invoke(cctx, sayHello())
		if err == nil && r.Value != "Hello, world" {
			err = fmt.Errorf("sayHello = %#v, exception %v", r.Value, r.Exception)
		}
		return err
	})
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d connections had their call fail; first: %v", n, conns, firstErr.Load())
	}
	<-done
	if busyErr != nil {
		t.Fatalf("while every connection called: %v", busyErr)
	}
	// And while they only heartbeat, over more than one heartbeat.
	res.loadedLat = mustLatencies(t, healthy, calls)
	time.Sleep(connHeartbeat)
	res.loaded, res.loadedGo = statOf(t, p.pid), p.goroutines(t)
	for i, c := range clients {
		if !c.Available() {
			t.Fatalf("connection %d of %d unavailable after %v of heartbeats", i, conns, connHeartbeat)
		}
	}

	for i, c := range clients {
		c.Close()
		clients[i] = nil
	}
	// The connections' goroutines go; the workers the calls started stay
	// (Dubbo's fixed pool of 200 keeps its threads).
	deadline := time.Now().Add(time.Minute)
	for res.end = p.goroutines(t); res.end > res.idleGo+200+10; res.end = p.goroutines(t) {
		if time.Now().After(deadline) {
			t.Fatalf("the provider runs %d goroutines a minute after the %d connections closed, %d before they opened", res.end, conns, res.idleGo)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return res
}

func (r connsResult) log(t testing.TB) {
	t.Logf("provider with %d connections: opened in %v; RSS %.0f MB (idle %.0f MB), goroutines %d (idle %d, %.1f per connection), %d after they closed",
		r.conns, r.open.Round(time.Millisecond), r.loaded.rssMB, r.idle.rssMB, r.loadedGo, r.idleGo, r.perConn(), r.end)
	t.Logf("calls through one healthy connection: p50 %v p99 %v alone; p50 %v p99 %v while the %d connections call; p50 %v p99 %v while they heartbeat",
		percentile(r.idleLat, 50), percentile(r.idleLat, 99), percentile(r.busyLat, 50), percentile(r.busyLat, 99), r.conns,
		percentile(r.loadedLat, 50), percentile(r.loadedLat, 99))
}

func (r connsResult) perConn() float64 {
	return float64(r.loadedGo-r.idleGo) / float64(r.conns)
}

// TestProviderManyConnections: a provider process with 500 connections
// answers a call on every one of them and on a healthy one beside them,
// keeps them all up through their heartbeats, and releases their
// goroutines when they close (two each while open).
func TestProviderManyConnections(t *testing.T) {
	res := runProviderConns(t, 500, 200)
	res.log(t)
}

// BenchmarkScaleProviderConns is a provider process with 5,000
// connections: its RSS and goroutines, and the latency of calls through
// one healthy connection beside them.
func BenchmarkScaleProviderConns(b *testing.B) {
	res := runProviderConns(b, 5000, 1000)
	res.log(b)
	b.ReportMetric(float64(percentile(res.idleLat, 50).Microseconds()), "idle_p50_us")
	b.ReportMetric(float64(percentile(res.idleLat, 99).Microseconds()), "idle_p99_us")
	b.ReportMetric(float64(percentile(res.busyLat, 50).Microseconds()), "busy_p50_us")
	b.ReportMetric(float64(percentile(res.busyLat, 99).Microseconds()), "busy_p99_us")
	b.ReportMetric(float64(percentile(res.loadedLat, 50).Microseconds()), "p50_us")
	b.ReportMetric(float64(percentile(res.loadedLat, 99).Microseconds()), "p99_us")
	b.ReportMetric(res.loaded.rssMB, "rss_MB")
	b.ReportMetric(float64(res.loadedGo), "goroutines")
	b.ReportMetric(res.perConn(), "goroutines/conn")
	b.ReportMetric(float64(res.open.Milliseconds()), "open_ms")
}
