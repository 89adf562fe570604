package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/cluster/directory"
	"github.com/dubbo-lab/dubbo/node/cluster/loadbalance"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// fake is a provider that counts calls and fails its first `fails` calls
// (all of them when fails < 0) with err.
type fake struct {
	u     *url.URL
	err   error
	fails int64
	delay time.Duration
	exc   *rpc.Exception
	down  atomic.Bool
	calls atomic.Int64
	// started is signalled when a call begins, if set.
	started chan struct{}
}

func (f *fake) Invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	n := f.calls.Add(1)
	if f.started != nil {
		f.started <- struct{}{}
	}
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.err != nil && (f.fails < 0 || n <= f.fails) {
		return nil, f.err
	}
	if f.exc != nil {
		return &rpc.Result{Exception: f.exc}, nil
	}
	return &rpc.Result{Value: f.u.Host()}, nil
}
func (f *fake) URL() *url.URL   { return f.u }
func (f *fake) Available() bool { return !f.down.Load() }

func newFake(host, query string) *fake {
	return &fake{u: url.MustParse("dubbo://" + host + ":20880/org.example.Greeter?" + query)}
}

func failing(host string, err error) *fake {
	f := newFake(host, "")
	f.err, f.fails = err, -1
	return f
}

func connErr(host string) error {
	return &rpc.CallError{Kind: rpc.ErrConnection, Service: "org.example.Greeter", Method: "sayHello", Address: host}
}

func join(t *testing.T, name string, opts cluster.Options, ps ...cluster.ProviderInvoker) *cluster.Invoker {
	t.Helper()
	return joinDir(t, name, opts, directory.NewStatic(nil, nil, ps...))
}

func joinDir(t *testing.T, name string, opts cluster.Options, dir cluster.Directory) *cluster.Invoker {
	t.Helper()
	opts.Cluster = name
	opts.NewBalancer = loadbalance.New
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c, err := cluster.Join(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// consumerURL is a reference's consumer URL with query.
func consumerURL(query string) *url.URL {
	return url.MustParse("consumer://127.0.0.1/org.example.Greeter?" + query)
}

func hello() *rpc.Invocation {
	return &rpc.Invocation{Service: "org.example.Greeter", Method: "sayHello", Args: []any{"bob"}}
}

func totalCalls(fs ...*fake) int64 {
	var n int64
	for _, f := range fs {
		n += f.calls.Load()
	}
	return n
}

func TestFailover(t *testing.T) {
	tests := []struct {
		name      string
		providers func() []*fake
		wantCalls int64
		wantErr   error // nil: success
		wantEach  bool  // every provider called at most once
	}{
		{"retries on another provider", func() []*fake {
			return []*fake{failing("10.0.0.1", connErr("a")), failing("10.0.0.2", connErr("b")), newFake("10.0.0.3", "")}
		}, -1, nil, true},
		{"three attempts on three providers then fail", func() []*fake {
			return []*fake{failing("10.0.0.1", connErr("a")), failing("10.0.0.2", connErr("b")), failing("10.0.0.3", connErr("c")), failing("10.0.0.4", connErr("d"))}
		}, 3, rpc.ErrConnection, true},
		{"retries=0 means one attempt", func() []*fake {
			return []*fake{failing("10.0.0.1", connErr("a")).with("retries=0"), failing("10.0.0.2", connErr("b")).with("retries=0")}
		}, 1, rpc.ErrConnection, true},
		{"method-level retries win", func() []*fake {
			return []*fake{failing("10.0.0.1", connErr("a")).with("retries=5&sayHello.retries=1"), failing("10.0.0.2", connErr("b")).with("retries=5&sayHello.retries=1")}
		}, 2, rpc.ErrConnection, true},
		{"one provider is retried", func() []*fake {
			return []*fake{failing("10.0.0.1", connErr("a"))}
		}, 3, rpc.ErrConnection, false},
		{"bad request not retried", func() []*fake {
			return []*fake{failing("10.0.0.1", &rpc.CallError{Kind: rpc.ErrBadRequest}), failing("10.0.0.2", &rpc.CallError{Kind: rpc.ErrBadRequest})}
		}, 1, rpc.ErrBadRequest, true},
		{"uncategorised error becomes ErrProvider", func() []*fake {
			return []*fake{failing("10.0.0.1", errors.New("boom"))}
		}, 3, rpc.ErrProvider, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := tt.providers()
			ps := make([]cluster.ProviderInvoker, len(fs))
			for i, f := range fs {
				ps[i] = f
			}
			for range 20 { // the balancer is random: repeat
				for _, f := range fs {
					f.calls.Store(0)
				}
				res, err := join(t, "failover", cluster.Options{}, ps...).Invoke(context.Background(), hello())
				switch {
				case tt.wantErr == nil && (err != nil || res.Value != "10.0.0.3"):
					t.Fatalf("got %v, %v; want success from 10.0.0.3", res, err)
				case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
				if tt.wantCalls > 0 && totalCalls(fs...) != tt.wantCalls {
					t.Fatalf("%d calls, want %d", totalCalls(fs...), tt.wantCalls)
				}
				for _, f := range fs {
					if tt.wantEach && f.calls.Load() > 1 {
						t.Fatalf("%s called %d times; failover must try other providers first", f.u.Host(), f.calls.Load())
					}
				}
			}
		})
	}
}

func (f *fake) with(query string) *fake {
	f.u = url.MustParse(f.u.String() + "&" + query)
	if !strings.Contains(f.u.String(), "?") {
		f.u = url.MustParse(strings.Replace(f.u.String(), "&", "?", 1))
	}
	return f
}

func TestFailoverAggregatesErrors(t *testing.T) {
	c := join(t, "failover", cluster.Options{},
		failing("10.0.0.1", connErr("10.0.0.1:20880")),
		failing("10.0.0.2", &rpc.CallError{Kind: rpc.ErrTimeout, Address: "10.0.0.2:20880"}))
	_, err := c.Invoke(context.Background(), hello())
	var ae *cluster.AttemptsError
	if !errors.As(err, &ae) || len(ae.Errors) != 3 || ae.Listed != 2 {
		t.Fatalf("error %v: want AttemptsError with 3 attempts over 2 providers", err)
	}
	if !errors.Is(err, rpc.ErrTimeout) || !errors.Is(err, rpc.ErrConnection) {
		t.Errorf("error %v should match both categories", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "10.0.0.1:20880") || !strings.Contains(msg, "10.0.0.2:20880") {
		t.Errorf("message %q should name both providers", msg)
	}
}

func TestFailoverDoesNotRetryBusinessException(t *testing.T) {
	a := newFake("10.0.0.1", "")
	a.exc = &rpc.Exception{Class: "java.lang.IllegalStateException", Message: "nope"}
	b := newFake("10.0.0.2", "")
	b.exc = a.exc
	res, err := join(t, "failover", cluster.Options{}, a, b).Invoke(context.Background(), hello())
	if err != nil || res.Exception == nil || totalCalls(a, b) != 1 {
		t.Errorf("got %v, %v after %d calls; want the exception as a result after one call", res, err, totalCalls(a, b))
	}
}

// listCounter counts List calls and hands out what its current list is.
type listCounter struct {
	mu    sync.Mutex
	lists int
	next  func(n int) []cluster.ProviderInvoker
}

func (l *listCounter) List(*rpc.Invocation) []cluster.ProviderInvoker {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lists++
	return l.next(l.lists)
}

func TestFailoverRelistsBeforeRetry(t *testing.T) {
	a := failing("10.0.0.1", connErr("a"))
	b := newFake("10.0.0.2", "")
	// The first list has only a; by the retry the registry has added b.
	dir := &listCounter{next: func(n int) []cluster.ProviderInvoker {
		if n == 1 {
			return []cluster.ProviderInvoker{a}
		}
		return []cluster.ProviderInvoker{a, b}
	}}
	res, err := joinDir(t, "failover", cluster.Options{}, dir).Invoke(context.Background(), hello())
	if err != nil || res.Value != "10.0.0.2" || dir.lists != 2 {
		t.Errorf("got %v, %v with %d lists; want b's answer after re-listing once", res, err, dir.lists)
	}
	// When every provider is gone by the retry, the error says so.
	gone := &listCounter{next: func(n int) []cluster.ProviderInvoker {
		if n == 1 {
			return []cluster.ProviderInvoker{a}
		}
		return nil
	}}
	_, err = joinDir(t, "failover", cluster.Options{}, gone).Invoke(context.Background(), hello())
	if !errors.Is(err, rpc.ErrNoProvider) || !errors.Is(err, rpc.ErrConnection) {
		t.Errorf("error %v: want the connection failure and no provider", err)
	}
}

func TestNoProvider(t *testing.T) {
	for _, name := range cluster.Names() {
		t.Run(name, func(t *testing.T) {
			_, err := join(t, name, cluster.Options{}).Invoke(context.Background(), hello())
			if name == "failsafe" || name == "failback" {
				if err != nil {
					t.Errorf("%s returned %v, want the failure swallowed", name, err)
				}
				return
			}
			if !errors.Is(err, rpc.ErrNoProvider) || !strings.Contains(err.Error(), "org.example.Greeter") {
				t.Errorf("error %v, want ErrNoProvider naming the service", err)
			}
		})
	}
}

func TestTimeoutFromProviderURL(t *testing.T) {
	slow := newFake("10.0.0.1", "timeout=20&retries=0")
	slow.delay = 5 * time.Second
	start := time.Now()
	_, err := join(t, "failover", cluster.Options{}, slow).Invoke(context.Background(), hello())
	if !errors.Is(err, rpc.ErrTimeout) || time.Since(start) > 2*time.Second {
		t.Errorf("error %v after %v; want ErrTimeout after about 20ms", err, time.Since(start))
	}
}

func TestFailfastAndFailsafe(t *testing.T) {
	a := failing("10.0.0.1", connErr("a"))
	b := failing("10.0.0.2", connErr("b"))
	_, err := join(t, "failfast", cluster.Options{}, a, b).Invoke(context.Background(), hello())
	if !errors.Is(err, rpc.ErrConnection) || totalCalls(a, b) != 1 {
		t.Errorf("failfast: %v after %d calls; want the error after one call", err, totalCalls(a, b))
	}
	res, err := join(t, "failsafe", cluster.Options{}, a, b).Invoke(context.Background(), hello())
	if err != nil || res == nil || res.Value != nil || totalCalls(a, b) != 2 {
		t.Errorf("failsafe: %v, %v after %d calls; want an empty result after one more call", res, err, totalCalls(a, b))
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestFailback(t *testing.T) {
	flaky := newFake("10.0.0.1", "")
	flaky.err, flaky.fails = connErr("a"), 2 // fails twice, then works
	c := join(t, "failback", cluster.Options{FailbackPeriod: 5 * time.Millisecond}, flaky)
	res, err := c.Invoke(context.Background(), hello())
	if err != nil || res == nil || res.Value != nil {
		t.Fatalf("got %v, %v; want an empty result at once", res, err)
	}
	waitFor(t, "the background retries to succeed", func() bool { return flaky.calls.Load() == 3 })
	time.Sleep(30 * time.Millisecond)
	if n := flaky.calls.Load(); n != 3 {
		t.Errorf("%d calls; a retried call that succeeded must not be retried again", n)
	}

	// Always failing: the original call plus the reference's retries.
	dead := failing("10.0.0.2", connErr("b"))
	c = join(t, "failback", cluster.Options{FailbackPeriod: 5 * time.Millisecond, URL: consumerURL("retries=2")}, dead)
	c.Invoke(context.Background(), hello())
	waitFor(t, "two retries", func() bool { return dead.calls.Load() == 3 })
	time.Sleep(30 * time.Millisecond)
	if n := dead.calls.Load(); n != 3 {
		t.Errorf("%d calls, want 3 (1 + 2 retries)", n)
	}

	// Close stops the retries.
	stopped := failing("10.0.0.3", connErr("c"))
	c = join(t, "failback", cluster.Options{FailbackPeriod: 20 * time.Millisecond}, stopped)
	c.Invoke(context.Background(), hello())
	c.Close()
	time.Sleep(60 * time.Millisecond)
	if n := stopped.calls.Load(); n != 1 {
		t.Errorf("%d calls after Close, want only the first", n)
	}
}

func TestFailbackQueueIsBounded(t *testing.T) {
	dead := failing("10.0.0.1", connErr("a"))
	c := join(t, "failback", cluster.Options{FailbackPeriod: 10 * time.Millisecond, URL: consumerURL("failbacktasks=2&retries=1")}, dead)
	for range 5 {
		c.Invoke(context.Background(), hello())
	}
	waitFor(t, "the queued retries", func() bool { return dead.calls.Load() >= 7 })
	time.Sleep(50 * time.Millisecond)
	if n := dead.calls.Load(); n != 7 {
		t.Errorf("%d calls; want 5 + 2 retries (queue of 2)", n)
	}
}

func TestForking(t *testing.T) {
	slow := newFake("10.0.0.1", "forks=2")
	slow.delay = 2 * time.Second
	fast := newFake("10.0.0.2", "forks=2")
	start := time.Now()
	res, err := join(t, "forking", cluster.Options{}, slow, fast).Invoke(context.Background(), hello())
	if err != nil || res.Value != "10.0.0.2" || time.Since(start) > time.Second {
		t.Errorf("got %v, %v after %v; want the fast provider's answer without waiting", res, err, time.Since(start))
	}
	// The losing fork runs on in the background until cancelled.
	waitFor(t, "both forks to be called", func() bool { return slow.calls.Load() == 1 && fast.calls.Load() == 1 })

	// forks=2 of 4: exactly two distinct providers are called.
	fs := []*fake{failing("10.0.0.1", connErr("a")), failing("10.0.0.2", connErr("b")), failing("10.0.0.3", connErr("c")), failing("10.0.0.4", connErr("d"))}
	_, err = join(t, "forking", cluster.Options{}, fs[0], fs[1], fs[2], fs[3]).Invoke(context.Background(), hello())
	var ae *cluster.AttemptsError
	if !errors.As(err, &ae) || len(ae.Errors) != 2 || totalCalls(fs...) != 2 {
		t.Errorf("error %v after %d calls; want 2 failed attempts", err, totalCalls(fs...))
	}
	for _, f := range fs {
		if f.calls.Load() > 1 {
			t.Errorf("%s called %d times", f.u.Host(), f.calls.Load())
		}
	}
}

func TestBroadcast(t *testing.T) {
	fs := []*fake{newFake("10.0.0.1", ""), newFake("10.0.0.2", ""), newFake("10.0.0.3", "")}
	c := join(t, "broadcast", cluster.Options{}, fs[0], fs[1], fs[2])
	if _, err := c.Invoke(context.Background(), hello()); err != nil || totalCalls(fs...) != 3 {
		t.Errorf("error %v after %d calls; want every provider called", err, totalCalls(fs...))
	}
	fs[1].err, fs[1].fails = connErr("b"), -1
	_, err := c.Invoke(context.Background(), hello())
	if !errors.Is(err, rpc.ErrConnection) || totalCalls(fs...) != 6 {
		t.Errorf("error %v after %d calls; want the failure reported after calling all", err, totalCalls(fs...))
	}
}

func TestAvailable(t *testing.T) {
	a, b, c := newFake("10.0.0.1", ""), newFake("10.0.0.2", ""), newFake("10.0.0.3", "")
	a.down.Store(true)
	// NewStatic keeps unavailable providers; List filters them per call.
	res, err := join(t, "available", cluster.Options{}, a, b, c).Invoke(context.Background(), hello())
	if err != nil || res.Value != "10.0.0.2" {
		t.Errorf("got %v, %v; want the first available provider", res, err)
	}
}

func TestJoinErrors(t *testing.T) {
	_, err := cluster.Join(directory.NewStatic(nil, nil), cluster.Options{Cluster: "mergeable", NewBalancer: loadbalance.New})
	if !errors.Is(err, cluster.ErrUnknownName) || !strings.Contains(err.Error(), "failover") {
		t.Errorf("unknown cluster: %v", err)
	}
	if _, err := cluster.Join(directory.NewStatic(nil, nil), cluster.Options{}); err == nil {
		t.Error("Join without NewBalancer should fail")
	}
	p := newFake("10.0.0.1", "loadbalance=fastest")
	_, err = join(t, "failover", cluster.Options{}, p).Invoke(context.Background(), hello())
	if !errors.Is(err, rpc.ErrBadRequest) || !strings.Contains(err.Error(), "fastest") {
		t.Errorf("unknown loadbalance: %v", err)
	}
}

func TestStatsCountCallsInFlight(t *testing.T) {
	p := newFake("10.0.0.1", "")
	p.delay = 200 * time.Millisecond
	p.started = make(chan struct{}, 1)
	c := join(t, "failfast", cluster.Options{}, p)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Invoke(context.Background(), hello())
	}()
	<-p.started
	if n := c.Stats().Active(p.URL(), "sayHello"); n != 1 {
		t.Errorf("active during the call = %d, want 1", n)
	}
	<-done
	if n := c.Stats().Active(p.URL(), "sayHello"); n != 0 {
		t.Errorf("active after the call = %d, want 0", n)
	}
	if d := c.Stats().AverageElapsed(p.URL(), "sayHello"); d < 150*time.Millisecond {
		t.Errorf("average elapsed %v, want about 200ms", d)
	}
}

func TestLoadBalanceFromURLSpreadsCalls(t *testing.T) {
	fs := []*fake{newFake("10.0.0.1", "loadbalance=roundrobin"), newFake("10.0.0.2", "loadbalance=roundrobin")}
	c := join(t, "failover", cluster.Options{}, fs[0], fs[1])
	for range 10 {
		if _, err := c.Invoke(context.Background(), hello()); err != nil {
			t.Fatal(err)
		}
	}
	if fs[0].calls.Load() != 5 || fs[1].calls.Load() != 5 {
		t.Errorf("round robin calls %d/%d, want 5/5", fs[0].calls.Load(), fs[1].calls.Load())
	}
}

func TestWeight(t *testing.T) {
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) string { return fmt.Sprint(now.Add(-d).UnixMilli()) }
	tests := []struct {
		query string
		want  int
	}{
		{"", 100},
		{"weight=200", 200},
		{"weight=0", 0},
		{"weight=-5", 0},
		{"sayHello.weight=7&weight=3", 7},
		{"timestamp=" + ago(time.Minute), 10}, // 1 of 10 minutes
		{"timestamp=" + ago(5*time.Minute) + "&weight=200", 100},
		{"timestamp=" + ago(time.Millisecond), 1}, // at least 1
		{"timestamp=" + ago(-time.Minute), 1},     // clock skew
		{"timestamp=" + ago(11*time.Minute), 100}, // warmed up
		{"timestamp=" + ago(time.Minute) + "&warmup=120000", 50},
		{"timestamp=" + ago(time.Minute) + "&weight=0", 0},
	}
	for _, tt := range tests {
		p := newFake("10.0.0.1", tt.query)
		if got := cluster.Weight(p, "sayHello", now); got != tt.want {
			t.Errorf("Weight(%s) = %d, want %d", tt.query, got, tt.want)
		}
	}
}

// Select picks as a first attempt would, without calling: by the load
// balancer over the available providers, ErrNoProvider when none is.
func TestSelect(t *testing.T) {
	if _, err := join(t, "failover", cluster.Options{}).Select(hello()); !errors.Is(err, rpc.ErrNoProvider) {
		t.Errorf("no providers: %v", err)
	}
	a, b, down := newFake("10.0.0.1", "loadbalance=roundrobin"), newFake("10.0.0.2", "loadbalance=roundrobin"), newFake("10.0.0.3", "loadbalance=roundrobin")
	down.down.Store(true)
	c := join(t, "failover", cluster.Options{}, a, b, down)
	picked := map[string]int{}
	for range 4 {
		p, err := c.Select(hello())
		if err != nil {
			t.Fatal(err)
		}
		picked[p.URL().Host()]++
	}
	if picked["10.0.0.1"] != 2 || picked["10.0.0.2"] != 2 || totalCalls(a, b, down) != 0 {
		t.Errorf("picked %v with %d calls, want 2 each of the available ones and no call", picked, totalCalls(a, b, down))
	}
}
