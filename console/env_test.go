package console_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/console"
	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/monitor/store"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/report"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testCtx bounds every step of a test.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// system is what the end-to-end and browser tests drive: a console in
// front of a registry holding org.example.Greeter with two providers and
// a consumer that calls it, with statistics in a monitor store. startSystem
// builds it in the test process; a dubbo-up-backed system (once the
// monitor role serves the console) only has to fill the same fields.
type system struct {
	ConsoleURL string
	Registry   string   // zookeeper://host:port
	Providers  []string // Greeter providers' host:port
	// Served counts the calls each provider has served: sayHello under
	// its address, add under "<address> add(102)" (first argument 102)
	// and "<address> add".
	Served func() map[string]int64
	// Call makes one real sayHello call through the consumer, with arg.
	Call func(ctx context.Context, arg string) error
	// Add calls add(a, b) through the consumer.
	Add func(ctx context.Context, a, b int32) error
	// StartProvider starts another Greeter provider and returns its address.
	StartProvider func(t *testing.T) string
	// Invoke calls a method of Greeter through the consumer, with
	// attachments (key, value, ...); a business exception is the error.
	Invoke func(ctx context.Context, method string, types []string, args []any, attachments ...string) (*rpc.Result, error)
}

// served counts calls per provider address.
type served struct {
	mu sync.Mutex
	n  map[string]int64
}

func (s *served) add(addr string) {
	s.mu.Lock()
	s.n[addr]++
	s.mu.Unlock()
}

func (s *served) snapshot() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int64, len(s.n))
	for k, v := range s.n {
		out[k] = v
	}
	return out
}

type envOptions struct {
	token     string
	readToken string
	listen    string
	noLoad    bool // no background calls
}

// env is the in-process system plus handles the API tests use.
type env struct {
	system
	console *console.Console
	store   *store.Store
	zkAddr  string
}

// startSystem starts, in the test process, an embedded registry, two
// Greeter providers, a consumer that calls sayHello ten times a second
// (recorded with node/stats and reported every second into a real store
// file), and the console on a free loopback port.
func startSystem(t *testing.T, o envOptions) *env {
	t.Helper()
	ctx := testCtx(t)
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	reg := "zookeeper://" + zkAddr
	counts := &served{n: map[string]int64{}}

	provRec := stats.NewRecorder(stats.Config{Side: stats.Provider, Application: "greeter-app", Host: "127.0.0.1"})
	startProvider := func(t *testing.T) string {
		p, err := provider.Start(ctx, provider.Config{Application: "greeter-app", Registry: reg,
			Protocol: provider.ProtocolConfig{Host: "127.0.0.1", Port: -1}}, provider.Options{Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		addr := p.Addr()
		svc := providertest.Greeter(func(inv *rpc.Invocation) {
			switch inv.Method {
			case "sayHello":
				counts.add(addr)
			case "add":
				if a, _ := inv.Args[0].(int32); a == 102 {
					counts.add(addr + " add(102)")
				} else {
					counts.add(addr + " add")
				}
			}
			cnt := provRec.Counter(stats.Key{Interface: inv.Service, Version: inv.Version, Method: inv.Method, Peer: "127.0.0.1"})
			cnt.End(cnt.Begin(), stats.Success, 64, 64)
		})
		svc.Params = map[string]string{"warmup": "0"}
		if err := p.Export(ctx, svc); err != nil {
			t.Fatal(err)
		}
		return addr
	}
	a, b := startProvider(t), startProvider(t)

	cons, err := consumer.New(ctx, consumer.Config{Application: "greeter-consumer", Registry: reg,
		References: []consumer.ReferenceConfig{{Interface: providertest.GreeterInterface, Version: providertest.GreeterVersion}}},
		consumer.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cons.Close() })
	if err := cons.Start(ctx); err != nil {
		t.Fatal(err)
	}
	consRec := stats.NewRecorder(stats.Config{Side: stats.Consumer, Application: "greeter-consumer", Host: "127.0.0.1"})
	invokeWith := func(ctx context.Context, method string, types []string, args []any, attachments ...string) (*rpc.Result, error) {
		cnt := consRec.Counter(stats.Key{Interface: providertest.GreeterInterface, Version: providertest.GreeterVersion, Method: method, Peer: "*"})
		start := cnt.Begin()
		inv := &rpc.Invocation{Service: providertest.GreeterInterface, Version: providertest.GreeterVersion,
			Method: method, ParamTypes: types, Args: args}
		for i := 0; i+1 < len(attachments); i += 2 {
			inv.SetAttachment(attachments[i], attachments[i+1])
		}
		res, err := cons.Invoke(ctx, inv)
		if err == nil && res.Exception != nil {
			err = res.Exception
		}
		cnt.End(start, stats.OutcomeOf(err), 64, 64)
		return res, err
	}
	invoke := func(ctx context.Context, method string, types []string, args ...any) error {
		_, err := invokeWith(ctx, method, types, args)
		return err
	}
	call := func(ctx context.Context, arg string) error {
		return invoke(ctx, "sayHello", []string{"java.lang.String"}, arg)
	}

	st, err := store.Open(filepath.Join(t.TempDir(), "monitor.db"), store.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rep, err := report.New(report.Config{Interval: time.Second, Logger: quiet()}, storeSender{st}, provRec, consRec)
	if err != nil {
		t.Fatal(err)
	}
	rep.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rep.Close(ctx)
	})

	if !o.noLoad {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // the example consumer plugin's part: a few calls a second
			defer wg.Done()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for i := 0; i < 100000; i++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_ = call(ctx, "load")
				cancel()
			}
		}()
		t.Cleanup(func() { close(stop); wg.Wait() })
	}

	listen := o.listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	c, err := console.New(ctx, console.Options{Listen: listen, Token: o.token, ReadToken: o.readToken, Registry: reg, Stats: st, Audit: st,
		Logger: quiet(), Refresh: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.Shutdown(ctx)
	})
	if err := c.Catalog().WaitLoaded(ctx); err != nil {
		t.Fatal(err)
	}
	e := &env{console: c, store: st, zkAddr: zkAddr}
	e.system = system{
		ConsoleURL: strings.TrimSuffix(c.URL(), "/"), Registry: reg, Providers: []string{a, b},
		Served: counts.snapshot, Call: call,
		Add: func(ctx context.Context, x, y int32) error {
			return invoke(ctx, "add", []string{"int", "int"}, x, y)
		},
		StartProvider: startProvider,
		Invoke:        invokeWith,
	}
	// The console sees both providers.
	waitFor(t, "both providers in the console", func() bool {
		d, ok := c.Catalog().Service(providertest.GreeterInterface)
		return ok && len(d.Providers) == 2
	})
	return e
}

// storeSender is the monitor's part: it stores each report's samples as
// the monitor role will (one row per sample).
type storeSender struct{ st *store.Store }

func (s storeSender) Send(ctx context.Context, r *report.Report) error {
	rows := make([]store.Row, 0, len(r.Samples))
	for _, sm := range r.Samples {
		row := store.Row{Time: sm.Timestamp.Unix(), Interval: max(int64(sm.Interval/time.Second), 1), Side: sm.Side.String(),
			Application: sm.Application, Node: sm.Node, Interface: sm.Interface, Group: sm.Group, Version: sm.Version,
			Method: sm.Method, Success: sm.Success, Failure: sm.Failure, Input: sm.Input, Output: sm.Output,
			ElapsedMs: sm.Elapsed, MaxElapsedMs: sm.MaxElapsed, Concurrent: float64(sm.Concurrent),
			MaxConcurrent: sm.MaxConcurrent, MaxInput: sm.MaxInput, MaxOutput: sm.MaxOutput, Histogram: sm.Histogram}
		if sm.Side == stats.Consumer {
			row.Address, row.Consumer = sm.Peer, sm.Host
		} else {
			row.Address, row.Consumer = fmt.Sprintf("%s:%d", sm.Host, sm.Port), sm.Peer
		}
		if row.Node == "" {
			row.Node = r.Node
		}
		rows = append(rows, row)
	}
	_, err := s.st.Insert(ctx, rows)
	return err
}

// waitFor polls cond until it holds or 20 s pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var callCount atomic.Int64

// do sends one request to the console and returns status and body.
func do(t testing.TB, method, u, contentType, body string, hdr ...string) (int, string, http.Header) {
	t.Helper()
	callCount.Add(1)
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}
