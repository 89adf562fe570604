//go:build soak && unix

package soak

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/loadgen"
	"github.com/dubbo-lab/dubbo/node/url"
)

const (
	greeter   = "org.example.Greeter"
	providers = "/dubbo/" + greeter + "/providers"
	nProv     = 3
)

// Bounds on growth between the start (after the warm-up) and the end of
// the run, for every process: RSS at most 1.5x its start plus 32 MB,
// goroutines at most 1.5x their start plus 32 (connections and calls in
// flight come and go with the load and the faults; a leak grows past it).
func rssBound(start float64) float64 { return 1.5*start + 32 }
func goroutineBound(start int) int   { return start*3/2 + 32 }

// settings of the run, from the environment.
type settings struct {
	duration, every time.Duration
	rps             int
	seed            uint64
}

func loadSettings(t *testing.T) settings {
	s := settings{duration: 30 * time.Minute, every: time.Minute, rps: 300, seed: uint64(time.Now().UnixNano())}
	for _, v := range []struct {
		env string
		dst *time.Duration
	}{{"SOAK_DURATION", &s.duration}, {"SOAK_FAULT_EVERY", &s.every}} {
		if s := os.Getenv(v.env); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				t.Fatalf("%s=%q: want a positive duration (%v)", v.env, s, err)
			}
			*v.dst = d
		}
	}
	if v := os.Getenv("SOAK_RPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("SOAK_RPS=%q: want a positive rate", v)
		}
		s.rps = n
	}
	if v := os.Getenv("SOAK_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("SOAK_SEED=%q: %v", v, err)
		}
		s.seed = n
	}
	if s.duration < 2*s.every {
		t.Fatalf("SOAK_DURATION %v: want at least two fault periods (SOAK_FAULT_EVERY %v)", s.duration, s.every)
	}
	return s
}

// env is the running system.
type env struct {
	registry string // host:port
	console  string // host:port of the monitor's HTTP server
	up       *proc
	provs    []*proc
	bench    *proc
	benchDir string
	benchQoS string
	deadline time.Time
	rps      int

	rounds []benchSummary // of the bench processes that ended
}

// benchSummary is the JSON line `dubbo bench` prints.
type benchSummary = loadgen.Summary

func TestSoak(t *testing.T) {
	s := loadSettings(t)
	t.Logf("soak: %v, a fault every %v, %d calls/s, seed %d (SOAK_SEED)", s.duration, s.every, s.rps, s.seed)
	e := startEnv(t, s)

	// Warm-up: the load reaches every provider, then the start figures.
	time.Sleep(15 * time.Second)
	before := e.usage()

	rng := rand.New(rand.NewPCG(s.seed, 0))
	order := rng.Perm(len(faults))
	var log []string
	for i := 1; ; i++ {
		at := e.deadline.Add(-s.duration).Add(time.Duration(i) * s.every)
		if at.After(e.deadline.Add(-20 * time.Second)) {
			break
		}
		time.Sleep(time.Until(at))
		f := faults[order[(i-1)%len(order)]]
		victim := rng.IntN(nProv)
		what := f.run(t, e, victim)
		line := fmt.Sprintf("%s fault %d: %s: %s", time.Now().UTC().Format("15:04:05"), i, f.name, what)
		t.Log(line)
		log = append(log, line)
	}

	time.Sleep(time.Until(e.deadline.Add(-5 * time.Second)))
	after := e.usage()
	if !e.bench.wait(30 * time.Second) {
		t.Fatalf("dubbo bench still running 25 s after its duration")
	}
	e.endRound(t)

	var made, failed int64
	for _, r := range e.rounds {
		made += r.Calls
		failed += r.Errors
	}
	// Every process stops gracefully: each sends its last, partial
	// interval to the monitor.
	for _, p := range e.provs {
		p.stop(t, syscall.SIGTERM)
	}
	stored, storedFail, provStored := e.waitStored(t, made-failed, 30*time.Second)

	t.Logf("faults (%d): \n  %s", len(log), strings.Join(log, "\n  "))
	t.Logf("calls made %d, failed %d (%d bench processes); stored in the monitor: %d successful and %d failed attempts on the consumers' side, %d successful on the providers' side",
		made, failed, len(e.rounds), stored, storedFail, provStored)
	for i, r := range e.rounds {
		t.Logf("  bench %d: %d calls, %d errors %v, %.0f calls/s, p99 %d µs, max %d µs, by provider %v",
			i+1, r.Calls, r.Errors, r.ErrorsByKind, r.QPS, r.P99us, r.MaxUs, r.ByProvider)
	}
	t.Logf("process                  pid→pid        RSS MB start→end (bound)   goroutines start→end (bound)   threads")
	for _, name := range sortedNames(before) {
		b, a := before[name], after[name]
		g := "-"
		if b.goroutines >= 0 && a.goroutines >= 0 {
			g = fmt.Sprintf("%d→%d (%d)", b.goroutines, a.goroutines, goroutineBound(b.goroutines))
		}
		t.Logf("%-24s %6d→%-6d  %6.1f→%-6.1f (%.0f)           %-26s     %d→%d",
			name, b.pid, a.pid, b.rssMB, a.rssMB, rssBound(b.rssMB), g, b.threads, a.threads)
		if a.pid == 0 {
			t.Errorf("%s: not running at the end", name)
			continue
		}
		if a.rssMB > rssBound(b.rssMB) {
			t.Errorf("%s: RSS grew from %.1f to %.1f MB, past the bound %.0f MB", name, b.rssMB, a.rssMB, rssBound(b.rssMB))
		}
		if b.goroutines >= 0 && a.goroutines > goroutineBound(b.goroutines) {
			t.Errorf("%s: goroutines grew from %d to %d, past the bound %d", name, b.goroutines, a.goroutines, goroutineBound(b.goroutines))
		}
	}

	if made < int64(s.duration.Seconds())*int64(s.rps)/2 {
		t.Errorf("only %d calls in %v at %d calls/s: the load did not run", made, s.duration, s.rps)
	}
	if failed != 0 {
		t.Errorf("%d of %d calls failed", failed, made)
	}
	if stored != made-failed {
		t.Errorf("the monitor stores %d successful calls on the consumers' side; %d were made (%d failed)", stored, made, failed)
	}
}

// startEnv starts dubbo up, the providers and the load.
func startEnv(t *testing.T, s settings) *env {
	ports := freePorts(t, 5+2*nProv)
	reg, mon, console, upQoS, benchQoS := ports[0], ports[1], ports[2], ports[3], ports[4]
	e := &env{registry: fmt.Sprintf("127.0.0.1:%d", reg), console: fmt.Sprintf("127.0.0.1:%d", console), rps: s.rps}
	common := func(dir, app string, qos int) string {
		return fmt.Sprintf("data-dir = %q\n\n[application]\nname = %q\n\n[registry]\naddress = \"zookeeper://%s\"\n\n"+
			"[monitor]\ninterval = \"1s\"\n\n[qos]\nlisten = \"127.0.0.1:%d\"\n\n",
			filepath.Join(dir, "data"), app, e.registry, qos)
	}

	dir := t.TempDir()
	cfg := common(dir, "soak", upQoS) + fmt.Sprintf("[registry.server]\nlisten = %q\ndata-dir = %q\n\n"+
		"[provider]\nplugins = []\n\n[monitor.server]\nport = %d\n\n[console]\nlisten = %q\n",
		e.registry, filepath.Join(dir, "data", "registry"), mon, e.console)
	writeFile(t, filepath.Join(dir, "dubbo.toml"), cfg)
	e.up = &proc{name: "dubbo up", dir: dir, args: []string{"up"}, qos: fmt.Sprintf("127.0.0.1:%d", upQoS)}
	e.up.start(t)
	t.Cleanup(func() { e.up.stop(t, syscall.SIGINT) })
	e.up.ready(t, 30*time.Second)
	waitHTTP(t, "http://"+e.console+"/api/v1/stats?interface="+greeter, 30*time.Second)

	for i := range nProv {
		dir := t.TempDir()
		qos := ports[5+2*i]
		cfg := common(dir, "soak-provider", qos) + fmt.Sprintf("[protocol]\nhost = \"127.0.0.1\"\nport = %d\n\n[provider]\nplugins = [%q]\n",
			ports[6+2*i], filepath.Join(bin, "greeter"))
		writeFile(t, filepath.Join(dir, "dubbo.toml"), cfg)
		p := &proc{name: fmt.Sprintf("provider %d", i+1), dir: dir, args: []string{"run", "--role=provider"},
			qos: fmt.Sprintf("127.0.0.1:%d", qos), addr: fmt.Sprintf("127.0.0.1:%d", ports[6+2*i])}
		p.start(t)
		t.Cleanup(func() { p.stop(t, syscall.SIGTERM) })
		e.provs = append(e.provs, p)
	}
	for _, p := range e.provs {
		p.ready(t, 30*time.Second)
	}

	e.benchDir = t.TempDir()
	e.benchQoS = fmt.Sprintf("127.0.0.1:%d", benchQoS)
	writeFile(t, filepath.Join(e.benchDir, "dubbo.toml"), common(e.benchDir, "soak-bench", benchQoS))
	e.deadline = time.Now().Add(s.duration)
	e.startRound(t)
	t.Cleanup(func() { e.bench.stop(t, syscall.SIGINT) })
	return e
}

// startRound starts a bench process for the rest of the run.
func (e *env) startRound(t *testing.T) {
	t.Helper()
	left := time.Until(e.deadline).Round(time.Millisecond)
	e.bench = &proc{name: "dubbo bench", dir: e.benchDir, qos: e.benchQoS,
		args: []string{"bench", "-c", "32", "--rps", strconv.Itoa(e.rps), "-d", left.String(),
			"--version", "1.0.0", greeter, "sayHello", `"soak"`}}
	e.bench.start(t)
}

// endRound reads the summary of the bench process that exited.
func (e *env) endRound(t *testing.T) {
	t.Helper()
	for _, line := range strings.Split(e.bench.c.Out.String(), "\n") {
		if strings.HasPrefix(line, `{"calls"`) {
			var s benchSummary
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				t.Fatalf("dubbo bench summary %q: %v", line, err)
			}
			e.rounds = append(e.rounds, s)
			return
		}
	}
	t.Fatalf("dubbo bench (exit %v) printed no summary:\n%s", e.bench.c.Err(), tail(e.bench.c.Out.String(), 40))
}

// usage measures every process: dubbo up, each provider and its plugin,
// the bench.
func (e *env) usage() map[string]usage {
	out := map[string]usage{}
	add := func(name string, p *proc) {
		if p.running() {
			out[name] = measure(p.pid(), p.qos)
		}
	}
	add("dubbo up", e.up)
	for i, p := range e.provs {
		add(p.name, p)
		if p.running() {
			for _, c := range children(p.pid()) {
				out[fmt.Sprintf("provider %d plugin", i+1)] = measure(c, "")
			}
		}
	}
	add("dubbo bench", e.bench)
	return out
}

// waitStored waits until the monitor's consumer rows hold want successful
// calls (or within passes), then reads them once more after two intervals
// so that none counted twice goes unseen.
func (e *env) waitStored(t *testing.T, want int64, within time.Duration) (success, failure, provSuccess int64) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		success, failure = e.stats(t, "consumer")
		if success >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	success, failure = e.stats(t, "consumer")
	provSuccess, _ = e.stats(t, "provider")
	return success, failure, provSuccess
}

// stats sums the monitor's rows of sayHello on side.
func (e *env) stats(t *testing.T, side string) (success, failure int64) {
	t.Helper()
	resp, err := http.Get("http://" + e.console + "/api/v1/stats?interface=" + greeter + "&method=sayHello&side=" + side)
	if err != nil {
		t.Fatalf("GET /api/v1/stats: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/stats: %d %s %v", resp.StatusCode, body, err)
	}
	var rows []struct {
		Success int64 `json:"success"`
		Failure int64 `json:"failure"`
	}
	if err := json.Unmarshal(body, &rows); err != nil {
		t.Fatalf("GET /api/v1/stats: %v", err)
	}
	for _, r := range rows {
		success += r.Success
		failure += r.Failure
	}
	return success, failure
}

// A fault acts on the system (on provider victim where it is a
// provider's) and says what happened.
type fault struct {
	name string
	run  func(t *testing.T, e *env, victim int) string
}

var faults = []fault{
	{"kill -9 a provider and start it again", func(t *testing.T, e *env, v int) string {
		p := e.provs[v]
		p.signal(t, syscall.SIGKILL)
		p.wait(10 * time.Second)
		time.Sleep(3 * time.Second)
		p.start(t)
		return fmt.Sprintf("%s down 3 s, ready %v after its start", p.name, p.ready(t, 30*time.Second).Round(time.Millisecond))
	}},
	{"SIGTERM a provider and start it again", func(t *testing.T, e *env, v int) string {
		p := e.provs[v]
		start := time.Now()
		p.signal(t, syscall.SIGTERM)
		if !p.wait(20 * time.Second) {
			t.Fatalf("%s still running 20 s after SIGTERM", p.name)
		}
		stopped := time.Since(start)
		time.Sleep(3 * time.Second)
		p.start(t)
		return fmt.Sprintf("%s stopped %v after SIGTERM (exit %v), ready %v after its start", p.name,
			stopped.Round(time.Millisecond), p.c.Err(), p.ready(t, 30*time.Second).Round(time.Millisecond))
	}},
	{"SIGSTOP a provider for 5 s", func(t *testing.T, e *env, v int) string {
		p := e.provs[v]
		p.signal(t, syscall.SIGSTOP)
		time.Sleep(5 * time.Second)
		p.signal(t, syscall.SIGCONT)
		return p.name + " frozen 5 s"
	}},
	{"kill -9 a provider's plugin", func(t *testing.T, e *env, v int) string {
		p := e.provs[v]
		kids := children(p.pid())
		if len(kids) != 1 {
			t.Fatalf("%s has children %v, want its one plugin", p.name, kids)
		}
		if err := syscall.Kill(kids[0], syscall.SIGKILL); err != nil {
			t.Fatalf("kill plugin %d: %v", kids[0], err)
		}
		start := time.Now()
		for {
			now := children(p.pid())
			if len(now) == 1 && now[0] != kids[0] {
				if _, ok := statusField(now[0], "VmRSS"); ok {
					break
				}
			}
			if time.Since(start) > 30*time.Second {
				t.Fatalf("%s: no new plugin 30 s after the old one was killed (children %v)", p.name, now)
			}
			time.Sleep(20 * time.Millisecond)
		}
		restarted := time.Since(start)
		return fmt.Sprintf("%s's plugin (pid %d) killed, a new one running %v later, provider ready %v later", p.name, kids[0],
			restarted.Round(time.Millisecond), (restarted + p.ready(t, 30*time.Second)).Round(time.Millisecond))
	}},
	{"delete a provider's node in the registry", func(t *testing.T, e *env, v int) string {
		p := e.provs[v]
		zc, _, err := zk.Connect([]string{e.registry}, 10*time.Second, zk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		defer zc.Close()
		path := providerNode(t, zc, p)
		if path == "" {
			t.Fatalf("%s has no node under %s", p.name, providers)
		}
		if err := zc.Delete(path, -1); err != nil {
			t.Fatalf("delete %s: %v", path, err)
		}
		start := time.Now()
		for {
			if ok, _, err := zc.Exists(path); err == nil && ok {
				break
			}
			if time.Since(start) > 10*time.Second {
				t.Fatalf("%s: node not back 10 s after its deletion", p.name)
			}
			time.Sleep(5 * time.Millisecond)
		}
		return fmt.Sprintf("%s's node deleted, back %v later", p.name, time.Since(start).Round(time.Millisecond))
	}},
	{"kill -9 dubbo up (registry, monitor, console) and start it again", func(t *testing.T, e *env, _ int) string {
		e.up.signal(t, syscall.SIGKILL)
		e.up.wait(10 * time.Second)
		time.Sleep(5 * time.Second)
		e.up.start(t)
		ready := e.up.ready(t, 30*time.Second)
		waitHTTP(t, "http://"+e.console+"/api/v1/stats?interface="+greeter, 30*time.Second)
		return fmt.Sprintf("dubbo up down 5 s, ready %v after its start", ready.Round(time.Millisecond))
	}},
	{"restart the consumer", func(t *testing.T, e *env, _ int) string {
		start := time.Now()
		e.bench.signal(t, syscall.SIGINT)
		if !e.bench.wait(20 * time.Second) {
			t.Fatalf("dubbo bench still running 20 s after SIGINT")
		}
		e.endRound(t)
		r := e.rounds[len(e.rounds)-1]
		e.startRound(t)
		return fmt.Sprintf("dubbo bench stopped with SIGINT after %d calls (%d errors) in %v and started again",
			r.Calls, r.Errors, time.Since(start).Round(time.Millisecond))
	}},
}

// providerNode is the registry path of p's provider URL.
func providerNode(t *testing.T, zc *zk.Conn, p *proc) string {
	t.Helper()
	kids, _, err := zc.Children(providers)
	if err != nil {
		t.Fatalf("children of %s: %v", providers, err)
	}
	for _, k := range kids {
		if u, err := url.Decode(k); err == nil && u.Address() == p.addr {
			return providers + "/" + k
		}
	}
	return ""
}

func waitHTTP(t *testing.T, u string, d time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Since(start) > d {
			t.Fatalf("GET %s: not 200 after %v (%v)", u, d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func sortedNames(m map[string]usage) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
