package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/cluster/loadbalance"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// A business exception from one provider fails a broadcast, as Java's
// BroadcastClusterInvoker throws it; before, the call succeeded with the
// exception as its result, so a caller refreshing caches everywhere never
// learnt that one provider had refused.
func TestBroadcastBusinessExceptionFailsTheCall(t *testing.T) {
	fs := []*fake{newFake("10.0.0.1", ""), newFake("10.0.0.2", ""), newFake("10.0.0.3", "")}
	fs[1].exc = &rpc.Exception{Class: "java.lang.IllegalStateException", Message: "cache locked"}
	res, err := join(t, "broadcast", cluster.Options{}, fs[0], fs[1], fs[2]).Invoke(context.Background(), hello())
	var ex *rpc.Exception
	if err == nil || !errors.As(err, &ex) || ex.Message != "cache locked" {
		t.Fatalf("got %v, %v; want the call to fail with the business exception", res, err)
	}
	if !strings.Contains(err.Error(), "10.0.0.2:20880") || totalCalls(fs...) != 3 {
		t.Errorf("error %q after %d calls; want every provider called and the failing one named", err, totalCalls(fs...))
	}

	// broadcast.fail.percent=0 stops at the first failure.
	for _, f := range fs {
		f.calls.Store(0)
	}
	fs[0].exc = fs[1].exc
	_, err = join(t, "broadcast", cluster.Options{URL: consumerURL("broadcast.fail.percent=0")}, fs[0], fs[1], fs[2]).
		Invoke(context.Background(), hello())
	if err == nil || totalCalls(fs...) != 1 {
		t.Errorf("broadcast.fail.percent=0: %v after %d calls; want a failure after the first provider", err, totalCalls(fs...))
	}
}

// A failed failback call is retried on another provider than the one that
// just failed, as Java's RetryTimerTask selects with lastInvoker excluded;
// before, each retry picked at random and could hit the failed provider
// again.
func TestFailbackRetriesOnAnotherProvider(t *testing.T) {
	bad := failing("10.0.0.1", connErr("10.0.0.1:20880"))
	good := newFake("10.0.0.2", "")
	c := join(t, "failback", cluster.Options{FailbackPeriod: 5 * time.Millisecond}, bad, good)
	const calls = 40
	failedFirst := 0
	for range calls {
		res, err := c.Invoke(context.Background(), hello())
		if err != nil {
			t.Fatal(err)
		}
		if res.Value == nil {
			failedFirst++
		}
	}
	if failedFirst == 0 {
		t.Fatal("no first attempt went to the failing provider; the test needs some")
	}
	waitFor(t, "every call served by the good provider", func() bool { return good.calls.Load() == calls })
	time.Sleep(30 * time.Millisecond)
	if n := bad.calls.Load(); n != int64(failedFirst) {
		t.Errorf("the failing provider got %d calls for %d failed first attempts; retries went back to it", n, failedFirst)
	}
	if n := good.calls.Load(); n != calls {
		t.Errorf("the good provider got %d calls, want %d (each call once)", n, calls)
	}
}

// retries = 0 turns failback's background retries off, as in Java; before,
// 0 meant the default of 3.
func TestFailbackRetriesZero(t *testing.T) {
	dead := failing("10.0.0.1", connErr("a"))
	c := join(t, "failback", cluster.Options{FailbackPeriod: 5 * time.Millisecond, URL: consumerURL("retries=0")}, dead)
	if res, err := c.Invoke(context.Background(), hello()); err != nil || res == nil {
		t.Fatalf("got %v, %v; want an empty result", res, err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := dead.calls.Load(); n != 1 {
		t.Errorf("%d calls, want 1: retries = 0 means no background retry", n)
	}
}

// sticky keeps calling the provider picked first while it works, and moves
// (and sticks) to another when it fails, as Java's stickyInvoker.
func TestSticky(t *testing.T) {
	fs := []*fake{newFake("10.0.0.1", "sticky=true"), newFake("10.0.0.2", "sticky=true"), newFake("10.0.0.3", "sticky=true")}
	c := join(t, "failover", cluster.Options{}, fs[0], fs[1], fs[2])
	first, err := c.Invoke(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		res, err := c.Invoke(context.Background(), hello())
		if err != nil || res.Value != first.Value {
			t.Fatalf("call %d: %v, %v; want every call on %v", i, res, err, first.Value)
		}
	}
	var stuck *fake
	for _, f := range fs {
		if f.u.Host() == first.Value {
			stuck = f
		}
	}
	stuck.err, stuck.fails = connErr(stuck.u.Host()), -1
	next, err := c.Invoke(context.Background(), hello())
	if err != nil || next.Value == first.Value {
		t.Fatalf("after %v failed: %v, %v; want another provider", first.Value, next, err)
	}
	for i := range 30 {
		res, err := c.Invoke(context.Background(), hello())
		if err != nil || res.Value != next.Value {
			t.Fatalf("call %d after the move: %v, %v; want every call on %v", i, res, err, next.Value)
		}
	}

	// Without sticky, the same providers share the calls.
	plain := []*fake{newFake("10.0.0.1", ""), newFake("10.0.0.2", "")}
	c = join(t, "failover", cluster.Options{}, plain[0], plain[1])
	for range 60 {
		c.Invoke(context.Background(), hello())
	}
	if plain[0].calls.Load() == 0 || plain[1].calls.Load() == 0 {
		t.Errorf("without sticky: %d/%d calls, want both used", plain[0].calls.Load(), plain[1].calls.Load())
	}
}

// One table per extension kind drives the names, the constructor and the
// check: every listed name builds, and a misspelt one is refused naming
// the known ones.
func TestExtensionTables(t *testing.T) {
	for _, n := range cluster.Names() {
		if err := cluster.Check(n); err != nil {
			t.Errorf("Check(%q): %v", n, err)
		}
		if _, err := cluster.Join(nil, cluster.Options{Cluster: n, NewBalancer: loadbalance.New}); err != nil {
			t.Errorf("Join(%q): %v", n, err)
		}
	}
	for _, n := range loadbalance.Names() {
		if err := loadbalance.Check(n); err != nil {
			t.Errorf("loadbalance.Check(%q): %v", n, err)
		}
	}
	if got := strings.Join(cluster.Names(), ","); got != "available,broadcast,failback,failfast,failover,failsafe,forking" {
		t.Errorf("cluster names %s", got)
	}
	if got := strings.Join(loadbalance.Names(), ","); got != "consistenthash,leastactive,p2c,random,roundrobin,shortestresponse" {
		t.Errorf("load balancer names %s", got)
	}
	for _, tt := range []struct {
		err  error
		want []string
	}{
		{cluster.Check("failfats"), []string{`unknown cluster "failfats"`, "failfast", "forking"}},
		{loadbalance.Check("roundrobbin"), []string{`unknown load balancer "roundrobbin"`, "roundrobin", "p2c"}},
	} {
		if !errors.Is(tt.err, cluster.ErrUnknownName) {
			t.Errorf("%v: want ErrUnknownName", tt.err)
		}
		for _, w := range tt.want {
			if tt.err == nil || !strings.Contains(tt.err.Error(), w) {
				t.Errorf("error %v does not mention %q", tt.err, w)
			}
		}
	}
	if cluster.Check("") != nil || loadbalance.Check("") != nil {
		t.Error(`"" is the default and must pass`)
	}
}
