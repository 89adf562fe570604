package e2e

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cliConfig writes a config file for dubbo call and dubbo bench: the
// registry of p, no monitor, and body (more TOML) after them.
func cliConfig(t *testing.T, p ports, name, body string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, name)
	text := fmt.Sprintf("data-dir = %q\n\n[application]\nname = \"e2e\"\n\n[registry]\naddress = %q\n\n[monitor]\nenabled = false\n\n%s",
		filepath.Join(dir, "data"), p.registryURL(), body)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCallUsesConsumerConfig: dubbo call and dubbo bench take their call
// settings from the config file's consumer section (consumer.defaults, the
// interface's [[consumer.references]] entry and its methods,
// consumer.migration), and the flags override them. Against two Greeter
// providers registered at interface level only (dubbo up, provider.
// register-mode = interface). What a user sees: a sleep of 300 ms failing
// or answering, how many attempts the error lists, the split of calls
// between the providers, how many connections the bench process holds.
// Before, both commands used fixed settings (timeout 1s, retries 2,
// random, failover, APPLICATION_FIRST) whatever the file said.
func TestCallUsesConsumerConfig(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 2)
	cfg := writeConfig(t, dir, p, setup{replicas: 2, providerPlugins: []string{"greeter"}})
	startNode(t, "dubbo up", dir, "up", "-c", cfg, "--set", "provider.register-mode=interface")
	waitServing(t, dir, p, 2)

	defaults := cliConfig(t, p, "defaults.toml", "[consumer.defaults]\ntimeout = 100\n")
	reference := cliConfig(t, p, "reference.toml", `[consumer.defaults]
timeout = 100
[[consumer.references]]
interface = "org.example.Greeter"
version = "1.0.0"
retries = 1
`)
	method := cliConfig(t, p, "method.toml", `[consumer.defaults]
timeout = 100
[[consumer.references]]
interface = "org.example.Greeter"
version = "1.0.0"
[[consumer.references.methods]]
name = "sleep"
timeout = "2s"
`)
	plain := cliConfig(t, p, "plain.toml", "")

	// Each call names its config with -c and gives no --version unless the
	// case says: the reference's version is used when it has one.
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stdout string   // exact, when code is 0
		stderr []string // contained, when code is not 0
		not    string   // not in stderr
	}{
		{"consumer.defaults.timeout", []string{"-c", defaults, "--version", "1.0.0", "sleep", "300"}, 1, "", []string{"timeout", "failed 3 attempt(s)"}, ""},
		{"--timeout over consumer.defaults", []string{"-c", defaults, "--version", "1.0.0", "--timeout", "2s", "sleep", "300"}, 0, `"slept"`, nil, ""},
		{"--retries over the default", []string{"-c", defaults, "--version", "1.0.0", "--retries", "0", "sleep", "300"}, 1, "", []string{"failed 1 attempt(s)"}, ""},
		{"--cluster failfast", []string{"-c", defaults, "--version", "1.0.0", "--cluster", "failfast", "sleep", "300"}, 1, "", []string{"timeout"}, "attempt(s)"},
		{"the reference's retries and version", []string{"-c", reference, "sleep", "300"}, 1, "", []string{"failed 2 attempt(s)"}, ""},
		{"--retries over the reference", []string{"-c", reference, "--retries", "0", "sleep", "300"}, 1, "", []string{"failed 1 attempt(s)"}, ""},
		{"the method's timeout", []string{"-c", method, "sleep", "300"}, 0, `"slept"`, nil, ""},
		{"--timeout over the method", []string{"-c", method, "--timeout", "100ms", "sleep", "300"}, 1, "", []string{"timeout"}, ""},
		{"consumer.migration", []string{"-c", plain, "--version", "1.0.0", "--set", "consumer.migration=FORCE_APPLICATION", "sayHello", `"m"`}, 1, "", []string{"no_provider"}, ""},
		{"consumer.migration default", []string{"-c", plain, "--version", "1.0.0", "sayHello", `"m"`}, 0, `"Hello, m"`, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"call"}, tt.args[:len(tt.args)-2]...)
			args = append(args, "org.example.Greeter", tt.args[len(tt.args)-2], tt.args[len(tt.args)-1])
			r := dubbo(t, dir, args...)
			got := strings.TrimSpace(r.stdout)
			if r.code != tt.code {
				t.Fatalf("dubbo %v: exit %d, want %d (stdout %q, stderr %q)", args, r.code, tt.code, got, r.stderr)
			}
			if tt.code == 0 && got != tt.stdout {
				t.Errorf("dubbo %v printed %q, want %q", args, got, tt.stdout)
			}
			for _, s := range tt.stderr {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("dubbo %v: stderr %q, want %q in it", args, r.stderr, s)
				}
			}
			if tt.not != "" && strings.Contains(r.stderr, tt.not) {
				t.Errorf("dubbo %v: stderr %q, want no %q in it", args, r.stderr, tt.not)
			}
		})
	}

	// Round robin over two providers of equal weight alternates: 20 calls
	// split 10:10 every time, where random does so in 18% of runs. Six runs,
	// one of which may be off (a warm-up step of the providers' weights
	// falling inside it).
	for _, flags := range [][]string{
		{"--set", "consumer.defaults.loadbalance=roundrobin"},
		{"--loadbalance", "roundrobin"},
	} {
		t.Run("round robin with "+strings.Join(flags, " "), func(t *testing.T) {
			even := 0
			var splits []string
			for range 6 {
				s := bench(t, dir, append([]string{"--config", plain, "-n", "20", "-c", "1", "--version", "1.0.0"}, flags...)...)
				a, b := s.ByProvider[p.providerAddr(0)], s.ByProvider[p.providerAddr(1)]
				splits = append(splits, fmt.Sprintf("%d:%d", a, b))
				if a == 10 && b == 10 {
					even++
				}
			}
			if even < 5 {
				t.Errorf("splits %v: %d of 6 even, want at least 5", splits, even)
			}
		})
	}

	// --connections: the bench process holds that many connections to
	// each provider (1 by default).
	t.Run("--connections", func(t *testing.T) {
		for _, tt := range []struct {
			flags []string
			want  int
		}{{nil, 1}, {[]string{"--connections", "3"}, 3}} {
			b := startBench(t, dir, append([]string{"--config", plain, "-d", "4s", "-c", "2"}, tt.flags...)...)
			var got map[string]int
			if _, ok := waitFor(3*time.Second, func() bool {
				got = connectionsTo(b.cmd.Process.Pid, p.provider, p.provider+1)
				return got[p.providerAddr(0)] == tt.want && got[p.providerAddr(1)] == tt.want
			}); !ok {
				t.Errorf("bench %v: connections to the providers %v, want %d each", tt.flags, got, tt.want)
			}
			b.wait(t)
		}
	})
}

// connectionsTo counts the established TCP connections of process pid to
// 127.0.0.1 at each of ports, as `ss -tnp` shows them.
func connectionsTo(pid int, ports ...int) map[string]int {
	out := map[string]int{}
	for _, s := range socketsOf(pid) {
		if s.state != tcpEstablished || s.remote.Addr() != netip.AddrFrom4([4]byte{127, 0, 0, 1}) {
			continue
		}
		if slices.Contains(ports, int(s.remote.Port())) {
			out[s.remote.String()]++
		}
	}
	return out
}

// connectionsOn counts the connections process pid holds on its port
// (those it accepted there), in any state but listening: one it never
// closes after the client left shows too (CLOSE_WAIT).
func connectionsOn(pid, port int) int {
	n := 0
	for _, s := range socketsOf(pid) {
		if s.state != tcpListen && int(s.local.Port()) == port {
			n++
		}
	}
	return n
}

// TCP states as /proc/net/tcp writes them.
const (
	tcpEstablished = 0x01
	tcpListen      = 0x0a
)

// socket is one IPv4 TCP socket of a process.
type socket struct {
	local, remote netip.AddrPort
	state         int
}

// socketsOf lists the IPv4 TCP sockets process pid has open, from /proc.
func socketsOf(pid int) []socket {
	inodes := map[string]bool{}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		return nil
	}
	var out []socket
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
		if len(f) < 10 || !inodes[f[9]] {
			continue
		}
		state, _ := strconv.ParseInt(f[3], 16, 32)
		out = append(out, socket{local: procAddr(f[1]), remote: procAddr(f[2]), state: int(state)})
	}
	return out
}

// procAddr reads an address of /proc/net/tcp: the IPv4 address as a
// little-endian hex word, a colon, the port in hex.
func procAddr(s string) netip.AddrPort {
	host, port, _ := strings.Cut(s, ":")
	h, _ := strconv.ParseUint(host, 16, 32)
	p, _ := strconv.ParseUint(port, 16, 16)
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{byte(h), byte(h >> 8), byte(h >> 16), byte(h >> 24)}), uint16(p))
}

// TestCallCacheFile: dubbo call keeps the provider lists in the config's
// consumer.cache-file, as the consumer role does, and answers from it
// while the registry is down (after the registry connect wait, 5 s).
// Before, the command had no cache file and failed: is the registry
// running?
func TestCallCacheFile(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 1)
	cfg := writeConfig(t, dir, p, setup{providerPlugins: []string{"greeter"}})
	registry := startNode(t, "registry", dir, "run", "--role=registry", "-c", cfg)
	startNode(t, "provider", dir, "run", "--role=provider", "-c", cfg)
	cli := cliConfig(t, p, "cli.toml", "[consumer]\ncache-file = \"lists.json\"\n")
	hello := []string{"call", "-c", cli, "--version", "1.0.0", "org.example.Greeter", "sayHello", `"cached"`}
	if _, ok := waitFor(15*time.Second, func() bool { return dubbo(t, dir, hello...).code == 0 }); !ok {
		t.Fatal("the provider did not answer dubbo call within 15s")
	}
	cache := filepath.Join(filepath.Dir(cli), "lists.json") // relative to the config file
	if b, err := os.ReadFile(cache); err != nil || !strings.Contains(string(b), "org.example.Greeter") {
		t.Fatalf("cache file %s: %v %q", cache, err, b)
	}
	registry.stop(t)
	r := dubbo(t, dir, hello...)
	if r.code != 0 || strings.TrimSpace(r.stdout) != `"Hello, cached"` {
		t.Fatalf("dubbo call with the registry down: exit %d, stdout %q, stderr %q; want the answer, from the cached provider list", r.code, r.stdout, lastLines(r.stderr, 5))
	}
	t.Logf("dubbo call answered with the registry down in %v", r.took.Round(time.Millisecond))
}
