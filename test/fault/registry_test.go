//go:build unix

package fault

import (
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/node/consumer"
)

// instancePath is the application-level node of a provider process.
func instancePath(addr string) string { return "/services/faulttest-provider/" + addr }

// The embedded registry, as its own process, killed with -9 under load and
// down for 30 s (the figure: this is the suite's one long test),
// while a third provider starts; then started again on its data dir. No
// call fails: the consumer keeps its last list and its connections; the
// two first providers are back in the registry and the new one is found.
func TestRegistryProcessKilled(t *testing.T) {
	const down = 30 * time.Second
	reg := startRegistryProc(t)
	a, b := startProvider(t, reg.addr), startProvider(t, reg.addr)
	c, r := newConsumer(t, reg.addr, 2, "")
	zc := zkConn(t, reg.addr)
	owners := make(map[string]int64)
	for _, p := range []*providerProc{a, b} {
		owners[p.addr] = leafOwner(t, zc, p.addr)
	}
	zc.Close()

	// Paced: 30 s of unpaced load would take the two cores from the
	// processes under test.
	l := startPacedLoad(t, c, workers, down+30*time.Second, 2*time.Millisecond, hello)
	lists := sampleProviders(r)
	time.Sleep(time.Second)
	killedAt := l.now()
	reg.kill(t)

	// A provider started during the outage waits for the registry
	// (provider.Start waits up to 30 s), then registers.
	time.Sleep(5 * time.Second)
	late := launchProvider(t, providerOpts{registry: "zookeeper://" + reg.addr})
	time.Sleep(killedAt + down - l.now())
	// The last list is kept while the registry is down. (After the restart
	// a session the server gives up on, a provider slow to reconnect on a
	// loaded machine, drops its node until it registers again.)
	outage := lists.stop()
	restartedAt := l.now()
	reg.start(t)
	late.waitReady(t, 30*time.Second)
	waitFor(t, "the consumer to find the provider started during the outage", 20*time.Second, func() bool {
		return len(r.Providers()) == 3
	})
	found := l.now() - restartedAt
	time.Sleep(2 * time.Second)
	calls := l.calls()

	zc = zkConn(t, reg.addr)
	for _, p := range []*providerProc{a, b, late} {
		path, err := providerNode(zc, p.addr)
		if err != nil || path == "" {
			t.Errorf("provider %s not registered after the restart (%q, %v)", p.addr, path, err)
		}
	}
	kept := 0
	for _, p := range []*providerProc{a, b} {
		if leafOwner(t, zc, p.addr) == owners[p.addr] {
			kept++
		}
	}

	all := summarize(calls, nil)
	during := summarize(calls, func(r callRec) bool { return r.start > killedAt && r.end < restartedAt })
	after := summarize(calls, func(r callRec) bool { return r.start > restartedAt+found })
	t.Logf("all: %v", all)
	t.Logf("registry down %v: %v", (restartedAt - killedAt).Round(time.Millisecond), during)
	t.Logf("the consumer listed %d to %d providers while the registry was down", outage.min, outage.max)
	t.Logf("after the restart: the new provider found %v after the registry was started again; %d of 2 old sessions survived the restart", found.Round(time.Millisecond), kept)
	t.Logf("once found: %v", after)

	if all.failed != 0 {
		t.Errorf("%d of %d calls failed, first: %v", all.failed, all.calls, all.firstErr)
	}
	if during.calls < 1000 {
		t.Errorf("only %d calls while the registry was down; the load did not run", during.calls)
	}
	checkBalanced(t, "while the registry was down", during, a, b)
	if outage.min < 2 {
		t.Errorf("the consumer's provider list fell to %d during the outage; want the last list kept", outage.min)
	}
	if after.byProvider[late.addr] == 0 {
		t.Errorf("the provider started during the outage served none of %d calls after it was found: %v", after.calls, after.byProvider)
	}
}

// leafOwner is the session owning the provider node of addr (0: none).
func leafOwner(t testing.TB, zc *zk.Conn, addr string) int64 {
	t.Helper()
	path, err := providerNode(zc, addr)
	if err != nil || path == "" {
		return 0
	}
	_, stat, err := zc.Get(path)
	if err != nil {
		return 0
	}
	return stat.EphemeralOwner
}

// providerSampler records how many providers a reference lists, every
// few milliseconds, until stop.
type providerSampler struct {
	done chan struct{}
	wg   sync.WaitGroup

	min, max, samples, empty int
}

func sampleProviders(r *consumer.Reference) *providerSampler {
	s := &providerSampler{done: make(chan struct{}), min: 1 << 30}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			n := len(r.Providers())
			s.samples++
			s.min, s.max = min(s.min, n), max(s.max, n)
			if n == 0 {
				s.empty++
			}
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the figures.
func (s *providerSampler) stop() *providerSampler {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.wg.Wait()
	return s
}

// A provider's own nodes deleted by someone else (an operator's zkCli, a
// buggy tool) while its session lives: the provider notices and registers
// them again within a second, and no call fails meanwhile.
func TestOwnNodeDeleted(t *testing.T) {
	zktest.Both(t, func(t *testing.T, zkAddr string) {
		a, b := startProvider(t, zkAddr), startProvider(t, zkAddr)
		c, r := newConsumer(t, zkAddr, 2, "")
		zc := zkConn(t, zkAddr)
		leaf, err := providerNode(zc, b.addr)
		if err != nil || leaf == "" {
			t.Fatalf("no provider node for %s (%v)", b.addr, err)
		}

		l := startLoad(t, c, workers, 20*time.Second, hello)
		time.Sleep(700 * time.Millisecond)
		deletedAt := l.now()
		back := make(map[string]time.Duration)
		for _, path := range []string{leaf, instancePath(b.addr)} {
			back[path] = deleteAndWait(t, zc, path)
		}
		waitFor(t, "the consumer to list both providers again", 5*time.Second, func() bool { return len(r.Providers()) == 2 })
		relisted := l.now() - deletedAt
		time.Sleep(time.Second)
		calls := l.calls()

		all := summarize(calls, nil)
		after := summarize(calls, func(r callRec) bool { return r.start > deletedAt+relisted })
		t.Logf("all: %v", all)
		t.Logf("provider node re-created %v after its deletion, instance node %v; the consumer listed both providers again %v after the first deletion",
			back[leaf].Round(10*time.Microsecond), back[instancePath(b.addr)].Round(10*time.Microsecond), relisted.Round(time.Millisecond))
		t.Logf("after: %v", after)

		if all.failed != 0 {
			t.Errorf("%d of %d calls failed, first: %v", all.failed, all.calls, all.firstErr)
		}
		for path, d := range back {
			if d > time.Second {
				t.Errorf("%s came back %v after its deletion; want within a second", path, d)
			}
		}
		checkBalanced(t, "after the re-registration", after, a, b)
	})
}

// deleteAndWait deletes path as an operator would and returns how long
// its owner took to create it again, seen by an exists watch.
func deleteAndWait(t testing.TB, zc *zk.Conn, path string) time.Duration {
	t.Helper()
	_, before, err := zc.Get(path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	if err := zc.Delete(path, -1); err != nil {
		t.Fatalf("delete %s: %v", path, err)
	}
	start := time.Now()
	ok, _, events, err := zc.ExistsW(path)
	if err != nil {
		t.Fatalf("watch %s: %v", path, err)
	}
	if !ok {
		select {
		case ev := <-events:
			if ev.Type != zk.EventNodeCreated {
				t.Fatalf("watch on %s: %v, want it created", path, ev)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s not re-created 10s after its deletion", path)
		}
	}
	took := time.Since(start)
	_, now, err := zc.Get(path)
	if err != nil || now.EphemeralOwner != before.EphemeralOwner {
		t.Fatalf("%s re-created with owner %#x (%v), want the provider's session %#x", path, now.EphemeralOwner, err, before.EphemeralOwner)
	}
	return took
}

// The registry session of a provider expires under load while its dubbo
// server keeps serving: its ZooKeeper traffic goes through a proxy that
// black-holes it (a network partition) for longer than its 1.5 s session.
// The consumer sees its nodes vanish and drops it; the other provider
// serves every call, so none fails and the consumer never lists no
// provider. Once the partition heals, the provider registers again by
// itself under a new session, and the consumer calls it again.
func TestSessionExpiryUnderLoad(t *testing.T) {
	const tick = 250 * time.Millisecond // sessions may then be as short as 500 ms
	t.Run("embedded", func(t *testing.T) {
		sessionExpiry(t, zktest.StartEmbedded(t, embeddedzk.Config{TickTime: tick}))
	})
	t.Run("apache", func(t *testing.T) {
		if testing.Short() {
			t.Skip("Apache ZooKeeper skipped with -short")
		}
		sessionExpiry(t, apachezk.Start(t, apachezk.Options{TickTime: tick, DisableFsync: true}).Addr())
	})
}

func sessionExpiry(t *testing.T, zkAddr string) {
	link := startProxy(t, zkAddr)
	a := launchProvider(t, providerOpts{registry: "zookeeper://" + link.Addr() + "?session=1500"})
	a.waitReady(t, 20*time.Second)
	b := startProvider(t, zkAddr)
	c, r := newConsumer(t, zkAddr, 2, "")
	zc := zkConn(t, zkAddr)
	oldOwner := leafOwner(t, zc, a.addr)

	l := startLoad(t, c, workers, 30*time.Second, hello)
	lists := sampleProviders(r)
	time.Sleep(700 * time.Millisecond)
	pausedAt := l.now()
	link.Pause()
	waitFor(t, "the server to expire the partitioned provider's session", 15*time.Second, func() bool {
		return leafOwner(t, zc, a.addr) == 0
	})
	expired := l.now() - pausedAt
	waitFor(t, "the consumer to drop the expired provider", 5*time.Second, func() bool { return len(r.Providers()) == 1 })
	dropped := l.now() - pausedAt
	time.Sleep(500 * time.Millisecond)
	healedAt := l.now()
	link.Resume()
	waitFor(t, "the provider to register again under a new session", 15*time.Second, func() bool {
		o := leafOwner(t, zc, a.addr)
		return o != 0 && o != oldOwner
	})
	reregistered := l.now() - healedAt
	waitFor(t, "the provider's instance node to come back", 5*time.Second, func() bool {
		ok, _, err := zc.Exists(instancePath(a.addr))
		return err == nil && ok
	})
	waitFor(t, "the consumer to list the provider again", 5*time.Second, func() bool { return len(r.Providers()) == 2 })
	relisted := l.now() - healedAt
	time.Sleep(time.Second)
	lists.stop()
	calls := l.calls()

	all := summarize(calls, nil)
	partitioned := summarize(calls, func(r callRec) bool { return r.start > pausedAt+dropped && r.end < healedAt })
	after := summarize(calls, func(r callRec) bool { return r.start > healedAt+relisted })
	t.Logf("all: %v", all)
	t.Logf("partitioned provider: session expired %v after the partition began, the consumer dropped it %v after", expired.Round(time.Millisecond), dropped.Round(time.Millisecond))
	t.Logf("after the partition healed: registered again %v after, listed again by the consumer %v after", reregistered.Round(time.Millisecond), relisted.Round(time.Millisecond))
	t.Logf("while dropped: %v; after: %v", partitioned, after)
	t.Logf("the consumer listed %d to %d providers (%d samples, %d empty)", lists.min, lists.max, lists.samples, lists.empty)

	if all.failed != 0 {
		t.Errorf("%d of %d calls failed, first: %v", all.failed, all.calls, all.firstErr)
	}
	if lists.empty != 0 {
		t.Errorf("the consumer listed no provider in %d of %d samples while %s served", lists.empty, lists.samples, b.addr)
	}
	if after.byProvider[a.addr] == 0 {
		t.Errorf("the provider that re-registered served none of %d calls after: %v", after.calls, after.byProvider)
	}
	// Its dubbo server kept serving all along: the process still runs.
	select {
	case <-a.exited:
		t.Errorf("the partitioned provider exited: %v", a.exitErr)
	default:
	}
}
