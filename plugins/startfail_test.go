//go:build linux

package plugins_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/plugins"
)

// script writes an executable shell script with body to dir; PIDS in body
// becomes the file where it appends the pids of the processes it starts.
func script(t *testing.T, dir, name, body string) (path, pids string) {
	t.Helper()
	path, pids = filepath.Join(dir, name), filepath.Join(dir, name+".pids")
	body = "#!/bin/sh\n" + strings.ReplaceAll(body, "PIDS", pids)
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, pids
}

// pidsIn reads the pids a script appended to file.
func pidsIn(t *testing.T, file string) []int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %q is not a pid", file, f)
		}
		pids = append(pids, pid)
	}
	return pids
}

// TestFailedStartLeavesNothing: a plugin that never completes the
// handshake (it is silent, prints something else, or exits) is refused
// within its start timeout, with the reason, and nothing it started
// survives, not even a child that holds its stdout and stderr open.
func TestFailedStartLeavesNothing(t *testing.T) {
	const timeout = time.Second
	tests := []struct{ name, body, want string }{
		{"silent", "sleep 100 &\necho $! >> PIDS\nwait\n",
			"handshake failed: timeout while waiting for plugin to start (1s)"},
		{"garbage", "sleep 100 &\necho $! >> PIDS\necho 'hello, I am a shell script'\nwait\n",
			"handshake failed: Unrecognized remote plugin message: hello, I am a shell script"},
		{"exits", "echo 'cannot open config' >&2\nexit 3\n",
			"it exited with status 3 before the handshake; its stderr ended with: cannot open config"},
		{"exits leaving a child", "sleep 100 &\necho $! >> PIDS\nexit 3\n",
			"it exited with status 3 before the handshake"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, pids := script(t, t.TempDir(), "plugin.sh", tt.body)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			type outcome struct {
				p   *plugins.Plugin
				err error
			}
			out := make(chan outcome, 1)
			go func() {
				p, err := plugins.Start(ctx, plugins.Config{Path: path, StartTimeout: timeout, Logger: testLogger(t)})
				out <- outcome{p, err}
			}()
			var o outcome
			select {
			case o = <-out:
			case <-time.After(timeout + 15*time.Second):
				for _, pid := range pidsIn(t, pids) {
					syscall.Kill(pid, syscall.SIGKILL) // lets Start, and the test, end
				}
				t.Fatalf("Start still running %v after it began, with a %v start timeout", time.Since(start), timeout)
			}
			p, err, took := o.p, o.err, time.Since(start)
			if err == nil {
				p.Close()
				t.Fatal("started")
			}
			t.Logf("refused after %v: %v", took.Round(time.Millisecond), err)
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "plugin plugin.sh ("+path+") refused") {
				t.Errorf("err = %v\nwant it to name the plugin and say %q", err, tt.want)
			}
			for _, pid := range pidsIn(t, pids) {
				waitGone(t, pid, 2*time.Second, "the plugin's child")
			}
		})
	}
}

// TestSupervisorNoHandshake: a plugin that never completes the handshake
// is logged with its name and reason and retried with backoff, each
// attempt's processes ended; its state says it is down and why; canceling
// Run during an attempt stops it at once and leaves nothing behind.
func TestSupervisorNoHandshake(t *testing.T) {
	path, pids := script(t, t.TempDir(), "silent.sh", "sleep 100 &\necho $! >> PIDS\nwait\n")
	rec := newRecorder()
	s := plugins.NewSupervisor(plugins.SupervisorConfig{
		Config:     plugins.Config{Path: path, StartTimeout: 300 * time.Millisecond, Logger: slog.New(rec)},
		MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	select {
	case <-s.Tried():
	case <-time.After(15 * time.Second):
		cancel()
		for _, pid := range pidsIn(t, pids) {
			syscall.Kill(pid, syscall.SIGKILL) // lets Run, and the test, end
		}
		t.Fatal("the first start attempt has not ended after 15s")
	}
	if st := s.State(); st.Up || st.Pid != 0 || st.Failures < 1 || st.Err == nil || !strings.Contains(st.Err.Error(), "timeout") || st.Name != "silent.sh" || st.Path != path {
		t.Errorf("State after the first attempt = %+v", st)
	}
	failures := func() (n int) {
		for _, r := range rec.all() {
			if r.Message == "plugin failed to start" && attr(r, "plugin") == "silent.sh" && strings.Contains(attr(r, "err"), "timeout while waiting for plugin to start") {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(20 * time.Second)
	for failures() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d failed starts logged in 20s, want 3", failures())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st := s.State(); st.Failures < 3 {
		t.Errorf("State after 3 failed starts = %+v", st)
	}
	// The attempts that failed left nothing; one may be under way now.
	started := pidsIn(t, pids)
	for _, pid := range started[:len(started)-1] {
		waitGone(t, pid, 2*time.Second, "the child of a failed attempt")
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run still running 5s after cancel")
	}
	for _, pid := range pidsIn(t, pids) {
		waitGone(t, pid, 2*time.Second, "the plugin's child after Run returned")
	}
}
