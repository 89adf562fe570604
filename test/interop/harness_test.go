package interop

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/internal/testkit/dubbogo"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/internal/testkit/syncbuf"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/transport"
	"github.com/dubbo-lab/dubbo/node/url"
)

const (
	greeterIface   = providertest.GreeterInterface
	greeterVersion = providertest.GreeterVersion
	providersPath  = "/dubbo/" + greeterIface + "/providers"
	consumersPath  = "/dubbo/" + greeterIface + "/consumers"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func zkConnect(t testing.TB, addr string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// nodesUnder decodes every child of dir as a Dubbo URL, the way our
// registry client reads them.
func nodesUnder(t testing.TB, conn *zk.Conn, dir string) []*url.URL {
	t.Helper()
	names, _, err := conn.Children(dir)
	if err == zk.ErrNoNode {
		return nil
	}
	if err != nil {
		t.Fatalf("children of %s: %v", dir, err)
	}
	var us []*url.URL
	for _, n := range names {
		u, err := url.Decode(n)
		if err != nil {
			t.Errorf("node %s/%s is not a Dubbo URL we can decode: %v", dir, n, err)
			continue
		}
		us = append(us, u)
	}
	return us
}

// waitNode waits until dir has a node for address and returns it decoded.
func waitNode(t testing.TB, conn *zk.Conn, dir, address string) *url.URL {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, u := range nodesUnder(t, conn, dir) {
			if u.Address() == address {
				return u
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no node for %s under %s after 30s", address, dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// inProcessProvider is node/provider serving Greeter in the test process,
// counting the calls that reach the handler.
type inProcessProvider struct {
	*provider.Provider
	calls atomic.Int64
}

func startInProcessProvider(t testing.TB, registry string) *inProcessProvider {
	t.Helper()
	return startProvider(t, provider.Config{Application: "interop-inprocess", Registry: registry})
}

// startProvider starts cfg's provider on a free loopback port, serving
// Greeter; it is shut down gracefully when the test ends.
func startProvider(t testing.TB, cfg provider.Config) *inProcessProvider {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg.Protocol = provider.ProtocolConfig{Host: "127.0.0.1", Port: -1}
	p, err := provider.Start(ctx, cfg, provider.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ip := &inProcessProvider{Provider: p}
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer scancel()
		if err := p.Shutdown(sctx); err != nil {
			t.Errorf("provider shutdown: %v", err)
		}
	})
	if err := p.Export(ctx, providertest.Greeter(func(*rpc.Invocation) { ip.calls.Add(1) })); err != nil {
		t.Fatal(err)
	}
	return ip
}

// ourBuilds are the dubbo binary and the example handler plugins, built
// once per test binary into a temporary directory.
var ourBuilds struct {
	sync.Mutex
	done                 bool
	dir, err             string
	dubbo, plugin, greet string
}

// buildOurs builds `dubbo`, examples/greeter and examples/greet.
func buildOurs(t testing.TB) (dubboBin, greeterPlugin, greetPlugin string) {
	t.Helper()
	ourBuilds.Lock()
	defer ourBuilds.Unlock()
	if !ourBuilds.done {
		ourBuilds.done = true
		ourBuilds.err = func() string {
			root, err := dubbogo.RepoRoot()
			if err != nil {
				return err.Error()
			}
			dir, err := os.MkdirTemp("", "interop-build-")
			if err != nil {
				return err.Error()
			}
			ourBuilds.dir = dir
			ourBuilds.dubbo = filepath.Join(dir, "dubbo")
			ourBuilds.plugin = filepath.Join(dir, "greeter")
			ourBuilds.greet = filepath.Join(dir, "greet")
			for _, b := range [][2]string{{ourBuilds.dubbo, "."}, {ourBuilds.plugin, "./examples/greeter"}, {ourBuilds.greet, "./examples/greet"}} {
				cmd := exec.Command("go", "build", "-o", b[0], b[1])
				cmd.Dir = root
				if out, err := cmd.CombinedOutput(); err != nil {
					return fmt.Sprintf("go build %s: %v\n%s", b[1], err, out)
				}
			}
			return ""
		}()
	}
	if ourBuilds.err != "" {
		t.Fatal(ourBuilds.err)
	}
	return ourBuilds.dubbo, ourBuilds.plugin, ourBuilds.greet
}

func removeBuilds() {
	ourBuilds.Lock()
	defer ourBuilds.Unlock()
	if ourBuilds.dir != "" {
		os.RemoveAll(ourBuilds.dir)
	}
}

// process is a provider process of ours: the dubbo binary or a copy of the
// test binary. It runs in its own process group so that the handler plugin
// it launched goes with it if it has to be killed.
type process struct {
	Addr string
	cmd  *exec.Cmd
	done chan struct{}
	log  *syncbuf.Buffer
	stop sync.Once
	// stdin is held open; the test binary copy exits when it closes.
	stdin io.Closer
}

// stopProcess sends SIGTERM, then SIGKILL to its process group after
// timeout, and reports whether it exited on its own.
func (p *process) stopProcess(timeout time.Duration) (graceful bool) {
	p.stop.Do(func() {
		pid := p.cmd.Process.Pid
		_ = syscall.Kill(pid, syscall.SIGTERM)
		select {
		case <-p.done:
			graceful = true
		case <-time.After(timeout):
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			<-p.done
		}
		if p.stdin != nil {
			p.stdin.Close()
		}
	})
	return graceful
}

// startProcess runs cmd and waits for a stdout line starting with prefix,
// whose next field is the address it serves on.
func startProcess(t testing.TB, cmd *exec.Cmd, prefix string, holdStdin bool) *process {
	t.Helper()
	p := &process{cmd: cmd, done: make(chan struct{}), log: &syncbuf.Buffer{Limit: 1 << 20}}
	cmd.Stderr = p.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if holdStdin {
		w, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		p.stdin = w
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), prefix); ok {
				addr := strings.TrimSpace(rest)
				if _, a, ok := strings.Cut(addr, "://"); ok { // dubbo:// or tri://
					addr = a
				}
				addr, _, _ = strings.Cut(addr, " ")
				select {
				case ready <- addr:
				default:
				}
			}
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.stopProcess(15 * time.Second) {
			t.Errorf("%s did not exit on SIGTERM within 15s\n%s", filepath.Base(cmd.Path), p.log)
		}
	})
	select {
	case p.Addr = <-ready:
		return p
	case <-p.done:
		t.Fatalf("%s exited before it was ready: %v\n%s", cmd.Args, cmd.ProcessState, p.log)
	case <-time.After(60 * time.Second):
		t.Fatalf("%s not ready after 60s\n%s", cmd.Args, p.log)
	}
	return nil
}

// startPluginProvider runs `dubbo run --role=provider` with the greeter
// handler plugin, registered in registry ("" = none), and waits until the
// plugin's service answers sayHello. extra are more command-line flags,
// e.g. --set provider.register-mode=instance.
func startPluginProvider(t testing.TB, registry string, extra ...string) *process {
	t.Helper()
	bin, plugin, _ := buildOurs(t)
	dir := t.TempDir()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`data-dir = %q

[application]
name = "interop-plugin"

[registry]
address = %q

[protocol]
host = "127.0.0.1"
port = %d

[provider]
plugins = [%q]

[qos]
listen = ""
`, dir, registry, port, plugin)
	path := filepath.Join(dir, "dubbo.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"run", "--role=provider", "-c", path, "--log-level", "warn"}, extra...)...)
	cmd.Dir = dir
	p := startProcess(t, cmd, "provider ", false)
	waitServing(t, p.Addr, p.log)
	return p
}

// startSelfProvider runs a copy of the test binary as a provider of
// Greeter with no registry (see runProvider).
func startSelfProvider(t testing.TB) *process {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRole+"=provider")
	p := startProcess(t, cmd, "READY ", true)
	waitServing(t, p.Addr, p.log)
	return p
}

// waitServing calls sayHello until it succeeds: a provider that listens may
// not have its handler plugin up yet.
func waitServing(t testing.TB, addr string, log fmt.Stringer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, addr, transport.ClientConfig{Logger: quietLogger()})
	if err != nil {
		t.Fatalf("dial %s: %v\n%s", addr, err, log)
	}
	defer c.Close()
	var last error
	for ctx.Err() == nil {
		res, err := c.Invoke(ctx, sayHello())
		if err == nil && res.Exception == nil && res.Value == "Hello, world" {
			return
		}
		last = err
		if err == nil {
			last = fmt.Errorf("sayHello = %+v", res)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s does not serve sayHello after 60s: %v\n%s", addr, last, log)
}

func sayHello() *rpc.Invocation {
	return &rpc.Invocation{
		Service: greeterIface, Version: greeterVersion, Method: "sayHello",
		ParamTypes: []string{"java.lang.String"}, Args: []any{"world"},
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
