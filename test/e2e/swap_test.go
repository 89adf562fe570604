package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/transport"
)

// The handler author's loop (dubbo up swaps in each new build of a plugin,
// and with --watch builds it on save), measured: calls under load while the
// example Greeter is swapped, the time from a new binary on disk (or a
// saved source) to the first call it serves, and a new build that exits at
// once.

// greeterModule writes a handler author's module in dir/greeter holding
// examples/greeter's main.go (it requires this checkout, by a replace) and
// returns the path of its main.go; its binary is dir/greeter/greeter, as
// in the modules `dubbo new handler` writes.
func greeterModule(t *testing.T, dir string) string {
	t.Helper()
	mod := filepath.Join(dir, "greeter")
	checkoutModule(t, mod, "swap.example/greeter")
	copyFile(t, filepath.Join("../..", "examples", "greeter", "main.go"), filepath.Join(mod, "main.go"), 0o644)
	return filepath.Join(mod, "main.go")
}

// greeting is the line of examples/greeter's sayHello, and what a test's
// edit makes it.
const greeting, newGreeting = `return "Hello, " + name, nil`, `return "Hello again, " + name, nil`

// goBuild builds the module's binary to out, offline, as a user's go build.
func goBuild(t *testing.T, mainGo, out string) {
	t.Helper()
	if o, err := shell(filepath.Dir(mainGo), offline(), "go build -o "+strconv.Quote(out)+" ."); err != nil {
		t.Fatalf("go build: %v\n%s", err, o)
	}
}

// install puts a copy of the binary at from at path as a build does:
// written beside it, renamed over it. It returns when it was in place.
func install(t *testing.T, from, path string) time.Time {
	t.Helper()
	copyFile(t, from, path+".tmp", 0o755)
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// prober calls sayHello("x") straight at one provider, over and over.
type prober struct {
	c *transport.Client
}

func newProber(t *testing.T, addr string) *prober {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, addr, transport.ClientConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &prober{c}
}

func (p *prober) say() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := p.c.Invoke(ctx, &rpc.Invocation{Service: "org.example.Greeter", Version: "1.0.0", Method: "sayHello",
		ParamTypes: []string{"java.lang.String"}, Args: []any{"x"}})
	if err != nil {
		return "", err
	}
	s, _ := res.Value.(string)
	return s, nil
}

// await calls every 5ms until the answer is want, and returns when it
// came; it fails t after within, or on a failed call.
func (p *prober) await(t *testing.T, want string, within time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got, err := p.say()
		if err != nil {
			t.Fatalf("sayHello failed while waiting for %q: %v", want, err)
		}
		if got == want {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("sayHello still answers %q %v later, want %q", got, within, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// providerNode is the one provider node of org.example.Greeter and its
// creation id, which a re-registration changes.
func providerNode(t *testing.T, zc *zk.Conn) (string, int64) {
	t.Helper()
	const path = "/dubbo/org.example.Greeter/providers"
	kids, _, err := zc.Children(path)
	if err != nil || len(kids) != 1 {
		t.Fatalf("providers of org.example.Greeter: %v (%v), want one", kids, err)
	}
	_, st, err := zc.Exists(path + "/" + kids[0])
	if err != nil {
		t.Fatal(err)
	}
	return kids[0], st.Czxid
}

func durations(ds []time.Duration) (p50, max time.Duration) {
	s := slices.Sorted(slices.Values(ds))
	return s[len(s)/2], s[len(s)-1]
}

// TestSwapUnderLoad swaps the example Greeter's binary 10 times (two
// builds, one answering "Hello again, ", in turn) while `dubbo bench -c 32`
// calls it through the registry: no call fails, each new binary serves
// within a second of being put in place, the p99 latency of the run with
// the swaps stays within twice that of the runs without, and the provider
// stays registered as it was.
func TestSwapUnderLoad(t *testing.T) {
	dir := t.TempDir()
	mainGo := greeterModule(t, dir)
	plugin := filepath.Join(dir, "greeter", "greeter")
	builds := []string{filepath.Join(dir, "greeter.v1"), filepath.Join(dir, "greeter.v2")}
	goBuild(t, mainGo, builds[0])
	replaceInFile(t, mainGo, greeting, newGreeting)
	goBuild(t, mainGo, builds[1])
	install(t, builds[0], plugin)

	p := freePorts(t, 1)
	cfg := pluginConfig(t, dir, p, []string{plugin}, nil)
	up := startNode(t, "dubbo up", dir, "up", "-c", cfg)
	waitServing(t, dir, p, 1)
	zc, _, err := zk.Connect([]string{fmt.Sprintf("127.0.0.1:%d", p.registry)}, 10*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	node, czxid := providerNode(t, zc)
	probe := newProber(t, p.providerAddr(0))

	load := func() *runningBench {
		return startBench(t, dir, "--registry", p.registryURL(), "-c", "32", "-d", "5s")
	}
	steady := []benchSummary{load().wait(t)}
	b := load()
	answers := []string{"Hello, x", "Hello again, x"}
	var served []time.Duration
	time.Sleep(300 * time.Millisecond)
	for i := 1; i <= 10; i++ {
		installed := install(t, builds[i%2], plugin)
		served = append(served, probe.await(t, answers[i%2], 5*time.Second).Sub(installed))
		time.Sleep(100 * time.Millisecond)
	}
	swapping := b.wait(t)
	steady = append(steady, load().wait(t))

	p50, maxServed := durations(served)
	steadyP99 := time.Duration(steady[0].P99us+steady[1].P99us) * time.Microsecond / 2
	swapP99 := time.Duration(swapping.P99us) * time.Microsecond
	t.Logf("new binary on disk to its first call served, over 10 swaps: p50 %v, max %v (%v)", p50, maxServed, served)
	t.Logf("dubbo bench -c 32: steady %d and %d calls/s, p99 %v and %v; during 10 swaps %d calls/s, p99 %v (%.2fx), %d failed of %d",
		int(steady[0].QPS), int(steady[1].QPS), time.Duration(steady[0].P99us)*time.Microsecond, time.Duration(steady[1].P99us)*time.Microsecond,
		int(swapping.QPS), swapP99, float64(swapP99)/float64(steadyP99), swapping.Errors, swapping.Calls)
	if swapping.Errors != 0 {
		t.Errorf("%d of %d calls failed during the swaps: %v", swapping.Errors, swapping.Calls, swapping.ErrorsByKind)
	}
	if maxServed >= time.Second {
		t.Errorf("a new binary served its first call %v after it was put in place, want under 1s", maxServed)
	}
	if swapP99 > 2*steadyP99 {
		t.Errorf("p99 during the swaps %v, more than twice the steady %v", swapP99, steadyP99)
	}
	if n, c := providerNode(t, zc); n != node || c != czxid {
		t.Errorf("the provider was registered again (%s), want its node untouched by swaps that changed no setting", n)
	}
	if got := strings.Count(up.stdout.String(), "registrations unchanged"); got != 10 {
		t.Errorf("dubbo up printed %d swaps with the registrations unchanged, want 10:\n%s", got, up.stdout.String())
	}
}

// TestSwapCrashLoop: a new build that exits at once never takes a call
// from the running one: calls under load all succeed, it is tried again
// with growing waits, and the terminal says so once.
func TestSwapCrashLoop(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "plugin", "greeter")
	install(t, binary("greeter"), plugin)
	p := freePorts(t, 1)
	cfg := pluginConfig(t, dir, p, []string{plugin}, nil)
	up := startNode(t, "dubbo up", dir, "up", "-c", cfg)
	waitServing(t, dir, p, 1)

	b := startBench(t, dir, "--registry", p.registryURL(), "-c", "8", "-d", "5s")
	time.Sleep(500 * time.Millisecond)
	crash, attempts := shellPlugin(t, dir, "crash.sh", "echo $$ >> PIDS\necho 'panic: nil map' >&2\nexit 2\n")
	install(t, crash, plugin)
	s := b.wait(t)
	if s.Errors != 0 {
		t.Errorf("%d of %d calls failed with a crashing build on disk: %v", s.Errors, s.Calls, s.ErrorsByKind)
	}
	// 100ms, then 200, 400, 800, 1600: 5 or 6 attempts in the 4.5s.
	if n := len(pidsIn(t, attempts)); n < 3 || n > 8 {
		t.Errorf("the crashing build was started %d times in 4.5s, want a few, with growing waits", n)
	}
	out := up.stdout.String()
	refused := regexp.MustCompile(`(?m)^\S+ refused   greeter \(provider 1\): pid \d+ serves on; the new binary did not start: .*exited with status 2 before the handshake; its stderr ended with: panic: nil map$`)
	if n := len(refused.FindAllString(out, -1)); n != 1 {
		t.Errorf("dubbo up printed the refusal %d times, want once:\n%s", n, out)
	}
	if r := call(t, dir, p, "org.example.Greeter", "sayHello", `"still"`); strings.TrimSpace(r.stdout) != `"Hello, still"` {
		t.Errorf("sayHello after the crashing build: %q %s", r.stdout, r.stderr)
	}
}

// TestWatchRebuilds runs `dubbo up --watch` on a handler author's module:
// it builds the missing binary at start, and each save of main.go is
// built and served, within go build's own time plus a second; a save that
// does not compile prints the compiler's error, path and line, and the
// running build serves on.
func TestWatchRebuilds(t *testing.T) {
	dir := t.TempDir()
	mainGo := greeterModule(t, dir)
	p := freePorts(t, 1)
	cfg := pluginConfig(t, dir, p, []string{"greeter/greeter"}, nil)
	up := startNodeEnv(t, "dubbo up --watch", dir, offlineGo, "up", "--watch", "-c", cfg)
	if _, ok := waitFor(60*time.Second, func() bool { return strings.Contains(up.stdout.String(), "ready") || up.exited() }); !ok || up.exited() {
		t.Fatalf("dubbo up --watch did not get ready within 60s")
	}
	out := up.stdout.String()
	for _, want := range []string{"build      greeter/greeter   built in ", "watch      greeter/greeter   go build on each save of its sources (greeter/)"} {
		if !strings.Contains(out, want) {
			t.Errorf("dubbo up --watch printed no %q:\n%s", want, out)
		}
	}
	probe := newProber(t, p.providerAddr(0))
	probe.await(t, "Hello, x", 10*time.Second)

	built := regexp.MustCompile(`(?m)^\S+ build     greeter/greeter: built in (\S+)$`)
	edit := func(old, new, answer string) {
		t.Helper()
		builds := len(built.FindAllString(up.stdout.String(), -1))
		replaceInFile(t, mainGo, old, new)
		saved := time.Now()
		servedAt := probe.await(t, answer, 60*time.Second)
		var m [][]string
		if _, ok := waitFor(5*time.Second, func() bool { m = built.FindAllStringSubmatch(up.stdout.String(), -1); return len(m) > builds }); !ok {
			t.Fatalf("no build line after the save:\n%s", up.stdout.String())
		}
		took, err := time.ParseDuration(m[len(m)-1][1])
		if err != nil {
			t.Fatal(err)
		}
		served := servedAt.Sub(saved)
		t.Logf("saved to served %v: go build %v, the rest %v", served.Round(time.Millisecond), took, (served - took).Round(time.Millisecond))
		if served-took >= time.Second {
			t.Errorf("the save was served %v after it, %v more than go build's %v; want under 1s more", served, served-took, took)
		}
	}
	edit(greeting, newGreeting, "Hello again, x")

	// A save that does not compile.
	broken := strings.Replace(newGreeting, "+ name", "+ nam", 1)
	replaceInFile(t, mainGo, newGreeting, broken)
	failed := regexp.MustCompile(`(?m)^\S+ build     greeter/greeter: failed in \S+; the running plugin serves on\n# swap.example/greeter\ngreeter/main.go:\d+:\d+: undefined: nam$`)
	if _, ok := waitFor(60*time.Second, func() bool { return failed.MatchString(up.stdout.String()) }); !ok {
		t.Fatalf("dubbo up --watch printed no compiler error naming greeter/main.go:\n%s", up.stdout.String())
	}
	if got, err := probe.say(); err != nil || got != "Hello again, x" {
		t.Errorf("after a failed build sayHello = %q, %v; want the running build's answer", got, err)
	}
	edit(broken, greeting, "Hello, x")
}
