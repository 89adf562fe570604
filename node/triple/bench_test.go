package triple

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/dubbo-lab/dubbo/internal/testkit/benchcalls"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// The test binary is also the benchmark's servers: with benchServerEnv
// set to triple, grpc or grpc-raw, TestMain serves bench.Greeter/Greet on
// a loopback port (printed on stdout) until stdin closes.
const benchServerEnv = "DUBBO_TRIPLE_BENCH_SERVER"

func TestMain(m *testing.M) {
	kind := os.Getenv(benchServerEnv)
	if kind == "" {
		os.Exit(m.Run())
	}
	if err := serveBench(kind); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// greeting is the fixed answer, a ~20-byte protobuf message.
var greeting = wrapperspb.String("hello, world 123456")

// fixedAnswer is the trivial unary handler on our server: it answers
// greeting's bytes.
type fixedAnswer []byte

func (fixedAnswer) Kind() rpc.MethodKind { return rpc.Unary }
func (a fixedAnswer) Unary(_ context.Context, _ *Call, _ []byte, reply func([]byte, rpc.Metadata, *Status)) {
	reply(a, nil, nil)
}

// serveBench serves one benchmark server until stdin closes; with
// DUBBO_TRIPLE_BENCH_CPUPROFILE=file it profiles the server's CPU
// (file.<kind>), with DUBBO_TRIPLE_BENCH_MEMPROFILE=file its allocations.
func serveBench(kind string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	if path := os.Getenv("DUBBO_TRIPLE_BENCH_CPUPROFILE"); path != "" {
		f, err := os.Create(path + "." + kind)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var stop func()
	switch kind {
	case "triple":
		b, _ := proto.Marshal(greeting)
		s := NewServer(Config{}, router{"bench.Greeter/Greet": fixedAnswer(b)})
		go func() { _ = s.Serve(ln) }() // ends with Close
		stop = func() { s.Close() }
	case "grpc", "grpc-raw":
		var opts []grpc.ServerOption
		handler := func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.StringValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			return greeting, nil
		}
		if kind == "grpc-raw" {
			// grpc-go's transport alone: no protobuf either way.
			opts = append(opts, grpc.ForceServerCodec(rawCodec{}))
			b, _ := proto.Marshal(greeting)
			handler = func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				var in []byte
				if err := dec(&in); err != nil {
					return nil, err
				}
				return &b, nil
			}
		}
		s := grpc.NewServer(opts...)
		s.RegisterService(&grpc.ServiceDesc{ServiceName: "bench.Greeter", HandlerType: (*any)(nil),
			Methods: []grpc.MethodDesc{{MethodName: "Greet", Handler: handler}}}, struct{}{})
		go func() { _ = s.Serve(ln) }() // ends with Stop
		stop = s.Stop
	default:
		return fmt.Errorf("%s=%q: want triple, grpc or grpc-raw", benchServerEnv, kind)
	}
	fmt.Println(ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the benchmark closes it
	stop()
	if path := os.Getenv("DUBBO_TRIPLE_BENCH_MEMPROFILE"); path != "" {
		f, err := os.Create(path + "." + kind)
		if err != nil {
			return err
		}
		defer f.Close()
		return pprof.Lookup("allocs").WriteTo(f, 0)
	}
	return nil
}

// benchServer is a benchmark server in a child process and one grpc-go
// client connection to it.
type benchServer struct {
	kind string
	pid  int
	cc   *grpc.ClientConn
}

func startBenchServer(b *testing.B, kind string) benchServer {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchServerEnv+"="+kind)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close() // the child stops and exits
		_ = cmd.Wait()
	})
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("%s server: %v", kind, err)
	}
	cc, err := grpc.Dial(strings.TrimSpace(addr), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cc.Close() })
	return benchServer{kind: kind, pid: cmd.Process.Pid, cc: cc}
}

var rounds = flag.Int("triple.rounds", 2, "BenchmarkTripleUnary: how many times the whole set of servers runs, alternating")

// BenchmarkTripleUnary is a trivial unary call (a ~20-byte protobuf
// message each way, answered with a fixed one) from a grpc-go client on
// one connection, at concurrency 1 and 32, to our server and to plain
// grpc-go servers of the same proto (grpc: with protobuf decoding, as
// ghz meets one; grpc-raw: bytes, grpc-go's transport alone). The servers
// alternate, and the whole set runs -triple.rounds times (names of later
// rounds get #01, #02, which tools/benchratio averages). Each server runs
// in a child process, the test binary re-executed, so cpu_us is the
// server's CPU time per call alone (user and system, from /proc); qps,
// p50_us and p99_us are the client's.
//
//	go test -run '^$' -bench BenchmarkTripleUnary -benchtime 20000x -triple.rounds 5 ./node/triple/
func BenchmarkTripleUnary(b *testing.B) {
	servers := []benchServer{startBenchServer(b, "triple"), startBenchServer(b, "grpc"), startBenchServer(b, "grpc-raw")}
	req := wrapperspb.String("world 12345678")
	for range max(1, *rounds) {
		for _, conc := range []int{1, 32} {
			for _, s := range servers {
				b.Run(fmt.Sprintf("c=%d/%s", conc, s.kind), func(b *testing.B) {
					benchcalls.Measure(b, conc, func(ctx context.Context) (string, error) {
						var out wrapperspb.StringValue
						return s.kind, s.cc.Invoke(ctx, "/bench.Greeter/Greet", req, &out)
					}, s.pid)
				})
			}
		}
	}
}
