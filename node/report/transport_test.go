package report_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/report"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats"
	"github.com/dubbo-lab/dubbo/node/transport"
)

// monitorServer is a MonitorService on a real dubbo server: it decodes
// every collect argument with SampleFromArg and stores each sample once.
type monitorServer struct {
	mu      sync.Mutex
	refuse  int // collect calls to answer with an exception (after storing)
	calls   int
	errs    []error
	samples map[stats.SampleID]stats.Sample
}

func (m *monitorServer) handle(_ context.Context, req *protocol.Request) *protocol.Response {
	resp := protocol.ResponseTo(req)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if req.Path != report.MonitorService || req.Method != "collect" || req.ParamDesc != "Lorg/apache/dubbo/common/URL;" || len(req.Args) != 1 {
		resp.Status = protocol.StatusServiceError
		resp.ErrorMessage = "not MonitorService.collect(URL): " + req.Path + "." + req.Method + "(" + req.ParamDesc + ")"
		return resp
	}
	s, err := report.SampleFromArg(req.Args[0])
	if err != nil {
		m.errs = append(m.errs, err)
		resp.Exception = &protocol.Exception{Class: "java.lang.IllegalArgumentException", Message: err.Error()}
		return resp
	}
	if _, dup := m.samples[s.ID()]; !dup {
		m.samples[s.ID()] = s
	}
	if m.refuse > 0 { // the answer is lost: the sender must try again
		m.refuse--
		resp.Exception = &protocol.Exception{Class: "java.lang.IllegalStateException", Message: "busy"}
	}
	return resp
}

// Counts travel from counters through a Reporter, InvokerSender and a
// real dubbo client and server to a monitor that reads them back, each
// sample once even when answers were lost.
func TestReportOverDubbo(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	mon := &monitorServer{refuse: 3, samples: map[stats.SampleID]stats.Sample{}}
	srv, err := transport.Listen("127.0.0.1:0", transport.HandlerFunc(mon.handle), transport.ServerConfig{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	client, err := transport.Dial(ctx, srv.Addr().String(), transport.ClientConfig{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })

	prov := stats.NewRecorder(stats.Config{Side: stats.Provider, Application: "demo", Host: "127.0.0.1", Port: 20880})
	cons := stats.NewRecorder(stats.Config{Side: stats.Consumer, Application: "demo", Host: "127.0.0.1"})
	rep, err := report.New(report.Config{Node: "node-a", Tick: make(chan time.Time), RetryMin: time.Millisecond,
		RetryMax: 10 * time.Millisecond, Logger: quiet}, &report.InvokerSender{Invoker: client}, prov)
	if err != nil {
		t.Fatal(err)
	}
	rep.Add(cons)
	rep.Start()
	count := func(rec *stats.Recorder, k stats.Key, n int, o stats.Outcome) {
		c := rec.Counter(k)
		for range n {
			c.End(c.Begin(), o, 100, 30)
		}
	}
	hello := stats.Key{Interface: "org.example.Greeter", Version: "1.0.0", Method: "sayHello", Peer: "127.0.0.2"}
	count(prov, hello, 7, stats.Success)
	count(prov, hello, 2, stats.BusinessFailed)
	add := stats.Key{Interface: "org.example.Greeter", Version: "1.0.0", Method: "add", Peer: "127.0.0.1:20881"}
	count(cons, add, 5, stats.Success)
	if err := rep.Close(ctx); err != nil {
		t.Fatal(err)
	}

	mon.mu.Lock()
	defer mon.mu.Unlock()
	if len(mon.errs) > 0 {
		t.Fatalf("monitor could not read: %v", mon.errs)
	}
	if len(mon.samples) != 2 || mon.calls < 2+3 {
		t.Fatalf("monitor stored %d samples in %d calls, want 2 in at least 5", len(mon.samples), mon.calls)
	}
	for _, s := range mon.samples {
		if s.Node != "node-a" || s.Application != "demo" || s.Interval <= 0 {
			t.Errorf("sample identity: %+v", s)
		}
		switch s.Side {
		case stats.Provider:
			if s.Method != "sayHello" || s.Peer != "127.0.0.2" || s.Success != 7 || s.Failure != 2 ||
				s.Input != 900 || s.MaxInput != 100 || s.Port != 20880 {
				t.Errorf("provider sample %+v", s)
			}
		case stats.Consumer:
			if s.Method != "add" || s.Peer != "127.0.0.1:20881" || s.Success != 5 || s.Output != 150 || s.Port != 0 {
				t.Errorf("consumer sample %+v", s)
			}
		}
	}
}

// InvokerSender's error says whether a monitor is registered: no
// provider of the MonitorService that the registry (an Offerer) confirms
// is ErrNoMonitor (a closing node does not wait for one); a monitor
// registered but unreachable (a node's consumer lists only providers it
// reaches), a closed port (killed or restarting) and a monitor that
// answers with an exception are not (they are tried again).
func TestInvokerSenderSaysNoMonitor(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	mon := &monitorServer{refuse: 1000, samples: map[stats.SampleID]stats.Sample{}}
	srv, err := transport.Listen("127.0.0.1:0", transport.HandlerFunc(mon.handle), transport.ServerConfig{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := ln.Addr().String()
	ln.Close()

	rec := stats.NewRecorder(stats.Config{Side: stats.Consumer, Application: "demo", Host: "127.0.0.1"})
	c := rec.Counter(stats.Key{Interface: "org.example.Greeter", Method: "sayHello", Peer: "127.0.0.1:20880"})
	c.End(c.Begin(), stats.Success, 1, 1)
	rep := &report.Report{Node: "node-a", Samples: rec.Collect(time.Now())}
	noProvider := rpc.InvokerFunc(func(_ context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
		return nil, &rpc.CallError{Kind: rpc.ErrNoProvider, Service: inv.Service, Method: inv.Method, Detail: "the directory lists no provider"}
	})
	for _, tc := range []struct {
		name      string
		addr      string      // "": inv
		inv       rpc.Invoker // the consumer, when addr is ""
		noMonitor bool
	}{
		{"no provider, and no registry to ask", "", noProvider, true},
		{"none registered", "", offerer{noProvider, &rpc.CallError{Kind: rpc.ErrNoProvider, Detail: "none registered"}}, true},
		{"registered, none reachable", "", offerer{noProvider, nil}, false},
		{"registered, the registry cannot be read", "", offerer{noProvider, errors.New("zookeeper: connection lost")}, false},
		{"nothing listens", closedPort, nil, false},
		{"the monitor refuses", srv.Addr().String(), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			inv := tc.inv
			if tc.addr != "" {
				client := transport.NewClient(tc.addr, transport.ClientConfig{Logger: quiet})
				defer client.Close()
				for tc.addr != closedPort && !client.Available() && ctx.Err() == nil {
					time.Sleep(5 * time.Millisecond) // connected in the background
				}
				inv = client
			}
			err := (&report.InvokerSender{Invoker: inv}).Send(ctx, rep)
			if err == nil || errors.Is(err, report.ErrNoMonitor) != tc.noMonitor {
				t.Errorf("Send = %v; want an error, ErrNoMonitor %v", err, tc.noMonitor)
			}
		})
	}
}

// offerer is a consumer whose registry answers Offered with err.
type offerer struct {
	rpc.Invoker
	err error
}

func (o offerer) Offered(context.Context, string, string, string) error { return o.err }
