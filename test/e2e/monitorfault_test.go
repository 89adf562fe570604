package e2e

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMonitorKilledAndFrozen runs each role as its own process (registry,
// monitor, a provider; dubbo bench as the consumer), statistics every
// second, and checks that the monitor costs calls nothing:
//
//   - killed with -9 and restarted under load: no call fails, every call
//     is one success in the consumers' rows and every attempt is counted
//     once on each side (what was sent while it was down waited in the
//     nodes' buffers; what was sent again after a lost answer is stored
//     once);
//   - frozen (SIGSTOP): the calls' p99 stays within 10% of its values with
//     the monitor running (alternating rounds), and every call is counted
//     once on each side once it runs again (what a bench could not send
//     before it exited, it spooled for the next).
func TestMonitorKilledAndFrozen(t *testing.T) {
	e := rolesApart(t)
	dir, p := e.dir, e.p
	mon := e.startMonitor("monitor")
	prov := startNode(t, "provider", dir, "run", "--role=provider", "-c", e.cfg)
	warmUp(t, dir, p, 1)
	var made int64

	t.Run("kill -9 and restart under load", func(t *testing.T) {
		done := make(chan benchSummary, 1)
		go func() {
			var s benchSummary
			r, err := runDubbo(dir, "bench", "--registry", p.registryURL(), "-d", "7s", "-c", "8", "--version", "1.0.0",
				"org.example.Greeter", "sayHello", `"load"`)
			if err == nil {
				err = json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &s)
			}
			if err != nil {
				t.Errorf("dubbo bench: %v (%s)", err, r.stderr)
			}
			done <- s
		}()
		time.Sleep(2 * time.Second)
		kill9(t, mon)
		time.Sleep(2 * time.Second)
		mon = e.startMonitor("monitor, restarted")
		s := <-done
		if s.Calls == 0 || s.Errors != 0 {
			t.Fatalf("under load with the monitor killed: %d of %d calls failed: %v", s.Errors, s.Calls, s.ErrorsByKind)
		}
		made += s.Calls
		waitProviders(t, p, waitConsumers(t, p, made, 20*time.Second), 20*time.Second)
		t.Logf("%d calls under load, all counted once on each side", s.Calls)
	})

	t.Run("frozen", func(t *testing.T) {
		// Rounds alternate between a running and a frozen monitor, so that
		// the machine's drift hits both alike. A bench that ends while the
		// monitor is frozen gives it monitor's close timeout, spools what
		// it did not take and exits; the next bench sends the spool.
		var normal, frozen []int64
		for i := range 7 {
			freeze := i%2 == 1
			if freeze {
				if err := syscall.Kill(mon.pid(), syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
			}
			s := benchCalls(t, dir, p, "-n", "5000", "-c", "8")
			if freeze {
				if err := syscall.Kill(mon.pid(), syscall.SIGCONT); err != nil {
					t.Fatal(err)
				}
				frozen = append(frozen, s.P99us)
			} else {
				normal = append(normal, s.P99us)
			}
			made += s.Calls
		}
		t.Logf("p99 with the monitor running %v µs, frozen %v µs", normal, frozen)
		// On this shared machine one round's p99 moves by a quarter from
		// the next; a monitor that held calls up would cost them its
		// timeouts (a second). The frozen rounds' median must stay within
		// 10% of what the running rounds spanned.
		sort.Slice(frozen, func(i, j int) bool { return frozen[i] < frozen[j] })
		if med, worst := frozen[len(frozen)/2], slices.Max(normal); med > worst*110/100 {
			t.Errorf("median p99 with the monitor frozen %d µs: more than 10%% above the running rounds' %v", med, normal)
		}
		// The bench of a frozen round spooled its last report, which the
		// next round's bench sent; the provider kept its own until the
		// monitor was back: both sides hold every call, once.
		waitProviders(t, p, waitConsumers(t, p, made, 20*time.Second), 20*time.Second)
	})

	if code := prov.stop(t); code != 0 {
		t.Errorf("provider exited %d", code)
	}
}

// apart is an environment whose roles run as processes of their own, with
// statistics every second: a registry, started, and the monitor and
// provider the test starts.
type apart struct {
	t   *testing.T // the test, whose end stops the processes
	dir string
	p   ports
	cfg string // the config file every process reads
}

// rolesApart starts the registry of a new environment.
func rolesApart(t *testing.T) *apart {
	t.Helper()
	e := &apart{t: t, dir: t.TempDir(), p: freePorts(t, 1)}
	e.cfg = writeConfig(t, e.dir, e.p, setup{providerPlugins: []string{"greeter"}, extra: "\n[monitor]\ninterval = \"1s\"\n"})
	startNode(t, "registry", e.dir, "run", "--role=registry", "-c", e.cfg)
	if _, ok := waitFor(20*time.Second, func() bool {
		out, err := fourLetter(e.p.registryURL()[len("zookeeper://"):], "ruok")
		return err == nil && out == "imok"
	}); !ok {
		t.Fatal("the registry did not answer ruok within 20s")
	}
	return e
}

// startMonitor starts the monitor role, for the rest of the test (not of
// a subtest), and waits until it serves its statistics API.
func (e *apart) startMonitor(name string) *node {
	t := e.t
	t.Helper()
	m := startNode(t, name, e.dir, "run", "--role=monitor", "-c", e.cfg)
	if _, ok := waitFor(20*time.Second, func() bool {
		_, err := stats(e.p, "provider", "sayHello")
		return err == nil || m.exited()
	}); !ok || m.exited() {
		t.Fatalf("%s did not serve its stats API within 20s", name)
	}
	return m
}

// kill9 kills n with SIGKILL and reaps it.
func kill9(t *testing.T, n *node) {
	t.Helper()
	if err := syscall.Kill(n.pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	n.stop(t)
}
