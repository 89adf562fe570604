package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/child"
)

// TestGreeterPluginKilled kills the greeter plugin process of one of two
// providers while callers keep calling: no call may wait for its timeout,
// failover must keep nearly every call succeeding, and the node must
// restart the plugin so that its provider serves again.
func TestGreeterPluginKilled(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 2)
	cfg := writeConfig(t, dir, p, setup{replicas: 2, providerPlugins: []string{"greeter"}, references: []string{"org.example.Greeter"}})
	up := startNode(t, "dubbo up", dir, "up", "-c", cfg)
	waitServing(t, dir, p, 2)

	victim := pluginPID(t, up, 1)
	if !alive(victim) {
		t.Fatalf("the terminal says replica 1's greeter is pid %d, which is not running", victim)
	}

	// Load through the registry (failover, retries 2), and load aimed at
	// the victim's provider alone, which cannot fail over.
	const timeout = time.Second
	viaRegistry := startBench(t, dir, "--registry", p.registryURL(), "-c", "4", "-d", "3s", "--timeout", timeout.String())
	direct := startBench(t, dir, "--url", "dubbo://"+p.providerAddr(0), "-c", "2", "-d", "3s", "--timeout", timeout.String())
	time.Sleep(time.Second)
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", victim, err)
	}
	killed := time.Now()
	// The node restarts the plugin, under load.
	restarted, ok := waitFor(10*time.Second, func() bool {
		pid, found := latestPluginPID(up, 1)
		return found && pid != victim && alive(pid)
	})
	if !ok {
		t.Fatalf("replica 1's greeter was not restarted within 10s of the kill")
	}
	t.Logf("the node restarted the plugin %v after the kill", restarted.Round(time.Millisecond))

	reg, dir1 := viaRegistry.wait(t), direct.wait(t)
	t.Logf("through the registry: %d calls, %d errors %v, max %v, by provider %v",
		reg.Calls, reg.Errors, reg.ErrorsByKind, time.Duration(reg.MaxUs)*time.Microsecond, reg.ByProvider)
	t.Logf("straight at %s: %d calls, %d errors %v, max %v",
		p.providerAddr(0), dir1.Calls, dir1.Errors, dir1.ErrorsByKind, time.Duration(dir1.MaxUs)*time.Microsecond)
	// Failing fast: a call that waited out its timeout would show as a
	// maximum near 1s and as timeout errors.
	limit := timeout * 8 / 10
	for _, s := range []struct {
		name string
		b    benchSummary
	}{{"through the registry", reg}, {"straight at the victim's provider", dir1}} {
		if got := time.Duration(s.b.MaxUs) * time.Microsecond; got >= limit {
			t.Errorf("%s: the slowest call took %v; calls to a provider whose plugin died must fail fast, not near the %v timeout", s.name, got, timeout)
		}
		if s.b.ErrorsByKind["timeout"] > 0 {
			t.Errorf("%s: %d calls timed out", s.name, s.b.ErrorsByKind["timeout"])
		}
	}
	if reg.Calls == 0 || reg.Errors*100 > reg.Calls {
		t.Errorf("through the registry: %d of %d calls failed; failover should carry nearly all of them to the other provider", reg.Errors, reg.Calls)
	}

	// Its provider serves again.
	back, ok := waitFor(10*time.Second, func() bool {
		s := bench(t, dir, "--registry", p.registryURL(), "-n", "100", "-c", "4")
		return s.Errors == 0 && s.ByProvider[p.providerAddr(0)] > 0 && s.ByProvider[p.providerAddr(1)] > 0
	})
	if !ok {
		t.Fatalf("provider %s did not serve again within 10s of the restart", p.providerAddr(0))
	}
	t.Logf("both providers serve again %v after the kill (%v of polling)", time.Since(killed).Round(time.Millisecond), back.Round(time.Millisecond))
	if n := len(up.pluginPIDs("greeter")); n != 2 {
		t.Errorf("%d greeter processes after the restart, want 2", n)
	}
}

// What dubbo up's terminal says of the greeter's processes: its status
// block's line, and the changes that name a new process.
var (
	greeterStatus  = regexp.MustCompile(`^plugin     \S*/greeter   (.*)   serves `)
	statusPID      = regexp.MustCompile(`provider (\d+) pid (\d+)`)
	greeterChanged = regexp.MustCompile(`^\S+ (?:up        greeter \(provider (\d+)\): pid (\d+),|swapped   greeter \(provider (\d+)\): pid \d+ → (\d+),)`)
)

// latestPluginPID is the pid of the greeter that the node's terminal last
// said serves provider replica (1-based).
func latestPluginPID(n *node, replica int) (int, bool) {
	pid, found := 0, false
	take := func(r, p string) {
		if r == fmt.Sprint(replica) {
			fmt.Sscan(p, &pid)
			found = true
		}
	}
	for _, line := range strings.Split(n.stdout.String(), "\n") {
		if m := greeterStatus.FindStringSubmatch(line); m != nil {
			for _, e := range statusPID.FindAllStringSubmatch(m[1], -1) {
				take(e[1], e[2])
			}
		} else if m := greeterChanged.FindStringSubmatch(line); m != nil {
			take(m[1]+m[3], m[2]+m[4])
		}
	}
	return pid, found
}

func pluginPID(t *testing.T, n *node, replica int) int {
	t.Helper()
	pid, ok := latestPluginPID(n, replica)
	if !ok {
		t.Fatalf("the node's terminal names no greeter process for replica %d", replica)
	}
	return pid
}

// runningBench is a `dubbo bench` in the background.
type runningBench struct {
	cmd    *exec.Cmd
	stdout strings.Builder
	stderr strings.Builder
}

// startBench starts `dubbo bench` of sayHello("world") with flags.
func startBench(t *testing.T, dir string, flags ...string) *runningBench {
	t.Helper()
	return startBenchOf(t, dir, slices.Concat(flags, []string{"--version", "1.0.0", "org.example.Greeter", "sayHello", `"world"`})...)
}

// startBenchOf starts `dubbo bench args...` in dir; it is killed when the
// test ends if it still runs.
func startBenchOf(t *testing.T, dir string, args ...string) *runningBench {
	t.Helper()
	b := &runningBench{cmd: exec.Command(binary("dubbo"), append([]string{"bench"}, args...)...)}
	b.cmd.Dir, b.cmd.Env = dir, child.Env()
	b.cmd.Stdout, b.cmd.Stderr = &b.stdout, &b.stderr
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if b.cmd.ProcessState == nil {
			_ = b.cmd.Process.Kill()
			_ = b.cmd.Wait()
		}
	})
	return b
}

// stop ends the bench as Ctrl-C does (its calls in flight then are not
// counted) and decodes its summary.
func (b *runningBench) stop(t *testing.T) benchSummary {
	t.Helper()
	if err := b.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatalf("dubbo bench: %v: %s", err, b.stderr.String())
	}
	return b.wait(t)
}

// wait waits for the bench (its own -d bounds it) and decodes its summary.
func (b *runningBench) wait(t *testing.T) benchSummary {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- b.cmd.Wait() }()
	var code int
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("dubbo bench: %v: %s", err, b.stderr.String())
		}
	case <-time.After(30 * time.Second):
		_ = b.cmd.Process.Kill()
		t.Fatalf("dubbo bench still running after 30s")
	}
	return benchResult(t, result{stdout: b.stdout.String(), stderr: b.stderr.String(), code: code})
}
