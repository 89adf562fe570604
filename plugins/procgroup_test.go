//go:build linux

package plugins_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alive reports whether pid is a live process (a zombie is not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...; comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func waitGone(t *testing.T, pid int, within time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Errorf("%s (pid %d) still alive after %v", what, pid, within)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOwnProcessGroup: the plugin leads a process group of its own, and
// Close leaves nothing behind, not even a process the plugin started.
func TestOwnProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	cfg := startConfig(t, "spawner")
	cfg.Env = append(cfg.Env, pidFileEnv+"="+pidFile)
	p := startGreeter(t, cfg)
	pgid, err := syscall.Getpgid(p.Pid())
	if err != nil {
		t.Fatal(err)
	}
	if pgid != p.Pid() || pgid == syscall.Getpgrp() {
		t.Errorf("plugin %d is in process group %d; the node's is %d", p.Pid(), pgid, syscall.Getpgrp())
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	child, _ := strconv.Atoi(string(b))
	if !alive(child) {
		t.Fatalf("the plugin's child %d is not running", child)
	}
	invoke(t, p, greeterCall("sayHello", nil, "x"))
	p.Close()
	if alive(p.Pid()) {
		t.Errorf("plugin %d alive after Close", p.Pid())
	}
	waitGone(t, child, 2*time.Second, "the plugin's child")
}

// TestCloseChildHoldsOutput: a process the plugin started that shares the
// plugin's stdout and stderr does not keep Close waiting for them to end:
// it is killed with the plugin's group.
func TestCloseChildHoldsOutput(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	cfg := startConfig(t, "pipeholder")
	cfg.Env = append(cfg.Env, pidFileEnv+"="+pidFile)
	p := startGreeter(t, cfg)
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	child, _ := strconv.Atoi(string(b))
	invoke(t, p, greeterCall("sayHello", nil, "x"))
	closed := make(chan struct{})
	go func() {
		p.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(15 * time.Second):
		syscall.Kill(child, syscall.SIGKILL) // lets Close, and the test, end
		t.Fatal("Close still waiting after 15s while the plugin's child holds its stdout and stderr")
	}
	waitGone(t, child, 2*time.Second, "the plugin's child")
}

// startNode runs this binary as a node (runNode) in a process group of its
// own, the way a shell runs a foreground job, and returns it with its
// plugin's pid.
func startNode(t *testing.T) (*exec.Cmd, *bufio.Scanner, int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), modeEnv+"=node")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = &tWriter{t: t}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := bufio.NewScanner(out)
	var plugin int
	if !lines.Scan() {
		t.Fatalf("the node said nothing: %v", lines.Err())
	}
	if _, err := fmt.Sscanf(lines.Text(), "plugin %d", &plugin); err != nil {
		t.Fatalf("node said %q", lines.Text())
	}
	return cmd, lines, plugin
}

// TestSignalToNodeGroup sends SIGTERM to the node's process group, as a
// terminal or a service manager does: the plugin does not get it, so the
// node can still call it while stopping, then closes it. (SIGINT would
// prove less: go-plugin's Serve ignores it in the plugin anyway.)
func TestSignalToNodeGroup(t *testing.T) {
	node, lines, plugin := startNode(t)
	if err := syscall.Kill(-node.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var said []string
	for lines.Scan() {
		said = append(said, lines.Text())
	}
	if err := node.Wait(); err != nil {
		t.Errorf("node: %v", err)
	}
	if want := []string{"Hello, after the signal", "closed"}; strings.Join(said, "\n") != strings.Join(want, "\n") {
		t.Errorf("node said %q, want %q", said, want)
	}
	waitGone(t, plugin, time.Second, "plugin")
}

// TestNodeKilled: a node killed with SIGKILL cannot stop its plugins; they
// notice their parent is gone and exit.
func TestNodeKilled(t *testing.T) {
	node, _, plugin := startNode(t)
	if err := node.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := node.Wait(); err == nil || !errors.As(err, new(*exec.ExitError)) {
		t.Errorf("node: %v", err)
	}
	waitGone(t, plugin, 3*time.Second, "plugin of the killed node")
}
