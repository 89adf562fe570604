package benchtest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/benchcalls"
	"github.com/dubbo-lab/dubbo/loadgen"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/transport"
	"github.com/dubbo-lab/dubbo/plugins"
	"github.com/dubbo-lab/dubbo/plugins/internal/wire"
	"github.com/dubbo-lab/dubbo/plugins/sdk"
)

// The test binary is also the plugin: with modeEnv set, TestMain serves the
// greeter instead of running tests.
const modeEnv = "DUBBO_BENCHTEST_PLUGIN"

func TestMain(m *testing.M) {
	mode := os.Getenv(modeEnv)
	if mode == "" {
		os.Exit(m.Run())
	}
	// DUBBO_BENCHTEST_PLUGIN_CPUPROFILE=file profiles the plugin side
	// (file.echo the floor's child).
	if path := os.Getenv(modeEnv + "_CPUPROFILE"); path != "" {
		if mode == "echo" {
			path += ".echo"
		}
		f, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile() // both return when the node closes the link
		}
	}
	if mode == "echo" {
		echo()
		return
	}
	if err := sdk.Serve(greeter("plugin")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Greeter is the handler both paths serve.
type Greeter struct{}

func (Greeter) SayHello(_ context.Context, name string) (string, error) { return "Hello, " + name, nil }

// greeter is org.example.Greeter 1.0.0; the group tells the two paths
// apart on the one provider.
func greeter(group string) sdk.Service {
	return sdk.Service{Interface: "org.example.Greeter", Version: "1.0.0", Group: group, Handler: Greeter{}}
}

var sayHello = []provider.Method{{Name: "sayHello", ParamTypes: []string{"java.lang.String"}, ReturnType: "java.lang.String"}}

// BenchmarkProviderPath calls sayHello through a real provider, served
// in-process by the SDK's dispatcher (group inprocess), by a plugin process
// running the same handler (group plugin), and by the least a process
// boundary costs (group floor: a child process that answers every call on
// a plugin link with canned bytes, no decoding, no handler, no go-plugin),
// at concurrency 1 and 32. Each sub-benchmark reports qps, p50_us, p99_us
// and cpu_us: the CPU time of this process (client and provider) and its
// children (the plugin or the floor's child) per call, from /proc.
func BenchmarkProviderPath(b *testing.B) {
	c := serve(b)
	for _, conc := range []int{1, 32} {
		for _, group := range []string{"inprocess", "plugin", "floor"} {
			b.Run(fmt.Sprintf("c=%d/%s", conc, group), func(b *testing.B) { run(b, c, group, conc) })
		}
	}
}

// BenchmarkProviderPathTurns measures the plugin against the floor in
// turns of turnCalls calls each (the plugin first in one turn, the floor
// in the next), at concurrency 1 and 32, and reports both one's calls/s and
// vs_floor, the plugin's calls/s over the floor's. BenchmarkProviderPath's
// sub-benchmarks run one after the other, seconds apart, and a shared
// machine's speed drifts more than that over seconds; turns tens of
// milliseconds long see the same machine.
func BenchmarkProviderPathTurns(b *testing.B) {
	c := serve(b)
	for _, conc := range []int{1, 32} {
		b.Run(fmt.Sprintf("c=%d", conc), func(b *testing.B) { turns(b, c, conc) })
	}
}

// turnCalls is how many calls a turn makes: 25-200 ms on a 2-core machine.
const turnCalls = 2000

func turns(b *testing.B, c rpc.Invoker, conc int) {
	calls := [2]loadgen.CallFunc{caller(b, c, "plugin"), caller(b, c, "floor")}
	for _, call := range calls {
		if _, err := call(context.Background()); err != nil { // warm: connections, pools
			b.Fatal(err)
		}
	}
	var took [2]time.Duration
	b.ResetTimer()
	for done, turn := 0, 0; done < b.N; turn++ {
		n := min(turnCalls, b.N-done)
		for k := range 2 {
			i := (turn + k) % 2
			s := loadgen.Run(context.Background(), loadgen.Options{Concurrency: conc, Calls: int64(n)}, calls[i])
			if s.Errors > 0 {
				b.Fatalf("%d of %d calls failed: %v", s.Errors, s.Calls, s.ErrorsByKind)
			}
			took[i] += s.Elapsed
		}
		done += n
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/took[0].Seconds(), "plugin_qps")
	b.ReportMetric(float64(b.N)/took[1].Seconds(), "floor_qps")
	b.ReportMetric(took[1].Seconds()/took[0].Seconds(), "vs_floor")
	b.ReportMetric(0, "ns/op") // the turns' own metrics say it
}

// serve starts a provider that exports the greeter three times, in-process
// (group inprocess), in a plugin (group plugin) and on the floor (group
// floor), and returns a client connected to it; b's cleanup stops them.
func serve(b *testing.B) rpc.Invoker {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	p, err := provider.Start(ctx, provider.Config{Protocol: provider.ProtocolConfig{Host: "127.0.0.1", Port: -1}}, provider.Options{Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })

	d, err := sdk.NewDispatcher(greeter("inprocess"))
	if err != nil {
		b.Fatal(err)
	}
	export(b, p, "inprocess", d)

	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	pl, err := plugins.Start(ctx, plugins.Config{Path: exe, Name: "greeter", Env: []string{modeEnv + "=1"}, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pl.Close() })
	export(b, p, "plugin", pl)

	floor, stopFloor := startFloor(b)
	b.Cleanup(stopFloor)
	export(b, p, "floor", floor)

	c, err := transport.Dial(ctx, p.Addr(), transport.ClientConfig{Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func export(b *testing.B, p *provider.Provider, group string, inv rpc.Invoker) {
	b.Helper()
	svc := provider.Service{Interface: "org.example.Greeter", Version: "1.0.0", Group: group, Methods: sayHello, Invoker: inv}
	if err := p.Export(context.Background(), svc); err != nil {
		b.Fatal(err)
	}
}

// run makes b.N calls from conc goroutines and reports throughput and
// latency percentiles.
func run(b *testing.B, c rpc.Invoker, group string, conc int) {
	call := caller(b, c, group)
	if _, err := call(context.Background()); err != nil { // warm: connections, pools
		b.Fatal(err)
	}
	benchcalls.Measure(b, conc, call, os.Getpid())
	b.ReportMetric(0, "ns/op") // qps says it, per concurrency
}

// caller calls sayHello("world") on group's greeter and checks the answer.
func caller(b *testing.B, c rpc.Invoker, group string) loadgen.CallFunc {
	return func(ctx context.Context) (string, error) {
		inv := &rpc.Invocation{Service: "org.example.Greeter", Version: "1.0.0", Group: group,
			Method: "sayHello", ParamTypes: []string{"java.lang.String"}, Args: []any{"world"}}
		res, err := c.Invoke(ctx, inv)
		if err == nil && res.Value != "Hello, world" {
			err = fmt.Errorf("sayHello = %+v", res)
			b.Error(err)
		}
		return "", err
	}
}

// floorReply is the encoded reply the echo child sends to every call.
var floorReply = func() []byte {
	b, err := wire.EncodeReply(&rpc.Result{Value: "Hello, world"}, nil)
	if err != nil {
		panic(err)
	}
	return b
}()

// echo is the child process of the floor: it answers every call on its
// link with floorReply, on the link's reader, until the link ends.
func echo() {
	link, err := wire.PluginLink()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	link.Start(cannedReply{})
	<-link.Done()
}

type cannedReply struct{}

func (cannedReply) Prepare([]byte) (wire.Runner, bool) { return cannedReply{}, true }

func (cannedReply) Run(context.Context) []byte { return floorReply }

// floorInvoker sends every call to the echo child as it is, without
// encoding the arguments, and decodes the canned reply: the provider
// serves it like a plugin (an AsyncInvoker).
type floorInvoker struct{ link *wire.Link }

var floorCall = []byte("sayHello")

func (f floorInvoker) Invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	reply, err := f.link.Call(ctx, floorCall)
	if err != nil {
		return nil, err
	}
	return wire.DecodeReply(reply)
}

func (f floorInvoker) InvokeAsync(ctx context.Context, inv *rpc.Invocation, done func(*rpc.Result, error)) {
	f.link.CallAsync(ctx, floorCall, func(reply []byte, err error) {
		if err != nil {
			done(nil, err)
			return
		}
		done(wire.DecodeReply(reply))
	})
}

// startFloor starts the echo child of this test binary on a link.
func startFloor(b *testing.B) (floorInvoker, func()) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	node, child, err := wire.NewLinkPipes()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), modeEnv+"=echo", child.Env())
	cmd.ExtraFiles = child.Files()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	child.Close()
	link := wire.NewLink(node)
	link.Start(nil)
	return floorInvoker{link}, func() {
		link.Close()
		cmd.Wait() // the child's link ends with ours
	}
}
