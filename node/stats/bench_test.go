package stats_test

import (
	"context"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/benchcalls"
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
// connection, 32 callers) with statistics off and on, counted as the
// provider and consumer will count them: provider around the handler,
// consumer around the call. The ratio of on/off qps is what counting
// costs a call.
func BenchmarkSayHelloStats(b *testing.B) {
	for _, on := range []bool{false, true, false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			prov := stats.NewRecorder(stats.Config{Side: stats.Provider, Application: "bench", Host: "127.0.0.1"})
			cons := stats.NewRecorder(stats.Config{Side: stats.Consumer, Application: "bench", Host: "127.0.0.1"})
			h := transport.HandlerFunc(func(ctx context.Context, req *protocol.Request) *protocol.Response {
				var c *stats.Counter
				var s stats.Start
				if on {
					c = prov.Counter(stats.Key{Interface: req.Path, Version: req.Version, Method: req.Method, Peer: "127.0.0.1"})
					s = c.Begin()
				}
				resp := protocol.ResponseTo(req)
				resp.Value = "Hello, " + req.Args[0].(string)
				if on {
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
			benchcalls.Measure(b, 32, func(ctx context.Context) (string, error) {
				inv := &rpc.Invocation{Service: "org.example.Greeter", Version: "1.0.0", Method: "sayHello",
					ParamTypes: []string{"java.lang.String"}, Args: []any{"world"}}
				var c *stats.Counter
				var s stats.Start
				if on {
					c = cons.Counter(stats.Key{Interface: inv.Service, Version: inv.Version, Method: inv.Method, Peer: addr})
					s = c.Begin()
				}
				_, err := cl.Invoke(ctx, inv)
				if on {
					c.End(s, stats.OutcomeOf(err), 200, 100)
				}
				return addr, err
			})
		})
	}
}
