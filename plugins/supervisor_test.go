package plugins_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/plugins"
)

// event is one callback of a supervisor.
type event struct {
	kind     string // up, down, swap, refused
	pid      int    // the process serving (up, swap), gone (down), kept (refused)
	prev     int    // swap: the process swapped out
	services []plugins.ServiceDesc
	err      error
	attempt  int           // refused
	retry    time.Duration // refused
}

// supervise runs a supervisor of cfg until the test ends and returns it
// with the stream of its callbacks.
func supervise(t *testing.T, cfg plugins.SupervisorConfig) (*plugins.Supervisor, <-chan event, context.CancelFunc) {
	t.Helper()
	events := make(chan event, 64)
	cfg.OnUp = func(p *plugins.Plugin, s []plugins.ServiceDesc) {
		events <- event{kind: "up", pid: p.Pid(), services: s}
	}
	cfg.OnDown = func(p *plugins.Plugin, err error) { events <- event{kind: "down", pid: p.Pid(), err: err} }
	cfg.OnSwap = func(prev, next *plugins.Plugin, s []plugins.ServiceDesc) {
		events <- event{kind: "swap", pid: next.Pid(), prev: prev.Pid(), services: s}
	}
	cfg.OnRefused = func(prev *plugins.Plugin, err error, attempt int, retry time.Duration) {
		events <- event{kind: "refused", pid: prev.Pid(), err: err, attempt: attempt, retry: retry}
	}
	s := plugins.NewSupervisor(cfg)
	return s, events, runSupervisor(t, s)
}

// runSupervisor runs s until the test ends, or cancel; Run must then
// return nil within 15s.
func runSupervisor(t *testing.T, s *plugins.Supervisor) (cancel context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(15 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
	return cancel
}

// nextEvent is the next callback, which must be of kind.
func nextEvent(t *testing.T, events <-chan event, kind string) event {
	t.Helper()
	select {
	case e := <-events:
		if e.kind != kind {
			t.Fatalf("event %+v, want %s", e, kind)
		}
		return e
	case <-time.After(15 * time.Second):
		t.Fatalf("no %s event within 15s", kind)
	}
	return event{}
}

// TestKillMidCall kills the plugin with SIGKILL during a call: the call
// fails at once with ErrConnection, OnDown fires, the plugin comes back,
// OnUp fires, and calls work again.
func TestKillMidCall(t *testing.T) {
	s, events, _ := supervise(t, plugins.SupervisorConfig{Config: startConfig(t, "greeter")})
	up := nextEvent(t, events, "up")
	if len(up.services) != 1 || up.services[0].Key() != "org.example.Greeter:1.0.0" {
		t.Fatalf("OnUp services = %+v", up.services)
	}
	invoke(t, s, greeterCall("sayHello", nil, "before"))

	type outcome struct {
		err error
		at  time.Time
	}
	out := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := s.Invoke(ctx, greeterCall("sleep", nil, int32(20000)))
		out <- outcome{err, time.Now()}
	}()
	time.Sleep(200 * time.Millisecond) // let the call reach the handler
	killed := time.Now()
	if err := syscall.Kill(up.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var o outcome
	select {
	case o = <-out:
	case <-time.After(5 * time.Second):
		t.Fatal("the call in flight did not fail after the plugin was killed")
	}
	took := o.at.Sub(killed)
	t.Logf("in-flight call failed %v after kill -9: %v", took, o.err)
	if !errors.Is(o.err, rpc.ErrConnection) {
		t.Errorf("err = %v, want ErrConnection", o.err)
	}
	if took > 500*time.Millisecond {
		t.Errorf("the call took %v to fail", took)
	}

	down := nextEvent(t, events, "down")
	if down.pid != up.pid || down.err == nil || !strings.Contains(down.err.Error(), "killed") {
		t.Errorf("OnDown = %+v", down)
	}
	again := nextEvent(t, events, "up")
	if again.pid == up.pid || len(again.services) != 1 {
		t.Errorf("OnUp after restart = %+v", again)
	}
	if res := invoke(t, s, greeterCall("sayHello", nil, "after")); res.Value != "Hello, after" {
		t.Errorf("after restart: %#v", res)
	}
}

func TestSupervisorStops(t *testing.T) {
	s, events, cancel := supervise(t, plugins.SupervisorConfig{Config: startConfig(t, "greeter")})
	up := nextEvent(t, events, "up")
	cancel()
	down := nextEvent(t, events, "down")
	if !errors.Is(down.err, context.Canceled) {
		t.Errorf("OnDown err = %v", down.err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(up.pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running after cancel", up.pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := s.Invoke(context.Background(), greeterCall("sayHello", nil, "x")); !errors.Is(err, rpc.ErrConnection) {
		t.Errorf("call after stop: %v", err)
	}
}

// TestSupervisorBackoff: a plugin that never starts is retried with
// growing waits, and cancel ends Run.
func TestSupervisorBackoff(t *testing.T) {
	var starts []time.Time
	rec := newRecorder()
	cfg := startConfig(t, "exit")
	cfg.Logger = slog.New(rec)
	s, _, cancel := supervise(t, plugins.SupervisorConfig{Config: cfg, MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	for deadline := time.Now().Add(15 * time.Second); len(starts) < 5 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		starts = starts[:0]
		for _, r := range rec.all() {
			if r.Message == "plugin failed to start" {
				starts = append(starts, r.Time)
			}
		}
	}
	st := s.State()
	cancel()
	if len(starts) < 5 {
		t.Fatalf("%d failed starts logged, want several", len(starts))
	}
	// A plugin that exits at once says so, and its state says it is down.
	if st.Up || st.Failures < 5 || st.Err == nil || !strings.Contains(st.Err.Error(), "it exited with status 3 before the handshake") {
		t.Errorf("State = %+v, want down after 5 failures, exited with status 3", st)
	}
	// Waits: 50ms, 100ms, then 200ms from the third retry on.
	for i := 3; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < 190*time.Millisecond {
			t.Errorf("retry %d came %v after the previous one; backoff should have reached 200ms", i, gap)
		}
	}
}

// TestPluginOutput: slog in the plugin, its stdout and its stderr reach the
// node's logger tagged with the plugin name.
func TestPluginOutput(t *testing.T) {
	rec := newRecorder()
	cfg := startConfig(t, "greeter")
	cfg.Logger = slog.New(rec)
	p := startGreeter(t, cfg)
	invoke(t, p, greeterCall("log", nil, "hello"))
	want := map[string]bool{"hello": false, "hello on stdout": false, "hello on stderr": false}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range rec.all() {
			if _, ok := want[r.Message]; ok && attr(r, "plugin") == "greeter" {
				want[r.Message] = true
			}
		}
		if want["hello"] && want["hello on stdout"] && want["hello on stderr"] {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for msg, ok := range want {
		if !ok {
			t.Errorf("no log record %q tagged plugin=greeter", msg)
		}
	}
	for _, r := range rec.all() {
		if r.Message == "hello" && (r.Level != slog.LevelInfo || attr(r, "where") != "slog") {
			t.Errorf("slog record lost level or attributes: %v %v", r.Level, r)
		}
	}
}

// recorder is a slog.Handler keeping every record, with the attributes of
// With applied.
type recorder struct {
	store *recStore
	attrs []slog.Attr
}

type recStore struct {
	mu   sync.Mutex
	recs []slog.Record
}

func newRecorder() *recorder { return &recorder{store: &recStore{}} }

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	rec = rec.Clone()
	rec.AddAttrs(r.attrs...)
	r.store.mu.Lock()
	defer r.store.mu.Unlock()
	r.store.recs = append(r.store.recs, rec)
	return nil
}

func (r *recorder) WithAttrs(as []slog.Attr) slog.Handler {
	return &recorder{store: r.store, attrs: append(append([]slog.Attr(nil), r.attrs...), as...)}
}

func (r *recorder) WithGroup(string) slog.Handler { return r }

func (r *recorder) all() []slog.Record {
	r.store.mu.Lock()
	defer r.store.mu.Unlock()
	return append([]slog.Record(nil), r.store.recs...)
}

func attr(r slog.Record, key string) string {
	var v string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.String()
			return false
		}
		return true
	})
	return v
}

// TestSupervisorState: State follows the plugin: up with its pid once
// Tried is closed, down with the reason after a kill -9, then up again
// with a new pid.
func TestSupervisorState(t *testing.T) {
	// The backoff leaves time to look at the state between death and restart.
	s, events, _ := supervise(t, plugins.SupervisorConfig{Config: startConfig(t, "greeter"), MinBackoff: time.Second})
	up := nextEvent(t, events, "up")
	select {
	case <-s.Tried():
	case <-time.After(10 * time.Second):
		t.Fatal("Tried not closed 10s after the plugin came up")
	}
	if st := s.State(); !st.Up || st.Pid != up.pid || st.Failures != 0 || st.Err != nil || st.Name != "greeter" {
		t.Errorf("State when up = %+v", st)
	}
	if err := syscall.Kill(up.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, events, "down")
	if st := s.State(); st.Up || st.Pid != 0 || st.Failures != 1 || st.Err == nil || !strings.Contains(st.Err.Error(), "killed") {
		t.Errorf("State after kill -9 = %+v", st)
	}
	again := nextEvent(t, events, "up")
	deadline := time.Now().Add(5 * time.Second)
	for st := s.State(); !st.Up; st = s.State() { // set once OnUp has returned
		if time.Now().After(deadline) {
			t.Fatalf("State 5s after the restart = %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := s.State(); st.Pid != again.pid || st.Failures != 0 || st.Err == nil {
		t.Errorf("State after the restart = %+v, want pid %d, no failures since, the last error kept", st, again.pid)
	}
}
