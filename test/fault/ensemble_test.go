//go:build unix

package fault

import (
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
)

// Two provider processes and a consumer on a real three-member Apache
// ZooKeeper ensemble, under load, all connected through the multi-host
// URL: the leader is killed, then the member elected after it, which
// leaves no quorum (ZooKeeper serves nobody); a third provider starts
// meanwhile and cannot register. No call fails: the consumer calls from
// the lists it holds. When one member comes back (two of three), the
// sessions are still valid and the third provider's registration goes
// through and is found. (node/consumer's TestEnsembleMemberCrashes checks
// the same crashes in one process, session by session.)
func TestEnsembleUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("Apache ZooKeeper ensemble skipped with -short")
	}
	ens := apachezk.StartEnsemble(t, apachezk.EnsembleOptions{
		TickTime:          200 * time.Millisecond,
		MaxSessionTimeout: 10 * time.Second, // sessions outlive an election
		DisableFsync:      true,
	})
	hosts := ens.ConnectString()
	a, b := startProvider(t, hosts), startProvider(t, hosts)
	c, r := newConsumer(t, hosts, 2, "")

	// Paced: three JVMs elect leaders on the same two cores.
	l := startPacedLoad(t, c, workers, 60*time.Second, time.Millisecond, hello)
	time.Sleep(time.Second)

	first := ens.Leader()
	leaderKilledAt := l.now()
	ens.Stop(first)
	second := ens.Leader()
	elected := l.now() - leaderKilledAt
	time.Sleep(500 * time.Millisecond)

	lists := sampleProviders(r)
	quorumLostAt := l.now()
	ens.Stop(second)
	late := launchProvider(t, providerOpts{registry: "zookeeper://" + hosts})
	time.Sleep(2 * time.Second)

	restartAt := l.now()
	ens.Restart(first)
	quorumAt := l.now()
	late.waitReady(t, 30*time.Second)
	waitFor(t, "the consumer to find the provider started without a quorum", 20*time.Second, func() bool {
		return len(r.Providers()) == 3
	})
	found := l.now() - quorumAt
	lists.stop()
	time.Sleep(time.Second)
	calls := l.calls()

	zc := zkConn(t, ens.Addr(first))
	if _, err := zc.Sync(providersPath); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*providerProc{a, b, late} {
		if path, err := providerNode(zc, p.addr); err != nil || path == "" {
			t.Errorf("provider %s not registered once two members were back (%q, %v)", p.addr, path, err)
		}
	}

	all := summarize(calls, nil)
	leaderless := summarize(calls, func(r callRec) bool { return r.start > leaderKilledAt && r.end < quorumLostAt })
	noQuorum := summarize(calls, func(r callRec) bool { return r.start > quorumLostAt && r.end < quorumAt })
	after := summarize(calls, func(r callRec) bool { return r.start > quorumAt+found })
	t.Logf("all: %v", all)
	t.Logf("leader %d killed, %d elected %v later; until the second kill: %v", first, second, elected.Round(time.Millisecond), leaderless)
	t.Logf("no quorum for %v (member %d back and the ensemble serving %v after its restart began): %v",
		(quorumAt - quorumLostAt).Round(time.Millisecond), first, (quorumAt - restartAt).Round(time.Millisecond), noQuorum)
	t.Logf("the provider started without a quorum was found %v after the quorum came back; then: %v", found.Round(time.Millisecond), after)
	t.Logf("the consumer listed %d to %d providers from the quorum loss until then", lists.min, lists.max)

	if all.failed != 0 {
		t.Errorf("%d of %d calls failed, first: %v", all.failed, all.calls, all.firstErr)
	}
	if noQuorum.calls < 500 {
		t.Errorf("only %d calls without a quorum; the load did not run", noQuorum.calls)
	}
	checkBalanced(t, "without a quorum", noQuorum, a, b)
	if lists.min < 2 {
		t.Errorf("the consumer's provider list fell to %d without a quorum; want the last list kept", lists.min)
	}
	if after.byProvider[late.addr] == 0 {
		t.Errorf("the provider started without a quorum served none of %d calls after it was found: %v", after.calls, after.byProvider)
	}
}
