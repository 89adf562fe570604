// Package apachezk starts a real Apache ZooKeeper 3.8 server for tests, so
// that behaviour of the embedded registry can be compared with the reference
// implementation, and runs Apache's Java CLI (zkCli) against any server.
// Start runs one standalone server; StartEnsemble runs a quorum (three
// members by default, as production nodes use) whose members a test can
// crash and restart to exercise failover.
//
// It uses the Debian `zookeeper` package: /usr/share/java/zookeeper.jar pulls
// in its dependencies through its manifest; only an slf4j binding is added.
// When the jars are missing, tests are skipped (or fail when CI=true).
package apachezk

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/need"
	"github.com/dubbo-lab/dubbo/internal/testkit/syncbuf"
)

// JavaDir is where the Debian packages install their jars.
const JavaDir = "/usr/share/java"

// Options configure the server. Zero values mean the documented defaults.
type Options struct {
	// TickTime is ZooKeeper's tickTime. Default 2s. Session timeouts are
	// clamped to [2, 20] × TickTime unless the bounds below are set.
	TickTime time.Duration
	// MinSessionTimeout and MaxSessionTimeout override the clamp bounds.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// DisableFsync sets forceSync=no. Default: fsync on, as Apache.
	DisableFsync bool
	// ExtraConfig lines are appended to zoo.cfg verbatim.
	ExtraConfig []string
}

// Server is a running Apache ZooKeeper process.
type Server struct {
	addr    string
	dataDir string
	cmd     *exec.Cmd
	done    chan struct{}
	log     *syncbuf.Buffer // process output, for start-up failures
}

// Addr is the client address, host:port on 127.0.0.1.
func (s *Server) Addr() string { return s.addr }

// DataDir is the server's data directory.
func (s *Server) DataDir() string { return s.dataDir }

// PID is the Java process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Classpath returns the jars needed to run the server or the CLI, or skips
// (fails under CI=true) the test when ZooKeeper is not installed.
func Classpath(t testing.TB) string {
	t.Helper()
	zkJar := filepath.Join(JavaDir, "zookeeper.jar")
	missing := func(what string) {
		need.Missing(t, "Apache ZooKeeper not installed (%s missing): apt-get install zookeeper", what)
	}
	if _, err := os.Stat(zkJar); err != nil {
		missing(zkJar)
	}
	if _, err := exec.LookPath("java"); err != nil {
		missing("java")
	}
	for _, binding := range []string{"slf4j-nop.jar", "slf4j-simple.jar"} {
		p := filepath.Join(JavaDir, binding)
		if _, err := os.Stat(p); err == nil {
			return zkJar + string(os.PathListSeparator) + p
		}
	}
	missing("slf4j-nop.jar or slf4j-simple.jar")
	return ""
}

// Start runs a standalone server on a free loopback port and waits until it
// serves requests. The process is killed when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	cp := Classpath(t)
	if opts.TickTime == 0 {
		opts.TickTime = 2 * time.Second
	}
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	if err := os.Mkdir(dataDir, 0o755); err != nil {
		t.Fatalf("apachezk: %v", err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatalf("apachezk: %v", err)
	}
	cfg := opts.config(dataDir, port)
	cfg = append(cfg, opts.ExtraConfig...)
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(strings.Join(cfg, "\n")+"\n"), 0o644); err != nil {
		t.Fatalf("apachezk: write zoo.cfg: %v", err)
	}

	// A second server on a busy port dies, and we would then talk to a
	// stranger: check right before starting.
	if !portFree(port) {
		t.Fatalf("apachezk: port %d was taken before the server started", port)
	}
	s, err := launch(t, cp, dir, dataDir, port, cfgPath,
		[]string{"-Xmx256m", "-XX:+UseSerialGC"}, "org.apache.zookeeper.server.ZooKeeperServerMain")
	if err != nil {
		t.Fatalf("apachezk: %v", err)
	}

	if err := s.waitReady(30 * time.Second); err != nil {
		t.Fatalf("apachezk: %v\nserver output:\n%s", err, s.log.String())
	}
	return s
}

// config is the zoo.cfg of one server without ExtraConfig, which callers
// append last.
func (opts Options) config(dataDir string, clientPort int) []string {
	cfg := []string{
		"tickTime=" + strconv.FormatInt(opts.TickTime.Milliseconds(), 10),
		"dataDir=" + dataDir,
		"clientPort=" + strconv.Itoa(clientPort),
		"clientPortAddress=127.0.0.1",
		"4lw.commands.whitelist=*",
		// Otherwise Jetty takes :8080 on every interface.
		"admin.enableServer=false",
		// Tests open many sessions from one address.
		"maxClientCnxns=0",
	}
	if opts.MinSessionTimeout > 0 {
		cfg = append(cfg, "minSessionTimeout="+strconv.FormatInt(opts.MinSessionTimeout.Milliseconds(), 10))
	}
	if opts.MaxSessionTimeout > 0 {
		cfg = append(cfg, "maxSessionTimeout="+strconv.FormatInt(opts.MaxSessionTimeout.Milliseconds(), 10))
	}
	if opts.DisableFsync {
		cfg = append(cfg, "forceSync=no")
	}
	return cfg
}

// launch starts one Java process of the server (mainClass reading cfgPath)
// and registers its kill as cleanup; it does not wait for readiness.
func launch(t testing.TB, cp, dir, dataDir string, port int, cfgPath string, jvmArgs []string, mainClass string) (*Server, error) {
	args := append(slices.Clone(jvmArgs),
		"-Dzookeeper.extendedTypesEnabled=true",
		"-Dzookeeper.admin.enableServer=false",
		"-cp", cp, mainClass, cfgPath)
	logBuf := &syncbuf.Buffer{}
	cmd := exec.Command("java", args...)
	cmd.Dir = dir
	cmd.Stdout = logBuf
	cmd.Stderr = logBuf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start java: %w", err)
	}
	s := &Server{
		addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		dataDir: dataDir,
		cmd:     cmd,
		done:    make(chan struct{}),
		log:     logBuf,
	}
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(s.Stop)
	return s, nil
}

// Stop kills the server (SIGKILL, like a crash) and waits for it to exit.
// It is safe to call more than once; Start also registers it as cleanup.
func (s *Server) Stop() {
	// os.Process.Kill uses a pidfd and knows when the process was reaped,
	// so it can never signal an unrelated process that reused the pid.
	_ = s.cmd.Process.Kill()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
	}
}

// waitReady polls until ruok answers imok and srvr reports a Mode: line;
// right after the port opens srvr may still say "not currently serving".
func (s *Server) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("server on %s exited during startup", s.addr)
		default:
		}
		if out, err := FourLetter(s.addr, "ruok", time.Second); err == nil && out == "imok" {
			out, err := FourLetter(s.addr, "srvr", time.Second)
			if err == nil && strings.Contains(out, "\nMode: ") {
				return nil
			}
			last = out
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("server on %s not ready after %s (last srvr: %q)", s.addr, timeout, last)
}

// FourLetter sends a four-letter word and returns the whole answer.
func FourLetter(addr, word string, timeout time.Duration) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", fmt.Errorf("4lw %s to %s: %w", word, addr, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte(word)); err != nil {
		return "", fmt.Errorf("4lw %s to %s: %w", word, addr, err)
	}
	var out bytes.Buffer
	if _, err := out.ReadFrom(conn); err != nil {
		return out.String(), fmt.Errorf("4lw %s to %s: %w", word, addr, err)
	}
	return out.String(), nil
}

// FreePort returns a loopback port nobody listens on at the moment.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	return port, nil
}

func portFree(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 200*time.Millisecond)
	if err == nil {
		c.Close()
		return false
	}
	return true
}
