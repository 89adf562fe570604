//go:build unix

package fault

import (
	"syscall"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
)

// The benchmarks here time the faults the tests above check: how long the
// system takes to notice a failure and to recover from it, under the same
// bounded load of 8 callers. Each iteration is a whole scenario with fresh
// processes; every time is reported in milliseconds (the mean over the
// iterations), and failed_calls counts the calls the fault cost (the tests
// require 0). ns/op, the length of a scenario, says nothing and is zero.
// `make bench` runs them with -benchtime 3x; `go test` never does.

// scope is a testing.TB whose Cleanup runs at the end of one iteration, so
// a benchmark's scenarios do not pile up processes until it ends.
type scope struct {
	testing.TB
	cleanups []func()
}

func (s *scope) Cleanup(f func()) { s.cleanups = append(s.cleanups, f) }

func (s *scope) close() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
}

// iterate runs one scenario per iteration, each in its own scope, and
// reports the mean of every figure it returns.
func iterate(b *testing.B, scenario func(t testing.TB) map[string]float64) {
	sums := map[string]float64{}
	for range b.N {
		func() {
			s := &scope{TB: b}
			defer s.close()
			for k, v := range scenario(s) {
				sums[k] += v
			}
		}()
	}
	b.StopTimer()
	for k, v := range sums {
		b.ReportMetric(v/float64(b.N), k)
	}
	b.ReportMetric(0, "ns/op")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkFaultKill9: a provider killed with -9 under load; drop_ms is
// the time until the consumer no longer lists it (its connection closes).
func BenchmarkFaultKill9(b *testing.B) {
	iterate(b, func(t testing.TB) map[string]float64 {
		zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
		_, victim := startProvider(t, zkAddr), startProvider(t, zkAddr)
		c, r := newConsumer(t, zkAddr, 2, "")
		l := startLoad(t, c, workers, 20*time.Second, hello)
		time.Sleep(500 * time.Millisecond)
		killedAt := l.now()
		victim.signal(t, syscall.SIGKILL)
		waitFor(t, "the consumer to drop the killed provider", 10*time.Second, func() bool { return len(r.Providers()) == 1 })
		dropped := l.now() - killedAt
		time.Sleep(300 * time.Millisecond)
		all := summarize(l.calls(), nil)
		return map[string]float64{"drop_ms": ms(dropped), "failed_calls": float64(all.failed)}
	})
}

// BenchmarkFaultSigterm: a provider stopped with SIGTERM (graceful);
// unregister_ms is the time until its provider node leaves the registry.
func BenchmarkFaultSigterm(b *testing.B) {
	iterate(b, func(t testing.TB) map[string]float64 {
		zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
		_, victim := startProvider(t, zkAddr), startProvider(t, zkAddr)
		c, r := newConsumer(t, zkAddr, 2, "")
		zc := zkConn(t, zkAddr)
		l := startLoad(t, c, workers, 20*time.Second, hello)
		time.Sleep(500 * time.Millisecond)
		termAt := l.now()
		removed := sigterm(t, zc, victim)
		waitFor(t, "the consumer to drop the stopped provider", 10*time.Second, func() bool { return len(r.Providers()) == 1 })
		dropped := l.now() - termAt
		victim.wait(t, 15*time.Second)
		time.Sleep(300 * time.Millisecond)
		all := summarize(l.calls(), nil)
		return map[string]float64{"unregister_ms": ms(removed), "drop_ms": ms(dropped), "failed_calls": float64(all.failed)}
	})
}

// registries are the two registries a scenario runs against, as
// BenchmarkRegistry names them (so benchratio pairs the results).
var registries = []struct {
	name  string
	start func(t testing.TB, tick time.Duration) string
}{
	{"embedded", func(t testing.TB, tick time.Duration) string {
		return zktest.StartEmbedded(t, embeddedzk.Config{TickTime: tick})
	}},
	{"apache", func(t testing.TB, tick time.Duration) string {
		return apachezk.Start(t, apachezk.Options{TickTime: tick, DisableFsync: true}).Addr()
	}},
}

// BenchmarkFaultNodeDeleted: a provider's own provider node deleted by an
// operator; reregister_ms is the time until the provider has created it
// again, relist_ms until the consumer lists both providers again.
func BenchmarkFaultNodeDeleted(b *testing.B) {
	for _, reg := range registries {
		b.Run(reg.name, func(b *testing.B) {
			iterate(b, func(t testing.TB) map[string]float64 {
				zkAddr := reg.start(t, 0)
				_, victim := startProvider(t, zkAddr), startProvider(t, zkAddr)
				c, r := newConsumer(t, zkAddr, 2, "")
				zc := zkConn(t, zkAddr)
				leaf, err := providerNode(zc, victim.addr)
				if err != nil || leaf == "" {
					t.Fatalf("no provider node for %s (%v)", victim.addr, err)
				}
				l := startLoad(t, c, workers, 20*time.Second, hello)
				time.Sleep(500 * time.Millisecond)
				deletedAt := l.now()
				back := deleteAndWait(t, zc, leaf)
				waitFor(t, "the consumer to list both providers again", 10*time.Second, func() bool { return len(r.Providers()) == 2 })
				relisted := l.now() - deletedAt
				time.Sleep(300 * time.Millisecond)
				all := summarize(l.calls(), nil)
				return map[string]float64{"reregister_ms": ms(back), "relist_ms": ms(relisted), "failed_calls": float64(all.failed)}
			})
		})
	}
}

// BenchmarkFaultSessionExpiry: a provider's ZooKeeper traffic black-holed
// past its 1.5 s session (ticks of 250 ms); expire_ms is the time from the
// partition to the server ending the session, drop_ms to the consumer
// dropping the provider, reregister_ms from the partition's end to the
// provider registered again under a new session, relist_ms to the
// consumer listing it again.
func BenchmarkFaultSessionExpiry(b *testing.B) {
	for _, reg := range registries {
		b.Run(reg.name, func(b *testing.B) {
			iterate(b, func(t testing.TB) map[string]float64 {
				zkAddr := reg.start(t, 250*time.Millisecond)
				link := startProxy(t, zkAddr)
				victim := launchProvider(t, providerOpts{registry: "zookeeper://" + link.Addr() + "?session=1500"})
				victim.waitReady(t, 20*time.Second)
				startProvider(t, zkAddr)
				c, r := newConsumer(t, zkAddr, 2, "")
				zc := zkConn(t, zkAddr)
				oldOwner := leafOwner(t, zc, victim.addr)

				l := startLoad(t, c, workers, 30*time.Second, hello)
				time.Sleep(500 * time.Millisecond)
				pausedAt := l.now()
				link.Pause()
				waitFor(t, "the server to expire the partitioned provider's session", 15*time.Second, func() bool {
					return leafOwner(t, zc, victim.addr) == 0
				})
				expired := l.now() - pausedAt
				waitFor(t, "the consumer to drop the expired provider", 5*time.Second, func() bool { return len(r.Providers()) == 1 })
				dropped := l.now() - pausedAt
				time.Sleep(200 * time.Millisecond)
				healedAt := l.now()
				link.Resume()
				waitFor(t, "the provider to register again under a new session", 15*time.Second, func() bool {
					o := leafOwner(t, zc, victim.addr)
					return o != 0 && o != oldOwner
				})
				reregistered := l.now() - healedAt
				waitFor(t, "the consumer to list the provider again", 5*time.Second, func() bool { return len(r.Providers()) == 2 })
				relisted := l.now() - healedAt
				all := summarize(l.calls(), nil)
				return map[string]float64{"expire_ms": ms(expired), "drop_ms": ms(dropped),
					"reregister_ms": ms(reregistered), "relist_ms": ms(relisted), "failed_calls": float64(all.failed)}
			})
		})
	}
}

// BenchmarkFaultRegistryRestart: `dubbo run --role=registry` killed with -9
// under load, down 3 s while a new provider starts, then started again on
// its data dir. restart_ms is from launch to the first ruok answer,
// found_ms from launch until the consumer lists the new provider,
// sessions_kept how many of the two old providers' sessions survived.
func BenchmarkFaultRegistryRestart(b *testing.B) {
	if _, err := dubbo.Path(); err != nil {
		b.Fatal(err)
	}
	iterate(b, func(t testing.TB) map[string]float64 {
		reg := startRegistryProc(t)
		a, old := startProvider(t, reg.addr), startProvider(t, reg.addr)
		c, r := newConsumer(t, reg.addr, 2, "")
		zc := zkConn(t, reg.addr)
		owners := map[string]int64{a.addr: leafOwner(t, zc, a.addr), old.addr: leafOwner(t, zc, old.addr)}
		zc.Close()

		l := startPacedLoad(t, c, workers, 30*time.Second, time.Millisecond, hello)
		time.Sleep(500 * time.Millisecond)
		reg.kill(t)
		late := launchProvider(t, providerOpts{registry: "zookeeper://" + reg.addr})
		time.Sleep(3 * time.Second)
		launched := time.Now()
		reg.start(t)
		restarted := time.Since(launched)
		late.waitReady(t, 30*time.Second)
		waitFor(t, "the consumer to find the provider started during the outage", 20*time.Second, func() bool {
			return len(r.Providers()) == 3
		})
		found := time.Since(launched)
		zc = zkConn(t, reg.addr)
		kept := 0
		for addr, owner := range owners {
			if leafOwner(t, zc, addr) == owner {
				kept++
			}
		}
		all := summarize(l.calls(), nil)
		return map[string]float64{"restart_ms": ms(restarted), "found_ms": ms(found),
			"sessions_kept": float64(kept), "failed_calls": float64(all.failed)}
	})
}
