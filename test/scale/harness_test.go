//go:build unix

package scale

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
	"github.com/dubbo-lab/dubbo/internal/testkit/child"
	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/transport"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// dubbo is the dubbo command, built once for the tests that run it.
var dubbo = child.NewDubbo("../..")

// proc is one process of the built dubbo command, killed (and reaped) when
// the test ends.
type proc struct {
	name string
	*child.Proc
}

// startDubbo runs `dubbo args...` in dir with the test's environment minus
// DUBBO_* overrides.
func startDubbo(t testing.TB, name, dir string, args ...string) *proc {
	t.Helper()
	return &proc{name: name, Proc: dubbo.Run(t, name, dir, args...)}
}

// registryServer is the registry a scale run uses: `dubbo run
// --role=registry` or Apache ZooKeeper 3.8, each its own process.
type registryServer struct {
	name string // "embedded" or "apache"
	addr string
	pid  int
	qos  string // the embedded one's QoS address, for go_goroutines
}

// startEmbeddedRegistry runs `dubbo run --role=registry` with fsync on (the
// default), no limit on connections from one address (the test's sessions
// all come from 127.0.0.1) and every four-letter word enabled.
func startEmbeddedRegistry(t testing.TB) registryServer {
	t.Helper()
	dir := t.TempDir()
	addr, qos := freeAddr(t), freeAddr(t)
	p := startDubbo(t, "registry", dir, "run", "--role=registry",
		"--set", "registry.server.listen="+addr,
		"--set", "registry.server.data-dir="+filepath.Join(dir, "data"),
		"--set", "registry.server.max-client-cnxns=-1",
		"--set", "registry.server.4lw-whitelist=*",
		"--set", "qos.listen="+qos)
	waitFor(t, "the registry process to answer ruok", 20*time.Second, func() bool {
		if !p.Running() {
			t.Fatalf("registry process exited:\n%s", p.Out.String())
		}
		out, err := apachezk.FourLetter(addr, "ruok", time.Second)
		return err == nil && out == "imok"
	})
	return registryServer{name: "embedded", addr: addr, pid: p.Pid(), qos: qos}
}

// startApacheRegistry runs Apache ZooKeeper 3.8 (fsync on, its default).
func startApacheRegistry(t testing.TB) registryServer {
	t.Helper()
	s := apachezk.Start(t, apachezk.Options{})
	return registryServer{name: "apache", addr: s.Addr(), pid: s.PID()}
}

// watches reads the server's watch count from `wchs`.
func (r registryServer) watches(t testing.TB) int {
	t.Helper()
	out, err := apachezk.FourLetter(r.addr, "wchs", 10*time.Second)
	if err != nil {
		t.Fatalf("wchs: %v", err)
	}
	// "... connections watching N paths\nTotal watches:M"
	_, after, ok := strings.Cut(out, "Total watches:")
	if !ok {
		t.Fatalf("wchs answered %q", out)
	}
	n, err := strconv.Atoi(strings.TrimSpace(after))
	if err != nil {
		t.Fatalf("wchs answered %q", out)
	}
	return n
}

// goroutines reads go_goroutines from a dubbo process's QoS /metrics.
func goroutines(t testing.TB, qosAddr string) int {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + qosAddr + "/metrics")
	if err != nil {
		t.Fatalf("metrics of %s: %v", qosAddr, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("go_goroutines %q: %v", v, err)
			}
			return int(n)
		}
	}
	t.Fatalf("no go_goroutines in the metrics of %s", qosAddr)
	return 0
}

// procStat is what /proc says about a process.
type procStat struct {
	rssMB, peakMB float64       // VmRSS, VmHWM
	cpu           time.Duration // user + system
}

func statOf(t testing.TB, pid int) procStat {
	t.Helper()
	var s procStat
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read /proc/%d/status: %v", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		for key, dst := range map[string]*float64{"VmRSS:": &s.rssMB, "VmHWM:": &s.peakMB} {
			if v, ok := strings.CutPrefix(line, key); ok {
				kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				if err != nil {
					t.Fatalf("parse %s %q: %v", key, v, err)
				}
				*dst = kb / 1024
			}
		}
	}
	b, err = os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("read /proc/%d/stat: %v", pid, err)
	}
	// Fields after the command name (which may hold spaces): utime and
	// stime are the 12th and 13th, in clock ticks (100 per second here).
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	s.cpu = time.Duration(ut+st) * 10 * time.Millisecond
	return s
}

// endpoint is a real dubbo server in the test process that provider URLs
// point at: consumers connect to it and keep their connection up with
// heartbeats. It answers calls with a string.
type endpoint struct {
	srv  *transport.Server
	addr string
}

func startEndpoints(t testing.TB, n int) []endpoint {
	t.Helper()
	h := transport.HandlerFunc(func(_ context.Context, req *protocol.Request) *protocol.Response {
		return &protocol.Response{ID: req.ID, Status: protocol.StatusOK, Value: "ok"}
	})
	eps := make([]endpoint, n)
	for i := range eps {
		srv, err := transport.Listen("127.0.0.1:0", h, transport.ServerConfig{Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		eps[i] = endpoint{srv: srv, addr: srv.Addr().String()}
	}
	return eps
}

// freeAddr is a loopback address nobody listens on now.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitFor polls cond until it holds, failing the test after d.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// percentile of a sorted slice.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}
