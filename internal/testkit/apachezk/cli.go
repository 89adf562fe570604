package apachezk

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/syncbuf"
)

// CLI runs Apache's zkCli (org.apache.zookeeper.ZooKeeperMain) against addr
// with commands fed on stdin, one per line, and returns its combined output.
// The CLI exits when stdin ends; ctx bounds the whole run.
func CLI(ctx context.Context, t testing.TB, addr string, commands ...string) (string, error) {
	t.Helper()
	cp := Classpath(t)
	return runCLI(ctx, cp, addr, strings.NewReader(strings.Join(commands, "\n")+"\n"))
}

// StartCLI starts zkCli with a caller-owned stdin, for interactive scripts
// (e.g. set a watch, change the node elsewhere, then quit). The process is
// killed when the test ends if still running.
func StartCLI(t testing.TB, addr string) *CLISession {
	t.Helper()
	cp := Classpath(t)
	cmd := cliCommand(context.Background(), cp, addr)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("apachezk: zkCli stdin: %v", err)
	}
	s := &CLISession{cmd: cmd, stdin: stdin, out: &syncbuf.Buffer{}, done: make(chan struct{})}
	cmd.Stdout = s.out
	cmd.Stderr = s.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("apachezk: start zkCli: %v", err)
	}
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // a no-op once the process was reaped
		<-s.done
	})
	return s
}

func cliCommand(ctx context.Context, cp, addr string) *exec.Cmd {
	return exec.CommandContext(ctx, "java",
		"-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-cp", cp,
		"org.apache.zookeeper.ZooKeeperMain", "-server", addr)
}

func runCLI(ctx context.Context, cp, addr string, stdin *strings.Reader) (string, error) {
	cmd := cliCommand(ctx, cp, addr)
	cmd.Stdin = stdin
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("zkCli against %s: %w", addr, err)
	}
	return string(out), nil
}

// CLISession is a running zkCli with a stdin the test writes to.
type CLISession struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *syncbuf.Buffer
	done  chan struct{}
}

// Send writes one command line.
func (s *CLISession) Send(command string) error {
	if _, err := io.WriteString(s.stdin, command+"\n"); err != nil {
		return fmt.Errorf("zkCli %q: %w", command, err)
	}
	return nil
}

// Output is everything the CLI printed so far.
func (s *CLISession) Output() string { return s.out.String() }

// WaitForLine polls until the output written after byte offset from has a
// line equal to want (surrounding spaces ignored), or the timeout passes.
func (s *CLISession) WaitForLine(from int, want string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		for _, line := range strings.Split(s.out.String()[from:], "\n") {
			if strings.TrimSpace(line) == want {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Close ends stdin (zkCli exits at EOF) and waits up to timeout for it.
func (s *CLISession) Close(timeout time.Duration) error {
	_ = s.stdin.Close()
	select {
	case <-s.done:
		return nil
	case <-time.After(timeout):
		_ = s.cmd.Process.Kill()
		<-s.done
		return fmt.Errorf("zkCli did not exit within %s after stdin closed", timeout)
	}
}
