package consumer_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
	"github.com/dubbo-lab/dubbo/node/provider"
)

// A provider and a consumer on a three-member Apache ZooKeeper ensemble,
// connected through a multi-host URL as in production. Calls keep
// succeeding, and the consumer keeps its one provider, while the leader
// crashes, while the ensemble has no quorum at all, and after it recovers.
func TestEnsembleMemberCrashes(t *testing.T) {
	if testing.Short() {
		t.Skip("Apache ZooKeeper ensemble skipped with -short")
	}
	ens := apachezk.StartEnsemble(t, apachezk.EnsembleOptions{
		Size:              3,
		TickTime:          200 * time.Millisecond,
		MaxSessionTimeout: 10 * time.Second, // sessions outlive an election
		DisableFsync:      true,
	})
	hosts := ens.ConnectString()
	var calls counter
	p := startProvider(t, hosts, provider.Config{}, &calls)
	ref := greeterRef()
	c := newConsumer(t, hosts, ref)
	waitProviders(t, c, ref, 1)
	r, err := c.Reference(testCtx(t), ref)
	if err != nil {
		t.Fatal(err)
	}
	const providers = "/dubbo/org.example.Greeter/providers"
	owner := leafOwners(t, ens, providers)[1] // all three members run
	if owner == 0 {
		t.Fatalf("provider leaf %s is not ephemeral", providers)
	}

	// Callers and a watcher of the provider list, bounded in count and time.
	ctx, stop := context.WithTimeout(context.Background(), 40*time.Second)
	defer stop()
	var failed, done, listChanges atomic.Int64
	var firstErr, firstList atomic.Value
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200000 && ctx.Err() == nil; i++ {
				if err := sayHello(c, testCtx(t)); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
				done.Add(1)
				// Leave CPU to three JVMs electing leaders on two cores.
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if ps := r.Providers(); len(ps) != 1 || ps[0].URL().Address() != p.Addr() {
				listChanges.Add(1)
				firstList.CompareAndSwap(nil, fmt.Sprint(ps))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	// moreCalls waits until the provider served n more calls.
	moreCalls := func(what string, n int) {
		t.Helper()
		before := calls.get(p.Addr())
		waitFor(t, what, func() bool { return calls.get(p.Addr()) >= before+n })
	}
	moreCalls("calls before the crashes", 100)

	// 1. The leader crashes: every client is disconnected (followers drop
	// their clients when they lose the leader) until a new one is elected.
	start := time.Now()
	first := ens.Leader()
	ens.Stop(first)
	second := ens.Leader()
	t.Logf("leader %d killed, %d elected after %s", first, second, time.Since(start).Round(time.Millisecond))
	moreCalls("calls after the leader crash", 100)

	// 2. The new leader crashes too: no quorum, ZooKeeper is unavailable,
	// the lists in force stay in force.
	ens.Stop(second)
	time.Sleep(time.Second)
	moreCalls("calls without a quorum", 100)

	// 3. One member comes back: quorum again, the sessions are still valid.
	start = time.Now()
	ens.Restart(first)
	t.Logf("member %d restarted, leader %d after %s", first, ens.Leader(), time.Since(start).Round(time.Millisecond))
	moreCalls("calls after the quorum came back", 100)

	stop()
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Errorf("%d of %d calls failed, first: %v", n, done.Load(), firstErr.Load())
	}
	if n := listChanges.Load(); n != 0 {
		t.Errorf("the consumer's provider list differed from [%s] %d times, first: %v", p.Addr(), n, firstList.Load())
	}

	// The provider's leaf is still there, once, owned by the session that
	// created it: the session survived and nothing was re-registered.
	for id, got := range leafOwners(t, ens, providers) {
		if got != owner {
			t.Errorf("member %d: provider leaf owned by 0x%x, want the first session 0x%x", id, got, owner)
		}
	}
	t.Logf("%d calls, none failed", done.Load())
}

// leafOwners reads the one leaf under dir on every running member (after a
// sync, as members may lag) and returns its ephemeral owner by member id.
func leafOwners(t *testing.T, ens *apachezk.Ensemble, dir string) map[int]int64 {
	t.Helper()
	owners := make(map[int]int64)
	for id := 1; id <= ens.Size(); id++ {
		if !ens.Running(id) {
			continue
		}
		zc := zkConn(t, ens.Addr(id))
		if _, err := zc.Sync(dir); err != nil {
			t.Fatalf("sync on member %d: %v", id, err)
		}
		kids, _, err := zc.Children(dir)
		if err != nil || len(kids) != 1 {
			t.Fatalf("member %d: %s holds %v, %v; want one provider", id, dir, kids, err)
		}
		_, stat, err := zc.Get(dir + "/" + kids[0])
		if err != nil {
			t.Fatalf("member %d: %v", id, err)
		}
		owners[id] = stat.EphemeralOwner
		zc.Close()
	}
	return owners
}
