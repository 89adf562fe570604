package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/child"
)

// Plugins that never come up: a path that cannot be launched is refused
// before anything starts; a plugin that exits at once, stays silent or
// prints something else than the handshake is logged, retried with backoff
// and reported next to the ready line, while the node serves the rest and
// stops promptly with nothing left behind.

// pluginConfig writes dir/dubbo.toml for a registry and a provider on p
// with the given provider and consumer plugin paths, and returns its path.
func pluginConfig(t *testing.T, dir string, p ports, provider, consumer []string) string {
	t.Helper()
	list := func(paths []string) string {
		q := make([]string, len(paths))
		for i, path := range paths {
			q[i] = strconv.Quote(path)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "data-dir = %q\n\n[registry]\naddress = %q\n\n", filepath.Join(dir, "data"), p.registryURL())
	fmt.Fprintf(&b, "[registry.server]\nlisten = \"127.0.0.1:%d\"\n\n", p.registry)
	fmt.Fprintf(&b, "[protocol]\nhost = \"127.0.0.1\"\nport = %d\n\n", p.provider)
	fmt.Fprintf(&b, "[provider]\nplugins = %s\n\n[consumer]\nplugins = %s\n", list(provider), list(consumer))
	fmt.Fprintf(&b, "\n[monitor.server]\nport = %d\n\n[console]\nlisten = \"127.0.0.1:%d\"\n\n[qos]\nlisten = \"\"\n", p.monitor, p.console)
	path := filepath.Join(dir, "dubbo.toml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// shellPlugin writes an executable script with body to dir; PIDS in body
// becomes the file where it appends the pids of the processes it starts,
// which it returns too.
func shellPlugin(t *testing.T, dir, name, body string) (path, pids string) {
	t.Helper()
	path, pids = filepath.Join(dir, name), filepath.Join(dir, name+".pids")
	body = "#!/bin/sh\n" + strings.ReplaceAll(body, "PIDS", pids)
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, pids
}

// pidsIn reads the pids a shell plugin appended to file.
func pidsIn(t *testing.T, file string) []int {
	t.Helper()
	b, _ := os.ReadFile(file)
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// startNodeEnv is startNode with env added to the node's environment.
func startNodeEnv(t *testing.T, name, dir string, env []string, args ...string) *node {
	t.Helper()
	cmd := exec.Command(binary("dubbo"), args...)
	cmd.Dir, cmd.Env = dir, append(child.Env(), env...)
	return startCmd(t, name, cmd)
}

// sigterm sends SIGTERM to the node and checks that it and every process
// it or its plugins started (extra: pids not among its children, such as
// a plugin's own children) are gone within 10s.
func (n *node) sigterm(t *testing.T, extra []int) {
	t.Helper()
	var pids []int
	for _, c := range childrenOf(n.pid()) {
		pids = append(pids, c.pid)
	}
	pids = append(pids, extra...)
	signaled := time.Now()
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-n.done:
		t.Logf("%s exited %v after SIGTERM", n.name, time.Since(signaled).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Errorf("%s still running 10s after SIGTERM", n.name)
	}
	if code := n.stop(t); code != 0 { // stop kills it if it still runs
		t.Errorf("%s exited %d after SIGTERM, want 0", n.name, code)
	}
	for _, pid := range pids {
		if _, ok := waitFor(3*time.Second, func() bool { return !alive(pid) }); !ok {
			t.Errorf("process %d, started by %s or its plugins, still runs after it stopped", pid, n.name)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// TestPluginPathRefused: a plugin path that does not exist, or is not an
// executable file, stops the node at once with the config key and the
// path, before anything starts.
func TestPluginPathRefused(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-plugin")
	notExec := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name               string
		args               []string
		provider, consumer []string
		want               string
	}{
		{"provider plugin missing", []string{"up"}, []string{binary("greeter"), missing}, nil,
			"key provider.plugins: " + missing + " does not exist"},
		{"provider plugin not executable", []string{"up"}, []string{notExec}, nil,
			"key provider.plugins: " + notExec + " is not executable"},
		{"provider plugin a directory", []string{"run", "--role=provider"}, []string{dir}, nil,
			"key provider.plugins: " + dir + " is a directory"},
		{"consumer plugin missing", []string{"up"}, []string{binary("greeter")}, []string{missing},
			"key consumer.plugins: " + missing + " does not exist"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := freePorts(t, 1)
			cfg := pluginConfig(t, t.TempDir(), p, tt.provider, tt.consumer)
			r := dubbo(t, dir, append(tt.args, "-c", cfg)...)
			if r.code != 1 || !strings.Contains(r.stderr, tt.want) || strings.Contains(r.stdout, "ready") {
				t.Errorf("dubbo %v: exit %d, stdout %q, stderr %q; want exit 1 and %q", tt.args, r.code, r.stdout, r.stderr, tt.want)
			}
			if r.took > 5*time.Second {
				t.Errorf("dubbo %v took %v to refuse the plugin path", tt.args, r.took)
			}
			for _, port := range []int{p.registry, p.provider} {
				if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second); err == nil {
					c.Close()
					t.Errorf("something listens on 127.0.0.1:%d after dubbo refused the plugin path", port)
				}
			}
		})
	}
}

// TestPluginNeverUp: a provider plugin that never comes up, next to the
// greeter that does. The node waits for each plugin's first attempt, then
// prints a warning naming the plugin and why, and a ready line that says
// a plugin is down; it logs every failed start with the plugin's name and
// reason and retries with backoff, ending each attempt's processes; it
// serves the greeter meanwhile; SIGTERM stops it promptly, leaving nothing.
func TestPluginNeverUp(t *testing.T) {
	for _, tt := range []struct {
		name, body, reason string
	}{
		{"exits at once", "echo 'cannot open config' >&2\nexit 3\n",
			"it exited with status 3 before the handshake; its stderr ended with: cannot open config"},
		{"silent", "sleep 100 &\necho $! >> PIDS\nwait\n",
			"handshake failed: timeout while waiting for plugin to start (1s)"},
		{"garbage handshake", "sleep 100 &\necho $! >> PIDS\necho 'hello, I am a shell script'\nwait\n",
			"handshake failed: Unrecognized remote plugin message: hello, I am a shell script"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := freePorts(t, 1)
			bad, pids := shellPlugin(t, dir, "bad.sh", tt.body)
			cfg := pluginConfig(t, dir, p, []string{binary("greeter"), bad}, nil)
			up := startNodeEnv(t, "dubbo up", dir, []string{"DUBBO_PLUGIN_START_TIMEOUT=1s"}, "up", "-c", cfg)

			if _, ok := waitFor(20*time.Second, func() bool { return strings.Contains(up.stdout.String(), "ready") || up.exited() }); !ok || up.exited() {
				t.Fatalf("dubbo up printed no ready line within 20s")
			}
			out := up.stdout.String()
			warning := "warning: plugin bad.sh (provider 1) is down: plugin bad.sh (" + bad + ") refused: " + tt.reason + "; retrying with backoff\n"
			if !strings.Contains(out, warning+"ready with 1 of 2 plugins down; Ctrl-C stops everything\n") {
				t.Errorf("dubbo up printed:\n%s\nwant the lines\n%sready with 1 of 2 plugins down; Ctrl-C stops everything", out, warning)
			}

			// The greeter serves meanwhile.
			if r := call(t, dir, p, "org.example.Greeter", "sayHello", `"world"`); r.code != 0 || strings.TrimSpace(r.stdout) != `"Hello, world"` {
				t.Errorf("sayHello with a plugin down: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}

			// Each failed start is logged with the plugin and why, and retried.
			failed := regexp.MustCompile(`level=ERROR msg="plugin failed to start" role=provider replica=1 plugin=bad.sh err=.*` +
				regexp.QuoteMeta(strings.ReplaceAll(tt.reason, `"`, `\"`)) + `.* retry_in=`)
			if _, ok := waitFor(20*time.Second, func() bool { return len(failed.FindAllString(up.stderr.String(), -1)) >= 3 }); !ok {
				t.Fatalf("fewer than 3 failed starts of bad.sh logged within 20s, each with %q", tt.reason)
			}
			// Every attempt but the one under way has ended, children too.
			started := pidsIn(t, pids)
			for i, pid := range started {
				if i < len(started)-1 && alive(pid) {
					if _, ok := waitFor(3*time.Second, func() bool { return !alive(pid) }); !ok {
						t.Errorf("process %d, started by a failed attempt of bad.sh, still runs", pid)
					}
				}
			}
			up.sigterm(t, started)
			for _, pid := range pidsIn(t, pids) { // a last attempt's, if it began during the stop
				if alive(pid) {
					t.Errorf("process %d, started by bad.sh, still runs after the node stopped", pid)
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
	}
}

// TestPluginStopDuringHandshake: SIGTERM while a plugin is still in its
// first handshake (the node has not said ready yet) stops the node at once,
// with the plugin and its children.
func TestPluginStopDuringHandshake(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 1)
	silent, pids := shellPlugin(t, dir, "silent.sh", "sleep 100 &\necho $! >> PIDS\nwait\n")
	cfg := pluginConfig(t, dir, p, []string{silent}, nil)
	up := startNodeEnv(t, "dubbo up", dir, []string{"DUBBO_PLUGIN_START_TIMEOUT=60s"}, "up", "-c", cfg)
	if _, ok := waitFor(20*time.Second, func() bool { return len(pidsIn(t, pids)) > 0 || up.exited() }); !ok || up.exited() {
		t.Fatalf("silent.sh was not started within 20s")
	}
	if out := up.stdout.String(); strings.Contains(out, "ready") {
		t.Errorf("dubbo up said ready before its plugin's first start attempt ended:\n%s", out)
	}
	up.sigterm(t, pidsIn(t, pids))
}

// TestPluginComesUpLater: a plugin that fails at first is retried until it
// comes up, and then serves.
func TestPluginComesUpLater(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 1)
	path, _ := shellPlugin(t, dir, "greeter", "echo 'not built yet' >&2\nexit 1\n")
	cfg := pluginConfig(t, dir, p, []string{path}, nil)
	up := startNode(t, "dubbo up", dir, "up", "-c", cfg)
	if _, ok := waitFor(20*time.Second, func() bool {
		return strings.Contains(up.stdout.String(), "ready with 1 of 1 plugins down") || up.exited()
	}); !ok || up.exited() {
		t.Fatalf("dubbo up did not report its plugin down within 20s")
	}

	// The plugin gets built: the real greeter replaces the script.
	b, err := os.ReadFile(binary("greeter"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".new", b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	replaced := time.Now()
	took, ok := waitFor(20*time.Second, func() bool {
		r := call(t, dir, p, "org.example.Greeter", "sayHello", `"later"`)
		return r.code == 0 && strings.TrimSpace(r.stdout) == `"Hello, later"`
	})
	if !ok {
		t.Fatalf("the plugin did not serve within 20s of being fixed")
	}
	t.Logf("served %v after the plugin was fixed (%v of polling)", time.Since(replaced).Round(time.Millisecond), took.Round(time.Millisecond))
	if code := up.stop(t); code != 0 {
		t.Errorf("dubbo up exited %d after Ctrl-C, want 0", code)
	}
}
