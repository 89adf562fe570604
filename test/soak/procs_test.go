//go:build soak && unix

package soak

import (
	"bufio"
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
)

// bin holds the binaries TestMain builds: dubbo and the greeter plugin.
var bin string

func TestMain(m *testing.M) {
	dir, err := child.Build("../..", "../../examples/greeter")
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak: building dubbo and the greeter plugin:", err)
		os.Exit(1)
	}
	bin = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is one process of the built dubbo binary, which a fault may kill
// and the test start again with the same arguments in the same directory.
type proc struct {
	name string
	dir  string
	args []string
	qos  string // host:port of its QoS port, "" for none
	addr string // a provider's dubbo address

	c *child.Proc // the latest start

	starts int
}

// start launches the process (again).
func (p *proc) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "dubbo"), p.args...)
	cmd.Dir, cmd.Env = p.dir, child.Env()
	c, err := child.Start(cmd, 4<<20)
	if err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	p.c = c
	p.starts++
}

func (p *proc) pid() int { return p.c.Cmd.Process.Pid }

func (p *proc) running() bool {
	select {
	case <-p.c.Done():
		return false
	default:
		return true
	}
}

func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.c.Cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%v to %s (pid %d): %v", sig, p.name, p.pid(), err)
	}
}

// wait waits up to d for the process to exit.
func (p *proc) wait(d time.Duration) bool {
	select {
	case <-p.c.Done():
		return true
	case <-time.After(d):
		return false
	}
}

// stop ends the process gracefully (sig), then with SIGKILL after 20 s.
func (p *proc) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if !p.running() {
		return
	}
	_ = p.c.Cmd.Process.Signal(syscall.SIGCONT)
	_ = p.c.Cmd.Process.Signal(sig)
	if !p.wait(20 * time.Second) {
		t.Errorf("%s (pid %d) still running 20s after %v; killed", p.name, p.pid(), sig)
		_ = p.c.Cmd.Process.Kill()
		p.wait(10 * time.Second)
	}
}

// ready waits until the process's QoS /ready answers 200.
func (p *proc) ready(t *testing.T, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	client := &http.Client{Timeout: time.Second}
	for {
		if !p.running() {
			t.Fatalf("%s exited before it was ready: %v\n%s", p.name, p.c.Err(), tail(p.c.Out.String(), 40))
		}
		resp, err := client.Get("http://" + p.qos + "/ready")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start)
			}
		}
		if time.Since(start) > d {
			t.Fatalf("%s not ready after %v\n%s", p.name, d, tail(p.c.Out.String(), 40))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// children are the process ids whose parent is pid.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := statusField(child, "PPid"); ok && ppid == pid {
			out = append(out, child)
		}
	}
	return out
}

// statusField reads a numeric field of /proc/pid/status (VmRSS in kB,
// Threads, PPid).
func statusField(pid int, field string) (int, bool) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.Atoi(strings.Fields(v)[0])
			return n, err == nil
		}
	}
	return 0, false
}

// goroutines reads go_goroutines from a QoS port's /metrics.
func goroutines(qos string) (int, bool) {
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get("http://" + qos + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(f), err == nil
		}
	}
	return 0, false
}

// usage is one process's resources at one moment.
type usage struct {
	pid        int
	rssMB      float64
	goroutines int // -1: not known (a plugin has no QoS port)
	threads    int
}

func measure(pid int, qos string) usage {
	u := usage{pid: pid, goroutines: -1}
	if kb, ok := statusField(pid, "VmRSS"); ok {
		u.rssMB = float64(kb) / 1024
	}
	u.threads, _ = statusField(pid, "Threads")
	if qos != "" {
		if n, ok := goroutines(qos); ok {
			u.goroutines = n
		}
	}
	return u
}

// freePorts returns n distinct free loopback ports.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	out := make([]int, n)
	for i := range out {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
		out[i] = l.Addr().(*net.TCPAddr).Port
	}
	return out
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
