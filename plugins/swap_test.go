package plugins_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/dubbo-lab/dubbo/examples/greet/greetpb"
	"github.com/dubbo-lab/dubbo/internal/testkit/child"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/plugins"
)

// binaryPath is a plugin path whose binary a test replaces the way a build
// does: the new file is written beside it, then renamed over it.
type binaryPath struct {
	t    *testing.T
	path string
}

func newBinaryPath(t *testing.T) binaryPath {
	return binaryPath{t: t, path: filepath.Join(t.TempDir(), "plugin")}
}

// install makes the binary this test binary in mode (a script that runs
// it), and returns when it was renamed into place.
func (b binaryPath) install(mode string) time.Time {
	b.t.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.t.Fatal(err)
	}
	return b.write([]byte(fmt.Sprintf("#!/bin/sh\nexport %s=%s\nexec %q \"$@\"\n", modeEnv, mode, exe)))
}

// installCopy makes the binary a copy of the file at src.
func (b binaryPath) installCopy(src string) time.Time {
	b.t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.write(data)
}

func (b binaryPath) write(data []byte) time.Time {
	b.t.Helper()
	tmp := b.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.Rename(tmp, b.path); err != nil {
		b.t.Fatal(err)
	}
	return time.Now()
}

// superviseBinary runs a supervisor of b with Watch on until the test
// ends, and returns it with the stream of its callbacks.
func superviseBinary(t *testing.T, b binaryPath, cfg plugins.SupervisorConfig) (*plugins.Supervisor, <-chan event) {
	t.Helper()
	cfg.Config = plugins.Config{Path: b.path, Name: "greeter", Logger: testLogger(t), StartTimeout: 10 * time.Second}
	cfg.Watch = 20 * time.Millisecond
	s, events, _ := supervise(t, cfg)
	return s, events
}

// callers call sayHello in a loop on n goroutines until stopped, and
// keep what they were answered.
type callers struct {
	stop    context.CancelFunc
	wg      sync.WaitGroup
	calls   atomic.Int64
	mu      sync.Mutex
	errs    []error
	answers [][]string // by caller, each answer that differs from the one before
	firstHi chan time.Time
}

func startCallers(s *plugins.Supervisor, n int) *callers {
	ctx, stop := context.WithCancel(context.Background())
	c := &callers{stop: stop, answers: make([][]string, n), firstHi: make(chan time.Time, n)}
	for i := range n {
		c.wg.Go(func() {
			for ctx.Err() == nil {
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				res, err := s.Invoke(cctx, greeterCall("sayHello", nil, "x"))
				cancel()
				if ctx.Err() != nil {
					return
				}
				c.calls.Add(1)
				c.mu.Lock()
				if err != nil {
					c.errs = append(c.errs, err)
				} else if a := c.answers[i]; len(a) == 0 || a[len(a)-1] != res.Value {
					c.answers[i] = append(a, res.Value.(string))
					if res.Value == "Hi, x" {
						c.firstHi <- time.Now()
					}
				}
				c.mu.Unlock()
			}
		})
	}
	return c
}

// awaitHi waits until every caller was answered by the new binary, and
// returns when the first was.
func (c *callers) awaitHi(t *testing.T) time.Time {
	t.Helper()
	var first time.Time
	for i := range cap(c.firstHi) {
		select {
		case at := <-c.firstHi:
			if i == 0 {
				first = at
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of %d callers answered by the new binary within 5s", i, cap(c.firstHi))
		}
	}
	return first
}

// end stops the callers and fails t for any failed call.
func (c *callers) end(t *testing.T) [][]string {
	t.Helper()
	c.stop()
	c.wg.Wait()
	for i, err := range c.errs {
		if i == 5 {
			t.Errorf("... %d failed calls in all", len(c.errs))
			break
		}
		t.Errorf("a call failed: %v", err)
	}
	t.Logf("%d calls", c.calls.Load())
	return c.answers
}

// TestSwap replaces the plugin's binary under calls: the new process
// takes the calls once it is up, the old one finishes the call it had
// under way and stops, and no call fails.
func TestSwap(t *testing.T) {
	b := newBinaryPath(t)
	b.install("greeter")
	s, events := superviseBinary(t, b, plugins.SupervisorConfig{})
	up := nextEvent(t, events, "up")

	slow := make(chan error, 1) // a call under way on the old process at the swap
	go func() {
		res, err := s.Invoke(context.Background(), greeterCall("sleep", nil, int32(800)))
		if err == nil && res.Value != "slept" {
			err = fmt.Errorf("sleep answered %#v", res.Value)
		}
		slow <- err
	}()
	c := startCallers(s, 8)
	time.Sleep(200 * time.Millisecond)

	installed := b.install("greeter2")
	swap := nextEvent(t, events, "swap")
	if swap.prev != up.pid || swap.pid == up.pid || len(swap.services) != 1 || swap.services[0].Key() != "org.example.Greeter:1.0.0" {
		t.Errorf("OnSwap: %+v, want pid %d swapped out for a new one serving org.example.Greeter:1.0.0", swap, up.pid)
	}
	hi := c.awaitHi(t)
	t.Logf("the new binary answered %v after it was renamed into place", hi.Sub(installed).Round(time.Millisecond))
	if err := <-slow; err != nil {
		t.Errorf("the call under way on the old process: %v", err)
	}
	waitGone(t, up.pid, 5*time.Second, "the swapped-out process")
	time.Sleep(100 * time.Millisecond)
	for i, answers := range c.end(t) {
		// A caller's calls after its first answer from the new binary all
		// go to it.
		if len(answers) == 0 || answers[len(answers)-1] != "Hi, x" || len(answers) > 2 {
			t.Errorf("caller %d was answered %q, want Hello then Hi", i, answers)
		}
	}
	if st := s.State(); !st.Up || st.Pid != swap.pid || st.Swaps != 1 || st.Refused != nil {
		t.Errorf("State = %+v, want up with pid %d after 1 swap", st, swap.pid)
	}
	select {
	case e := <-events:
		t.Errorf("unexpected event %+v", e)
	default:
	}
}

// TestSwapRefused: a new binary that exits at once never takes a call: the
// old process serves on, the new one is tried again with growing waits,
// and the next binary that starts takes over at once.
func TestSwapRefused(t *testing.T) {
	b := newBinaryPath(t)
	b.install("greeter")
	s, events := superviseBinary(t, b, plugins.SupervisorConfig{MinBackoff: 50 * time.Millisecond, MaxBackoff: 400 * time.Millisecond})
	up := nextEvent(t, events, "up")
	c := startCallers(s, 4)

	b.install("exit")
	var retries []time.Duration
	for len(retries) < 5 {
		e := nextEvent(t, events, "refused")
		if e.pid != up.pid || e.err == nil || e.attempt != len(retries)+1 {
			t.Errorf("OnRefused: %+v, want pid %d kept, attempt %d", e, up.pid, len(retries)+1)
		}
		retries = append(retries, e.retry)
	}
	if st := s.State(); st.Refused == nil || !strings.Contains(st.Refused.Error(), "exit") {
		t.Errorf("State.Refused = %v, want why the binary was refused", st.Refused)
	}
	if want := []time.Duration{50, 100, 200, 400, 400}; fmt.Sprint(retries) != fmt.Sprint(scale(want, time.Millisecond)) {
		t.Errorf("retries in %v, want %v", retries, scale(want, time.Millisecond))
	}
	if st := s.State(); !st.Up || st.Pid != up.pid || st.Refused == nil || st.Swaps != 0 {
		t.Errorf("State with a refused binary = %+v, want up with pid %d and why the new one was refused", st, up.pid)
	}

	installed := b.install("greeter2")
	swap := nextEvent(t, events, "swap")
	if took := time.Since(installed); took > 300*time.Millisecond+time.Second {
		t.Errorf("the good binary took over %v after it was installed; a new binary should not wait for the retry", took)
	}
	if swap.prev != up.pid {
		t.Errorf("OnSwap %+v, want pid %d swapped out", swap, up.pid)
	}
	c.awaitHi(t)
	for i, answers := range c.end(t) {
		if answers[0] != "Hello, x" || answers[len(answers)-1] != "Hi, x" || len(answers) > 2 {
			t.Errorf("caller %d was answered %q, want Hello then Hi", i, answers)
		}
	}
	if st := s.State(); st.Refused != nil || st.Swaps != 1 {
		t.Errorf("State after the swap = %+v", st)
	}
}

func scale(ds []time.Duration, unit time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d * unit
	}
	return out
}

// TestNewBinaryWhileDown: a plugin that cannot start waits out its backoff,
// except when a new binary appears: that one is started at once.
func TestNewBinaryWhileDown(t *testing.T) {
	b := newBinaryPath(t)
	b.install("exit")
	s, events := superviseBinary(t, b, plugins.SupervisorConfig{MinBackoff: 10 * time.Second})
	select {
	case <-s.Tried():
	case <-time.After(15 * time.Second):
		t.Fatal("the first start has not ended after 15s")
	}
	if st := s.State(); st.Up {
		t.Fatalf("State = %+v, want down", st)
	}
	installed := b.install("greeter")
	nextEvent(t, events, "up")
	if took := time.Since(installed); took > time.Second {
		t.Errorf("the new binary was up %v after it was installed, want under 1s rather than the 10s backoff", took)
	}
	if res := invoke(t, s, greeterCall("sayHello", nil, "back")); res.Value != "Hello, back" {
		t.Errorf("sayHello = %#v", res.Value)
	}
}

// TestSwapStreams swaps examples/greet under a bidi stream: the stream
// goes on with the old process until it ends, new calls and streams go to
// the new one, and the old one stops once its stream has ended.
func TestSwapStreams(t *testing.T) {
	dir, err := child.Build("../examples/greet")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	built := filepath.Join(dir, "greet")
	b := newBinaryPath(t)
	b.installCopy(built)
	s, events := superviseBinary(t, b, plugins.SupervisorConfig{})
	up := nextEvent(t, events, "up")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	open := func() greetStream {
		st, err := s.OpenStream(ctx, plugins.ProtoCall{Service: "greet.GreetService", Method: "GreetStream"})
		if err != nil {
			t.Fatalf("OpenStream: %v", err)
		}
		return greetStream{t, st}
	}
	roundTrip := func(g greetStream, name string) {
		t.Helper()
		g.send(&greetpb.GreetRequest{Name: name})
		if got, err := g.recv(); err != nil || !strings.Contains(got, name) {
			t.Errorf("GreetStream %s: %q, %v", name, got, err)
		}
	}
	old := open()
	roundTrip(old, "before")

	b.installCopy(built)
	swap := nextEvent(t, events, "swap")
	if swap.prev != up.pid {
		t.Fatalf("OnSwap %+v, want pid %d swapped out", swap, up.pid)
	}
	fresh := open()
	roundTrip(fresh, "new")
	roundTrip(old, "during")
	time.Sleep(300 * time.Millisecond)
	if !alive(up.pid) {
		t.Fatal("the old process stopped while its stream was open")
	}
	roundTrip(old, "still")
	if err := old.s.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := old.recv(); err != io.EOF {
		t.Errorf("the old stream ended with %v, want OK", err)
	}
	waitGone(t, up.pid, 5*time.Second, "the swapped-out process, its stream ended")
	roundTrip(fresh, "after")
	fresh.s.CloseSend()
	var resp greetpb.GreetResponse
	b2, err := callUnary(ctx, s, "Greet", &greetpb.GreetRequest{Name: "unary"})
	if err != nil || proto.Unmarshal(b2, &resp) != nil || resp.Greeting == "" {
		t.Errorf("Greet after the swap: %v", err)
	}
}

// callUnary calls a unary method of greet.GreetService through s.
func callUnary(ctx context.Context, s *plugins.Supervisor, method string, req proto.Message) ([]byte, error) {
	b, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	type outcome struct {
		resp []byte
		st   *plugins.Status
	}
	ch := make(chan outcome, 1)
	s.CallProto(ctx, plugins.ProtoCall{Service: "greet.GreetService", Method: method}, b, func(resp []byte, _ rpc.Metadata, st *plugins.Status) {
		ch <- outcome{resp, st}
	})
	o := <-ch
	if o.st != nil {
		return nil, o.st
	}
	return o.resp, nil
}
