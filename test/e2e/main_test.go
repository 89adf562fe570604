package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/child"
	"github.com/dubbo-lab/dubbo/internal/testkit/syncbuf"
	"github.com/dubbo-lab/dubbo/loadgen"
)

// bin holds the binaries TestMain builds: dubbo and the example plugins.
var bin string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	// One go build for all: the module root is the dubbo command; the
	// plugins of testdata serve only tests.
	dir, err := child.Build("../..", "../../examples/greeter", "../../examples/greet", "../../examples/chain", "../../examples/greeter-caller", "./testdata/tagrelay")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building dubbo and the example plugins:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = dir
	return m.Run()
}

func binary(name string) string { return filepath.Join(bin, name) }

// ports are the addresses of one test environment, all on 127.0.0.1.
type ports struct {
	registry int
	provider int // replicas take provider+1, ...
	tri      int // the providers' Triple ports, as provider's
	gateway  int
	monitor  int // the MonitorService
	console  int // the monitor's HTTP server
	qos      int
}

func (p ports) registryURL() string { return fmt.Sprintf("zookeeper://127.0.0.1:%d", p.registry) }
func (p ports) providerAddr(i int) string {
	return fmt.Sprintf("127.0.0.1:%d", p.provider+i)
}
func (p ports) triAddr(i int) string { return fmt.Sprintf("127.0.0.1:%d", p.tri+i) }
func (p ports) consoleURL(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", p.console, path)
}
func (p ports) qosURL(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", p.qos, path)
}
func (p ports) gatewayURL(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", p.gateway, path)
}

// freePorts finds a registry port, replicas consecutive provider ports and a
// gateway port, all free now. Holding every listener until all are chosen
// keeps them distinct.
func freePorts(t *testing.T, replicas int) ports {
	t.Helper()
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	listen := func(port int) (int, bool) {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return 0, false
		}
		held = append(held, l)
		return l.Addr().(*net.TCPAddr).Port, true
	}
	anyPort := func() int {
		p, ok := listen(0)
		if !ok {
			t.Fatal("no free port on 127.0.0.1")
		}
		return p
	}
	var p ports
	p.registry = anyPort()
	p.gateway = anyPort()
	p.monitor = anyPort()
	p.console = anyPort()
	p.qos = anyPort()
	consecutive := func() int {
		for range 50 {
			base := anyPort()
			ok := true
			for i := 1; i < replicas && ok; i++ {
				_, ok = listen(base + i)
			}
			if ok {
				return base
			}
		}
		t.Fatalf("no %d consecutive free ports on 127.0.0.1", replicas)
		return 0
	}
	p.provider = consecutive()
	p.tri = consecutive()
	return p
}

// setup describes one node's config file; zero fields leave their section
// out.
type setup struct {
	replicas        int
	providerPlugins []string // names of built plugins
	consumerPlugins []string
	references      []string // interfaces, version 1.0.0
	gateway         bool
	tri             bool   // the providers serve Triple too, on p.tri
	qos             bool   // the QoS port on p.qos; else off
	extra           string // more TOML, appended
}

// writeConfig writes dir/dubbo.toml for s on p, shaped like the shipped
// dubbo.toml, and returns its path.
func writeConfig(t *testing.T, dir string, p ports, s setup) string {
	t.Helper()
	quoted := func(names []string) string {
		q := make([]string, len(names))
		for i, n := range names {
			q[i] = strconv.Quote(binary(n))
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "data-dir = %q\n\n[application]\nname = \"e2e\"\n\n", filepath.Join(dir, "data"))
	fmt.Fprintf(&b, "[registry]\naddress = %q\n\n", p.registryURL())
	fmt.Fprintf(&b, "[registry.server]\nlisten = \"127.0.0.1:%d\"\ndata-dir = %q\ntick-time = \"2s\"\n\n",
		p.registry, filepath.Join(dir, "data", "registry"))
	fmt.Fprintf(&b, "[protocol]\nhost = \"127.0.0.1\"\nport = %d\n\n", p.provider)
	if s.tri {
		fmt.Fprintf(&b, "[protocols.tri]\nport = %d\n\n", p.tri)
	}
	replicas := max(s.replicas, 1)
	fmt.Fprintf(&b, "[provider]\nplugins = %s\nreplicas = %d\n\n", quoted(s.providerPlugins), replicas)
	fmt.Fprintf(&b, "[consumer]\nplugins = %s\n", quoted(s.consumerPlugins))
	for _, iface := range s.references {
		fmt.Fprintf(&b, "[[consumer.references]]\ninterface = %q\nversion = \"1.0.0\"\n", iface)
	}
	if s.gateway {
		fmt.Fprintf(&b, "[consumer.gateway]\nlisten = \"127.0.0.1:%d\"\n", p.gateway)
	}
	// The monitor (dubbo up starts one) and the QoS port on the test's
	// ports, so that environments on one machine do not collide.
	fmt.Fprintf(&b, "\n[monitor.server]\nport = %d\n\n[console]\nlisten = \"127.0.0.1:%d\"\n\n", p.monitor, p.console)
	if s.qos {
		fmt.Fprintf(&b, "[qos]\nlisten = \"127.0.0.1:%d\"\n", p.qos)
	} else {
		b.WriteString("[qos]\nlisten = \"\"\n")
	}
	b.WriteString(s.extra)
	path := filepath.Join(dir, "dubbo.toml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// node is one long-running dubbo process (up or run).
type node struct {
	name    string
	cmd     *exec.Cmd
	stdout  syncbuf.Buffer
	stderr  syncbuf.Buffer
	done    chan struct{}
	waitErr error
	stopped bool
}

// startNode starts `dubbo args...` in dir. It is stopped at the end of the
// test if the test did not stop it, and its output is logged when the test
// failed.
func startNode(t *testing.T, name, dir string, args ...string) *node {
	t.Helper()
	cmd := exec.Command(binary("dubbo"), args...)
	cmd.Dir = dir
	cmd.Env = child.Env()
	return startCmd(t, name, cmd)
}

// startCmd is startNode for a command prepared by the caller.
func startCmd(t *testing.T, name string, cmd *exec.Cmd) *node {
	t.Helper()
	n := &node{name: name, cmd: cmd, done: make(chan struct{})}
	n.cmd.Stdout, n.cmd.Stderr = &n.stdout, &n.stderr
	if err := n.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		n.waitErr = n.cmd.Wait()
		close(n.done)
	}()
	t.Cleanup(func() {
		if !n.stopped {
			n.stop(t)
		}
		if t.Failed() {
			t.Logf("%s stdout:\n%s", name, n.stdout.String())
			t.Logf("%s stderr (last 60 lines):\n%s", name, lastLines(n.stderr.String(), 60))
		}
	})
	return n
}

func (n *node) pid() int { return n.cmd.Process.Pid }

// exited reports whether the process has exited.
func (n *node) exited() bool {
	select {
	case <-n.done:
		return true
	default:
		return false
	}
}

// stop sends SIGINT (Ctrl-C), waits up to 20 s for the node to exit (then
// kills it and fails), and checks that every process it had started (its
// plugins) is gone too. It returns the exit code.
func (n *node) stop(t *testing.T) int {
	t.Helper()
	n.stopped = true
	children := childrenOf(n.pid())
	if !n.exited() {
		_ = n.cmd.Process.Signal(os.Interrupt)
	}
	select {
	case <-n.done:
	case <-time.After(20 * time.Second):
		t.Errorf("%s (pid %d) still running 20s after SIGINT; killing it", n.name, n.pid())
		_ = n.cmd.Process.Kill()
		<-n.done
	}
	// A plugin that outlives its node is an orphan: give it the time its
	// own parent watch needs, then fail and kill it.
	deadline := time.Now().Add(3 * time.Second)
	for _, c := range children {
		for alive(c.pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(c.pid) {
			t.Errorf("%s stopped but its child %d (%s) is still running", n.name, c.pid, c.comm)
			_ = syscall.Kill(c.pid, syscall.SIGKILL)
		}
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(n.waitErr, &ee) {
		code = ee.ExitCode()
	} else if n.waitErr != nil {
		t.Errorf("%s: %v", n.name, n.waitErr)
	}
	return code
}

// proc is one process in /proc.
type proc struct {
	pid  int
	comm string
}

// childrenOf lists the live processes whose parent is pid.
func childrenOf(pid int) []proc {
	entries, _ := os.ReadDir("/proc")
	var out []proc
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, ppid, state, ok := stat(p)
		if ok && ppid == pid && state != "Z" {
			out = append(out, proc{pid: p, comm: comm})
		}
	}
	return out
}

// stat reads the command name, parent and state of pid from /proc.
func stat(pid int) (comm string, ppid int, state string, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, "", false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, "", false
	}
	fields := strings.Fields(s[end+1:])
	if len(fields) < 2 {
		return "", 0, "", false
	}
	ppid, _ = strconv.Atoi(fields[1])
	return s[open+1 : end], ppid, fields[0], true
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	_, _, state, ok := stat(pid)
	return ok && state != "Z"
}

// pluginPIDs lists the node's child processes running the named plugin.
func (n *node) pluginPIDs(name string) []int {
	var pids []int
	for _, c := range childrenOf(n.pid()) {
		if c.comm == name {
			pids = append(pids, c.pid)
		}
	}
	return pids
}

// result is how a short dubbo command ended.
type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// dubbo runs a short dubbo command in dir and waits for it (at most 60 s).
func dubbo(t *testing.T, dir string, args ...string) result {
	t.Helper()
	r, err := runDubbo(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// runDubbo is dubbo for goroutines other than the test's, which must not
// call t.Fatal.
func runDubbo(dir string, args ...string) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary("dubbo"), args...)
	cmd.Dir = dir
	cmd.Env = child.Env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return r, fmt.Errorf("dubbo %s: still running after 60s", strings.Join(args, " "))
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		return r, fmt.Errorf("dubbo %s: %v", strings.Join(args, " "), err)
	}
	return r, nil
}

// call runs `dubbo call` of a 1.0.0 service through the registry.
func call(t *testing.T, dir string, p ports, iface, method string, args ...string) result {
	t.Helper()
	full := append([]string{"call", "--registry", p.registryURL(), "--version", "1.0.0", iface, method}, args...)
	return dubbo(t, dir, full...)
}

// benchSummary is the JSON line `dubbo bench` prints.
type benchSummary = loadgen.Summary

// bench runs `dubbo bench` with flags against sayHello("world") and
// decodes its summary.
func bench(t *testing.T, dir string, flags ...string) benchSummary {
	t.Helper()
	args := append([]string{"bench"}, flags...)
	args = append(args, "--version", "1.0.0", "org.example.Greeter", "sayHello", `"world"`)
	return benchResult(t, dubbo(t, dir, args...))
}

// benchResult decodes the summary of a `dubbo bench` that ran, and checks
// its exit code: 0 when every call succeeded, 1 when some failed.
func benchResult(t *testing.T, r result) benchSummary {
	t.Helper()
	var s benchSummary
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &s); err != nil {
		t.Fatalf("dubbo bench exited %d and printed %q, not its JSON summary: %v; stderr %s", r.code, r.stdout, err, r.stderr)
	}
	if want := min(s.Errors, 1); int64(r.code) != want {
		t.Fatalf("dubbo bench exited %d after %d failed calls of %d, want exit %d; stderr %s", r.code, s.Errors, s.Calls, want, r.stderr)
	}
	return s
}

// invoke posts the JSON arguments to the gateway and returns the status
// and body.
func invoke(client *http.Client, p ports, iface, method, args string) (int, string, error) {
	resp, err := client.Post(p.gatewayURL("/invoke/"+iface+"/"+method+"?version=1.0.0"), "application/json", strings.NewReader(args))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), err
}

// fourLetter sends a ZooKeeper four-letter word and returns the answer.
func fourLetter(addr, word string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(word)); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}

// waitFor polls cond every 20 ms until it holds or within passes; it
// returns how long that took and whether it held.
func waitFor(within time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	for {
		if cond() {
			return time.Since(start), true
		}
		if time.Since(start) > within {
			return time.Since(start), false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitServing waits until sayHello answers through the registry and both
// providers of a two-replica setup have served a call.
func waitServing(t *testing.T, dir string, p ports, replicas int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		s := bench(t, dir, "--registry", p.registryURL(), "-n", "40", "-c", "2")
		if s.Errors == 0 && len(s.ByProvider) == replicas {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the %d providers did not all serve sayHello within 20s", replicas)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
