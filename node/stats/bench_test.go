package stats_test

import (
	"context"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/loadgen"
	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats"
	"github.com/dubbo-lab/dubbo/node/transport"
)

var benchKey = stats.Key{Interface: "org.example.Greeter", Version: "1.0.0", Method: "sayHello", Peer: "127.0.0.1"}

// BenchmarkCounter is one call counted: lookup, Begin and End, all
// callers on the same key (the worst case: one contended cache line).
func BenchmarkCounter(b *testing.B) {
	for _, p := range []int{1, 32} {
		b.Run(map[int]string{1: "p1", 32: "p32"}[p], func(b *testing.B) {
			rec := stats.NewRecorder(stats.Config{Side: stats.Provider})
			b.ReportAllocs()
			if p == 1 {
				for i := 0; i < b.N; i++ {
					c := rec.Counter(benchKey)
					c.End(c.Begin(), stats.Success, 120, 30)
				}
				return
			}
			b.SetParallelism(max(1, p/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					c := rec.Counter(benchKey)
					c.End(c.Begin(), stats.Success, 120, 30)
				}
			})
		})
	}
}

// BenchmarkRecorderCounter is the lookup alone, in a recorder of 1000 keys.
func BenchmarkRecorderCounter(b *testing.B) {
	rec := stats.NewRecorder(stats.Config{Side: stats.Consumer})
	keys := make([]stats.Key, 1000)
	for i := range keys {
		keys[i] = stats.Key{Interface: "org.example.Greeter", Version: "1.0.0", Method: "sayHello", Peer: "10.0.0." + string(rune('a'+i%26)) + ":" + string(rune('0'+i/26))}
		rec.Counter(keys[i])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rec.Counter(keys[i%len(keys)])
	}
}

// BenchmarkSayHelloStats is sayHello over dubbo:// (our transport, one
// connection, 32 callers) with statistics counted as the provider and
// consumer will count them (provider around the handler, consumer around
// the call) or not. On this shared machine throughput drifts by tens of
// percent within seconds, so one server and client serve both modes in
// alternating rounds of 1,000 calls and the benchmark reports the two
// modes' throughput and their ratio (on_off above 0.97 is the goal):
//
//	go test -run '^$' -bench SayHelloStats -benchtime 200000x ./node/stats/
func BenchmarkSayHelloStats(b *testing.B) {
	var on atomic.Bool
	prov := stats.NewRecorder(stats.Config{Side: stats.Provider, Application: "bench", Host: "127.0.0.1"})
	cons := stats.NewRecorder(stats.Config{Side: stats.Consumer, Application: "bench", Host: "127.0.0.1"})
	h := transport.HandlerFunc(func(ctx context.Context, req *protocol.Request) *protocol.Response {
		counting := on.Load()
		var c *stats.Counter
		var s stats.Start
		if counting {
			c = prov.Counter(stats.Key{Interface: req.Path, Version: req.Version, Method: req.Method, Peer: "127.0.0.1"})
			s = c.Begin()
		}
		resp := protocol.ResponseTo(req)
		resp.Value = "Hello, " + req.Args[0].(string)
		if counting {
			c.End(s, stats.Success, 200, 0)
		}
		return resp
	})
	quiet := slog.New(slog.DiscardHandler)
	srv, err := transport.Listen("127.0.0.1:0", h, transport.ServerConfig{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl, err := transport.Dial(ctx, srv.Addr().String(), transport.ClientConfig{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	addr := cl.Address()
	call := func(ctx context.Context) (string, error) {
		inv := &rpc.Invocation{Service: "org.example.Greeter", Version: "1.0.0", Method: "sayHello",
			ParamTypes: []string{"java.lang.String"}, Args: []any{"world"}}
		counting := on.Load()
		var c *stats.Counter
		var s stats.Start
		if counting {
			c = cons.Counter(stats.Key{Interface: inv.Service, Version: inv.Version, Method: inv.Method, Peer: addr})
			s = c.Begin()
		}
		_, err := cl.Invoke(ctx, inv)
		if counting {
			c.End(s, stats.OutcomeOf(err), 200, 100)
		}
		return addr, err
	}
	const round = 1000
	var took [2]time.Duration
	var calls [2]int64
	b.ReportAllocs()
	b.ResetTimer()
	for done, i := 0, 0; done < b.N; i++ {
		mode := i % 2
		on.Store(mode == 1)
		n := min(round, b.N-done)
		t0 := time.Now()
		sum := loadgen.Run(context.Background(), loadgen.Options{Concurrency: 32, Calls: int64(n)}, call)
		took[mode] += time.Since(t0)
		calls[mode] += int64(n)
		if sum.Errors > 0 {
			b.Fatalf("%d calls failed: %v", sum.Errors, sum.ErrorsByKind)
		}
		done += n
	}
	b.StopTimer()
	if took[0] > 0 && took[1] > 0 {
		off, on := float64(calls[0])/took[0].Seconds(), float64(calls[1])/took[1].Seconds()
		b.ReportMetric(off, "qps_off")
		b.ReportMetric(on, "qps_on")
		b.ReportMetric(on/off, "on_off")
	}
}
