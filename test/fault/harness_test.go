//go:build unix

package fault

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/internal/testkit/syncbuf"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

const providersPath = "/dubbo/" + providertest.GreeterInterface + "/providers"

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// zkConn is a plain go-zookeeper session, what an operator's tool uses.
func zkConn(t testing.TB, addr string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// providerNode is the path of the provider node registered for addr, or "".
func providerNode(zc *zk.Conn, addr string) (string, error) {
	kids, _, err := zc.Children(providersPath)
	if err != nil {
		return "", err
	}
	for _, k := range kids {
		if u, err := url.Decode(k); err == nil && u.Address() == addr {
			return providersPath + "/" + k, nil
		}
	}
	return "", nil
}

// providerProc is a provider process (see runProvider).
type providerProc struct {
	addr  string // registered host:port
	cmd   *exec.Cmd
	stdin io.Closer
	logs  *syncbuf.Buffer

	ready chan string // the READY line's address
	mu    sync.Mutex
	lines []string // stdout after READY

	exited   chan struct{} // closed once reaped
	exitErr  error
	exitedAt time.Time
}

// startProvider starts a provider process registered at zkAddr and waits
// for it to serve. It is killed (and reaped) in t.Cleanup.
func startProvider(t testing.TB, zkAddr string) *providerProc {
	t.Helper()
	p := launchProvider(t, providerOpts{registry: "zookeeper://" + zkAddr})
	p.waitReady(t, 20*time.Second)
	return p
}

// providerOpts describe one provider process; zero fields take the
// defaults of runProvider.
type providerOpts struct {
	registry     string        // registry URL, with parameters (session=ms)
	group        string        // Greeter's group
	registerMode string        // interface, instance or all
	stuck        time.Duration // every call's handler is stuck this long
}

// launchProvider starts a provider process without waiting for it to
// serve (see waitReady). It is killed (and reaped) in t.Cleanup.
func launchProvider(t testing.TB, o providerOpts) *providerProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRole+"=provider", envRegistry+"="+o.registry,
		envGroup+"="+o.group, envRegisterMode+"="+o.registerMode)
	if o.stuck > 0 {
		cmd.Env = append(cmd.Env, envStuck+"="+o.stuck.String())
	}
	p := &providerProc{cmd: cmd, logs: &syncbuf.Buffer{}, exited: make(chan struct{}), ready: make(chan string, 1)}
	cmd.Stderr = p.logs
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = stdin
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if addr, ok := strings.CutPrefix(line, "READY "); ok {
				p.ready <- addr
				continue
			}
			p.mu.Lock()
			p.lines = append(p.lines, line)
			p.mu.Unlock()
		}
		p.exitErr = cmd.Wait()
		p.exitedAt = time.Now()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Signal(syscall.SIGCONT)
			_ = cmd.Process.Kill()
			select {
			case <-p.exited:
			case <-time.After(10 * time.Second):
				t.Errorf("provider process %d not reaped 10s after SIGKILL", cmd.Process.Pid)
			}
		}
		p.stdin.Close()
		if t.Failed() {
			t.Logf("provider %s (pid %d) stderr:\n%s", p.addr, cmd.Process.Pid, p.logs.String())
		}
	})
	return p
}

// waitReady waits until the provider process serves and has exported
// Greeter (it printed READY), and sets p.addr.
func (p *providerProc) waitReady(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case p.addr = <-p.ready:
	case <-p.exited:
		t.Fatalf("provider process exited before READY: %v\n%s", p.exitErr, p.logs.String())
	case <-time.After(d):
		t.Fatalf("provider process not READY after %v\n%s", d, p.logs.String())
	}
}

func (p *providerProc) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v to provider %s: %v", sig, p.addr, err)
	}
}

// wait waits for the process to exit.
func (p *providerProc) wait(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(d):
		t.Fatalf("provider %s still running %v after the signal", p.addr, d)
	}
}

// line returns the first stdout line with prefix (after the process exited).
func (p *providerProc) line(prefix string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.lines {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			return v, true
		}
	}
	return "", false
}

// port is the provider's dubbo port.
func (p *providerProc) port(t testing.TB) int {
	t.Helper()
	_, ps, _ := strings.Cut(p.addr, ":")
	n, err := strconv.Atoi(ps)
	if err != nil {
		t.Fatalf("provider address %q: %v", p.addr, err)
	}
	return n
}

// newConsumer starts a consumer of Greeter with Dubbo's defaults (and the
// load balancer lb, when not "") and waits until it sees want providers.
func newConsumer(t testing.TB, zkAddr string, want int, lb string) (*consumer.Consumer, *consumer.Reference) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ref := consumer.ReferenceConfig{Interface: providertest.GreeterInterface, Version: providertest.GreeterVersion}
	ref.LoadBalance = lb
	c, err := consumer.New(ctx, consumer.Config{Application: "faulttest-consumer", Registry: "zookeeper://" + zkAddr,
		References: []consumer.ReferenceConfig{ref}}, consumer.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := c.Reference(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, fmt.Sprintf("the consumer to see %d providers", want), 10*time.Second, func() bool {
		return len(r.Providers()) == want
	})
	return c, r
}

func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// callRec is one call of a load run; times are offsets from the run's start.
type callRec struct {
	arg        string
	start, end time.Duration
	servedBy   string
	err        error
}

func (r callRec) latency() time.Duration { return r.end - r.start }

// load is a bounded load run: workers calling sayHello in a loop until
// stop, maxCalls calls each, or maxDur.
type load struct {
	start time.Time
	stop  context.CancelFunc
	wg    sync.WaitGroup
	recs  [][]callRec
}

const maxCallsPerWorker = 100_000

// startLoad starts workers calling sayHello(arg(worker, i)) through c.
func startLoad(t testing.TB, c *consumer.Consumer, workers int, maxDur time.Duration, arg func(worker, i int) string) *load {
	t.Helper()
	return startPacedLoad(t, c, workers, maxDur, 0, arg)
}

// startPacedLoad is startLoad with a pause after each call, for long runs
// that must leave CPU to the processes under test.
func startPacedLoad(t testing.TB, c *consumer.Consumer, workers int, maxDur, pause time.Duration, arg func(worker, i int) string) *load {
	t.Helper()
	ctx, stop := context.WithTimeout(context.Background(), maxDur)
	l := &load{start: time.Now(), stop: stop, recs: make([][]callRec, workers)}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; i < maxCallsPerWorker && ctx.Err() == nil; i++ {
				a := arg(w, i)
				rec := callRec{arg: a, start: time.Since(l.start)}
				rec.servedBy, rec.err = sayHello(c, a)
				rec.end = time.Since(l.start)
				l.recs[w] = append(l.recs[w], rec)
				if pause > 0 {
					time.Sleep(pause)
				}
			}
		}()
	}
	t.Cleanup(l.finish)
	return l
}

// sayHello makes one call with the consumer's defaults and checks the answer.
func sayHello(c *consumer.Consumer, name string) (servedBy string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.Invoke(ctx, &rpc.Invocation{Service: providertest.GreeterInterface, Version: providertest.GreeterVersion,
		Method: "sayHello", ParamTypes: []string{"java.lang.String"}, Args: []any{name}})
	if err != nil {
		return "", err
	}
	if res.Exception != nil {
		return "", res.Exception
	}
	servedBy, _ = res.Attachments[servedByKey].(string)
	if res.Value != "Hello, "+name {
		return servedBy, fmt.Errorf("sayHello(%q) = %#v", name, res.Value)
	}
	if servedBy == "" {
		return "", errors.New("answer without the " + servedByKey + " attachment")
	}
	return servedBy, nil
}

// now is the offset of this instant in the run.
func (l *load) now() time.Duration { return time.Since(l.start) }

// finish stops the workers, waits for calls in flight and returns every
// call ordered by start.
func (l *load) finish() {
	l.stop()
	l.wg.Wait()
}

func (l *load) calls() []callRec {
	l.finish()
	var all []callRec
	for _, rs := range l.recs {
		all = append(all, rs...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].start < all[j].start })
	return all
}

// summary describes a set of calls.
type summary struct {
	calls, failed int
	firstErr      error
	byProvider    map[string]int
	maxLatency    time.Duration
	p50, p99      time.Duration
}

func summarize(recs []callRec, keep func(callRec) bool) summary {
	s := summary{byProvider: make(map[string]int)}
	var lat []time.Duration
	for _, r := range recs {
		if keep != nil && !keep(r) {
			continue
		}
		s.calls++
		lat = append(lat, r.latency())
		s.maxLatency = max(s.maxLatency, r.latency())
		if r.err != nil {
			s.failed++
			if s.firstErr == nil {
				s.firstErr = r.err
			}
			continue
		}
		s.byProvider[r.servedBy]++
	}
	if len(lat) > 0 {
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		s.p50 = lat[len(lat)/2]
		s.p99 = lat[len(lat)*99/100]
	}
	return s
}

func (s summary) String() string {
	return fmt.Sprintf("%d calls, %d failed, by provider %v, p99 %v, max %v",
		s.calls, s.failed, s.byProvider, s.p99.Round(10*time.Microsecond), s.maxLatency.Round(10*time.Microsecond))
}

// share is the fraction of the successful calls addr served.
func (s summary) share(addr string) float64 {
	if s.calls-s.failed == 0 {
		return 0
	}
	return float64(s.byProvider[addr]) / float64(s.calls-s.failed)
}

// completedPerSecond is the rate of calls that ended in [from, to).
func completedPerSecond(recs []callRec, from, to time.Duration) float64 {
	n := 0
	for _, r := range recs {
		if r.end >= from && r.end < to {
			n++
		}
	}
	return float64(n) / (to - from).Seconds()
}

// inFlightAt counts the calls started before at and ended after it.
func inFlightAt(recs []callRec, at time.Duration) []callRec {
	var out []callRec
	for _, r := range recs {
		if r.start <= at && r.end >= at {
			out = append(out, r)
		}
	}
	return out
}
