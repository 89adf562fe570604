package benchtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/dubbo-lab/dubbo/examples/greet/greetpb"
	"github.com/dubbo-lab/dubbo/internal/testkit/benchcalls"
	"github.com/dubbo-lab/dubbo/internal/testkit/child"
	"github.com/dubbo-lab/dubbo/loadgen"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/plugins"
)

// BenchmarkProtoPath calls a plugin through the node's API, the part of
// the path the provider adds nothing to: proto is the unary Greet of
// examples/greet ((*Plugin).CallProto with the request and the response
// as bytes, as a Triple server passes them), dubbo the greeter plugin's
// sayHello ((*Plugin).InvokeAsync, the call encoded and the reply decoded
// as the Dubbo provider does), at concurrency 1 and 32, one after the
// other. Each sub-benchmark reports qps, p50_us, p99_us and cpu_us (this
// process and the plugins, per call).
func BenchmarkProtoPath(b *testing.B) {
	calls := protoPathCalls(b)
	for _, conc := range []int{1, 32} {
		for _, kind := range []string{"dubbo", "proto"} {
			b.Run(fmt.Sprintf("c=%d/%s", conc, kind), func(b *testing.B) {
				call := calls[kind]
				if _, err := call(context.Background()); err != nil { // warm
					b.Fatal(err)
				}
				benchcalls.Measure(b, conc, call, os.Getpid())
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// BenchmarkProtoPathTurns makes the calls of BenchmarkProtoPath in
// alternating turns of protoTurnCalls calls each (proto first in one
// turn, dubbo in the next), so that both see the same machine, and
// reports both ones' calls/s and CPU time per call (this process and the
// plugins), and proto_vs_dubbo, proto's calls/s over dubbo's. The CPU
// time is read from /proc around each turn, which costs about 2ms a read:
// under 0.3µs a call at these turns, in both.
func BenchmarkProtoPathTurns(b *testing.B) {
	calls := protoPathCalls(b)
	for _, conc := range []int{1, 32} {
		b.Run(fmt.Sprintf("c=%d", conc), func(b *testing.B) { protoTurns(b, calls, conc) })
	}
}

// protoTurnCalls is how many calls a turn makes: 0.1-0.5 s on a 2-core
// machine.
const protoTurnCalls = 10000

func protoTurns(b *testing.B, calls map[string]loadgen.CallFunc, conc int) {
	kinds := [2]string{"proto", "dubbo"}
	for _, k := range kinds {
		if _, err := calls[k](context.Background()); err != nil { // warm
			b.Fatal(err)
		}
	}
	var took, cpu [2]time.Duration
	b.ResetTimer()
	for done, turn := 0, 0; done < b.N; turn++ {
		n := min(protoTurnCalls, b.N-done)
		for k := range 2 {
			i := (turn + k) % 2
			before, err := benchcalls.CPU(os.Getpid())
			if err != nil {
				b.Fatal(err)
			}
			s := loadgen.Run(context.Background(), loadgen.Options{Concurrency: conc, Calls: int64(n)}, calls[kinds[i]])
			after, err := benchcalls.CPU(os.Getpid())
			if err != nil {
				b.Fatal(err)
			}
			if s.Errors > 0 {
				b.Fatalf("%s: %d of %d calls failed: %v", kinds[i], s.Errors, s.Calls, s.ErrorsByKind)
			}
			took[i] += s.Elapsed
			cpu[i] += after - before
		}
		done += n
	}
	b.StopTimer()
	for i, k := range kinds {
		b.ReportMetric(float64(b.N)/took[i].Seconds(), k+"_qps")
		b.ReportMetric(float64(cpu[i].Microseconds())/float64(b.N), k+"_cpu_us")
	}
	b.ReportMetric(took[1].Seconds()/took[0].Seconds(), "proto_vs_dubbo")
	b.ReportMetric(0, "ns/op")
}

// protoPathCalls starts examples/greet, built, and the greeter plugin, and
// returns the calls of both benchmarks by kind; b's cleanup stops them.
func protoPathCalls(b *testing.B) map[string]loadgen.CallFunc {
	dir, err := child.Build("../../examples/greet")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	greet := startPlugin(b, plugins.Config{Path: filepath.Join(dir, "greet"), Name: "greet"})
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	greeter := startPlugin(b, plugins.Config{Path: exe, Name: "greeter", Env: []string{modeEnv + "=1"}})

	greetCall := plugins.ProtoCall{Service: "greet.GreetService", Method: "Greet"}
	req, err := proto.Marshal(&greetpb.GreetRequest{Name: "world"})
	if err != nil {
		b.Fatal(err)
	}
	want, err := proto.Marshal(&greetpb.GreetResponse{Greeting: "Hello, world"})
	if err != nil {
		b.Fatal(err)
	}
	return map[string]loadgen.CallFunc{
		"proto": func(ctx context.Context) (string, error) {
			ch := make(chan error, 1)
			greet.CallProto(ctx, greetCall, req, func(resp []byte, _ rpc.Metadata, st *plugins.Status) {
				switch {
				case st != nil:
					ch <- st
				case !bytes.Equal(resp, want):
					ch <- fmt.Errorf("Greet answered %q", resp)
				default:
					ch <- nil
				}
			})
			return "", <-ch
		},
		"dubbo": func(ctx context.Context) (string, error) {
			ch := make(chan error, 1)
			inv := &rpc.Invocation{Service: "org.example.Greeter", Version: "1.0.0", Group: "plugin",
				Method: "sayHello", ParamTypes: []string{"java.lang.String"}, Args: []any{"world"}}
			greeter.InvokeAsync(ctx, inv, func(res *rpc.Result, err error) {
				if err == nil && res.Value != "Hello, world" {
					err = errors.New("sayHello answered " + fmt.Sprint(res.Value))
				}
				ch <- err
			})
			return "", <-ch
		},
	}
}

func startPlugin(b *testing.B, cfg plugins.Config) *plugins.Plugin {
	cfg.Logger = slog.New(slog.DiscardHandler)
	p, err := plugins.Start(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}
