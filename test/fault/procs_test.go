//go:build unix

package fault

import (
	"net"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
	"github.com/dubbo-lab/dubbo/internal/testkit/child"
)

// dubbo is the dubbo command, built once for the tests that run it.
var dubbo = child.NewDubbo("../..")

// dubboProc is one process of the built dubbo command.
type dubboProc struct {
	name string
	*child.Proc
}

// startDubbo runs `dubbo args...` in dir, with the test's environment minus
// DUBBO_* overrides. The process is killed (and reaped) in t.Cleanup.
func startDubbo(t testing.TB, name, dir string, args ...string) *dubboProc {
	t.Helper()
	return &dubboProc{name: name, Proc: dubbo.Run(t, name, dir, args...)}
}

// kill sends SIGKILL, as a crash, and waits until the process is reaped.
func (p *dubboProc) kill(t testing.TB) {
	t.Helper()
	if !p.Kill(10 * time.Second) {
		t.Errorf("%s (pid %d) not reaped 10s after SIGKILL", p.name, p.Pid())
	}
}

// stop sends SIGINT (Ctrl-C) and waits for the process to exit.
func (p *dubboProc) stop(t testing.TB) {
	t.Helper()
	if err := p.Cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatalf("SIGINT to %s: %v", p.name, err)
	}
	select {
	case <-p.Done():
	case <-time.After(15 * time.Second):
		t.Fatalf("%s still running 15s after SIGINT", p.name)
	}
}

// registryProc is the embedded registry as its own process, `dubbo run
// --role=registry`, which a test may kill and start again on the same port
// and data dir.
type registryProc struct {
	addr    string
	dir     string // working dir; the data dir is dir/data
	proc    *dubboProc
	started time.Time
}

// startRegistryProc starts the registry process on a free port and waits
// until it answers ruok.
func startRegistryProc(t testing.TB) *registryProc {
	t.Helper()
	r := &registryProc{addr: freeAddr(t), dir: t.TempDir()}
	r.start(t)
	return r
}

// start launches the process (again) and waits until it answers ruok.
func (r *registryProc) start(t testing.TB) {
	t.Helper()
	r.proc = startDubbo(t, "registry", r.dir, "run", "--role=registry",
		"--set", "registry.server.listen="+r.addr, "--set", "registry.server.data-dir="+filepath.Join(r.dir, "data"))
	r.started = time.Now()
	waitFor(t, "the registry process to answer ruok", 15*time.Second, func() bool {
		if !r.proc.Running() {
			t.Fatalf("registry process exited: %v\n%s", r.proc.Err(), r.proc.Out.String())
		}
		out, err := apachezk.FourLetter(r.addr, "ruok", time.Second)
		return err == nil && out == "imok"
	})
}

// kill kills the registry process with SIGKILL.
func (r *registryProc) kill(t testing.TB) { r.proc.kill(t) }

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

// proxy forwards TCP connections to a target, and can black-hole them:
// while paused, bytes in both directions are read and dropped, so the two
// ends see a silent peer (a partitioned network, not a closed socket).
type proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	paused bool
	conns  map[net.Conn]bool // client and target sides
	spoilt []net.Conn        // connections that lost bytes while paused
	closed bool
	wg     sync.WaitGroup
}

// startProxy listens on a free loopback port and forwards to target until
// the test ends.
func startProxy(t testing.TB, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: make(map[net.Conn]bool)}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.DialTimeout("tcp", p.target, 2*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			s.Close()
			return
		}
		p.conns[c], p.conns[s] = true, true
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, s)
		go p.pipe(s, c)
	}
}

// pipe copies from src to dst, dropping what arrives while paused; a
// connection that lost bytes is closed at Resume (its stream is broken).
func (p *proxy) pipe(src, dst net.Conn) {
	defer p.wg.Done()
	defer func() {
		src.Close()
		dst.Close()
		p.mu.Lock()
		delete(p.conns, src)
		delete(p.conns, dst)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			paused := p.paused
			if paused {
				p.spoilt = append(p.spoilt, src, dst)
			}
			p.mu.Unlock()
			if !paused {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return // EOF, or one side closed
		}
	}
}

// Pause black-holes every connection, open and new, until Resume.
func (p *proxy) Pause() {
	p.mu.Lock()
	p.paused = true
	p.mu.Unlock()
}

// Resume forwards again; connections that lost bytes are closed, so their
// clients reconnect on a clean stream.
func (p *proxy) Resume() {
	p.mu.Lock()
	p.paused = false
	spoilt := p.spoilt
	p.spoilt = nil
	p.mu.Unlock()
	for _, c := range spoilt {
		c.Close()
	}
}

func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}
