package apachezk

import (
	"bufio"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/need"
)

//go:embed zkbench/ZkBench.java
var zkBenchSource []byte

// JavaClasses compiles the Java benchmark client (zkbench/ZkBench.java)
// against the installed ZooKeeper jars and returns its classpath: call it
// once per benchmark and hand the result to every StartJavaBench.
func JavaClasses(t testing.TB) string {
	t.Helper()
	cp := Classpath(t)
	if _, err := exec.LookPath("javac"); err != nil {
		need.Missing(t, "javac not installed (a JDK is needed to compile the Java ZooKeeper client's benchmark)")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "ZkBench.java")
	if err := os.WriteFile(src, zkBenchSource, 0o644); err != nil {
		t.Fatalf("apachezk: %v", err)
	}
	if out, err := exec.Command("javac", "-nowarn", "-cp", cp, "-d", dir, src).CombinedOutput(); err != nil {
		t.Fatalf("apachezk: javac ZkBench.java: %v\n%s", err, out)
	}
	return dir + string(os.PathListSeparator) + cp
}

// JavaBench is Apache's Java client driving one server: clients sessions,
// one thread each, repeating one operation (get, set or create of a
// 100-byte znode under base). One JVM serves many Run calls, so the JIT's
// warm-up is paid once.
type JavaBench struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	quit  chan struct{} // closed by stop: lines no longer read
	done  chan struct{} // closed once the process was reaped
}

// StartJavaBench starts the client against addr and waits until its
// sessions and nodes are ready. classes is JavaClasses' result; the process
// ends when t ends.
func StartJavaBench(t testing.TB, classes, addr, op string, clients int, base string) *JavaBench {
	t.Helper()
	cmd := exec.Command("java", "-Xmx256m", "-XX:+UseSerialGC", "-cp", classes,
		"ZkBench", addr, op, strconv.Itoa(clients), base)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("apachezk: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("apachezk: %v", err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("apachezk: start the Java client: %v", err)
	}
	j := &JavaBench{cmd: cmd, stdin: stdin, lines: make(chan string), quit: make(chan struct{}), done: make(chan struct{})}
	go func() { // reads to the end before Wait, as exec requires
		defer close(j.done)
		defer close(j.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "zkbench "); ok {
				select {
				case j.lines <- line:
				case <-j.quit:
				}
			}
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(j.stop)
	if line, err := j.answer(30 * time.Second); err != nil || line != "ready" {
		t.Fatalf("apachezk: the Java client against %s: %q, %v", addr, line, err)
	}
	return j
}

// Run makes n operations and returns the time they took, measured by the
// client from the first request to the last answer.
func (j *JavaBench) Run(n int) (time.Duration, error) {
	if _, err := fmt.Fprintf(j.stdin, "run %d\n", n); err != nil {
		return 0, fmt.Errorf("java client: %w", err)
	}
	line, err := j.answer(10 * time.Minute)
	if err != nil {
		return 0, err
	}
	ns, ok := strings.CutPrefix(line, "done ")
	if !ok {
		return 0, fmt.Errorf("java client: %s", line)
	}
	d, err := strconv.ParseInt(ns, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("java client answered %q: %w", line, err)
	}
	return time.Duration(d), nil
}

func (j *JavaBench) answer(timeout time.Duration) (string, error) {
	select {
	case line, ok := <-j.lines:
		if !ok {
			return "", fmt.Errorf("java client exited")
		}
		return line, nil
	case <-time.After(timeout):
		return "", fmt.Errorf("java client: no answer in %s", timeout)
	}
}

// PID is the client's process id.
func (j *JavaBench) PID() int { return j.cmd.Process.Pid }

func (j *JavaBench) stop() {
	close(j.quit)
	_, _ = io.WriteString(j.stdin, "quit\n")
	_ = j.stdin.Close()
	select {
	case <-j.done:
	case <-time.After(5 * time.Second):
		_ = j.cmd.Process.Kill()
		<-j.done
	}
}
