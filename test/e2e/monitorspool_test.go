package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMonitorGoneWhenBenchExits runs each role as its own process
// (registry, monitor, a provider; dubbo bench as a short-lived consumer),
// statistics every second, and checks that a node leaving while the
// monitor is away loses nothing of what it counted:
//
//   - a fixed number of calls (dubbo bench -n) with the monitor killed -9
//     during the run and restarted on its port 3 s later: bench's closing
//     reporter tries the restarting monitor again until its close timeout
//     (it does not take the dead connection for "no monitor"), and what it
//     still cannot send waits in the spool for the next process;
//   - the monitor killed before a bench and still down when it exits:
//     bench spools its reports under the data directory; the monitor,
//     started again, stores them.
//
// In both, the consumers' rows hold exactly the calls made, and the
// provider's every attempt, once.
func TestMonitorGoneWhenBenchExits(t *testing.T) {
	e := rolesApart(t)
	dir, p := e.dir, e.p
	spool := filepath.Join(dir, "data", "spool")
	runBench := func(n string) (benchSummary, string) {
		r, err := runDubbo(dir, "bench", "--registry", p.registryURL(), "-n", n, "-c", "4", "--version", "1.0.0",
			"org.example.Greeter", "sayHello", `"load"`)
		var s benchSummary
		if err == nil {
			err = json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &s)
		}
		if err != nil {
			t.Errorf("dubbo bench: %v (%s)", err, r.stderr)
		}
		return s, r.stderr
	}
	mon := e.startMonitor("monitor")
	startNode(t, "provider", dir, "run", "--role=provider", "-c", e.cfg)
	warmUp(t, dir, p, 1)
	var made int64

	t.Run("killed -9 and restarted during the run", func(t *testing.T) {
		done := make(chan benchSummary, 1)
		var stderr string
		go func() {
			s, e := runBench("40000")
			stderr = e
			done <- s
		}()
		time.Sleep(1500 * time.Millisecond)
		kill9(t, mon)
		time.Sleep(3 * time.Second)
		mon = e.startMonitor("monitor, restarted")
		s := <-done
		if s.Calls != 40000 || s.Errors != 0 {
			t.Fatalf("bench with the monitor killed: %d of %d calls failed: %v", s.Errors, s.Calls, s.ErrorsByKind)
		}
		made += s.Calls
		how := "sent by bench to the restarted monitor"
		if strings.Contains(stderr, "are spooled") {
			// bench was done before the monitor was back within its close
			// timeout (a fast run): it spooled what it could not send, and
			// the next process started with this data directory sends it.
			if r, err := runDubbo(dir, "call", "--registry", p.registryURL(), "--version", "1.0.0",
				"org.example.Greeter", "sayHello", `"spool"`); err != nil {
				t.Fatalf("dubbo call after bench spooled: %v (%s)", err, r.stderr)
			}
			made++
			how = "spooled by bench, sent by the next dubbo call"
		}
		waitProviders(t, p, waitConsumers(t, p, made, 30*time.Second), 30*time.Second)
		t.Logf("%d calls, the monitor killed and restarted meanwhile: all counted once on each side (%s)", s.Calls, how)
	})

	t.Run("down when bench exits, then started", func(t *testing.T) {
		kill9(t, mon)
		s, stderr := runBench("5000")
		if s.Calls != 5000 || s.Errors != 0 {
			t.Fatalf("bench with the monitor down: %d of %d calls failed: %v", s.Errors, s.Calls, s.ErrorsByKind)
		}
		made += s.Calls
		files, _ := filepath.Glob(filepath.Join(spool, "*.report"))
		if len(files) == 0 || !strings.Contains(stderr, "spooled") || strings.Contains(stderr, "not sent") {
			t.Fatalf("bench left %d reports in %s; its stderr:\n%s", len(files), spool, lastLines(stderr, 20))
		}
		mon = e.startMonitor("monitor, started after bench")
		waitProviders(t, p, waitConsumers(t, p, made, 30*time.Second), 30*time.Second)
		if _, ok := waitFor(10*time.Second, func() bool {
			files, _ := filepath.Glob(filepath.Join(spool, "*.report"))
			return len(files) == 0
		}); !ok {
			entries, _ := os.ReadDir(spool)
			t.Errorf("the spool still holds %v once stored", entries)
		}
		t.Logf("%d calls while the monitor was down: bench spooled %d reports, the monitor stored them", s.Calls, len(files))
	})
}
