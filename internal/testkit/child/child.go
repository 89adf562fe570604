// Package child builds the dubbo binaries and runs them as a test's child
// processes, for the suites in test/ that kill, stop and read them.
package child

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/syncbuf"
)

// Build compiles pkgs (as `go build` takes them, relative to the test's
// package) into a new temporary directory and returns the directory; each
// binary is named for its package's folder.
func Build(pkgs ...string) (string, error) {
	dir, err := os.MkdirTemp("", "dubbo-test-bin-")
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", append([]string{"build", "-o", dir + string(filepath.Separator)}, pkgs...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build %s: %w\n%s", strings.Join(pkgs, " "), err, out)
	}
	return dir, nil
}

// Dubbo is the dubbo command of the module at a root, built on first use
// and shared by the tests of one test binary.
type Dubbo struct{ build func() (string, error) }

// NewDubbo returns the dubbo command of the module at root (relative to
// the test's package); nothing is built until a test starts it.
func NewDubbo(root string) *Dubbo {
	return &Dubbo{build: sync.OnceValues(func() (string, error) {
		dir, err := Build(root)
		return filepath.Join(dir, "dubbo"), err
	})}
}

// Path builds the command if no test has and returns its path.
func (d *Dubbo) Path() (string, error) { return d.build() }

// Run runs `dubbo args...` in dir as Run does, building it first if no
// test has; a build that failed fails t.
func (d *Dubbo) Run(t testing.TB, name, dir string, args ...string) *Proc {
	t.Helper()
	bin, err := d.Path()
	if err != nil {
		t.Fatal(err)
	}
	return Run(t, name, dir, bin, args...)
}

// Env is the test's environment without DUBBO_* variables, so that a
// developer's overrides do not reach the processes under test.
func Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DUBBO_") {
			env = append(env, kv)
		}
	}
	return env
}

// Proc is one started child process. Out holds its stdout and stderr.
type Proc struct {
	Cmd  *exec.Cmd
	Out  *syncbuf.Buffer
	done chan struct{}
	err  error
}

// Start starts cmd with its output kept in a buffer of at most limit bytes
// (0: unbounded), and reaps it when it exits.
func Start(cmd *exec.Cmd, limit int) (*Proc, error) {
	p := &Proc{Cmd: cmd, Out: &syncbuf.Buffer{Limit: limit}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.Out, p.Out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Run starts bin with args in dir, with the environment of Env and its
// output kept up to 1 MiB; when t ends it is killed and reaped, and its
// output printed if t failed.
func Run(t testing.TB, name, dir, bin string, args ...string) *Proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, Env()
	p, err := Start(cmd, 1<<20)
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		if !p.Kill(10 * time.Second) {
			t.Errorf("%s (pid %d) not reaped 10s after SIGKILL", name, p.Pid())
		}
		if t.Failed() {
			t.Logf("%s (pid %d) output:\n%s", name, p.Pid(), p.Out.String())
		}
	})
	return p
}

// Kill sends SIGKILL, as a crash, and waits at most wait until the process
// is reaped; it reports whether it was.
func (p *Proc) Kill(wait time.Duration) bool {
	if !p.Running() {
		return true
	}
	_ = p.Cmd.Process.Kill()
	select {
	case <-p.done:
		return true
	case <-time.After(wait):
		return false
	}
}

// Pid is the process's id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Done is closed once the process has exited and been reaped.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is how the process ended (cmd.Wait's error); valid once Done is
// closed.
func (p *Proc) Err() error { return p.err }

// Running reports whether the process has not exited yet.
func (p *Proc) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}
