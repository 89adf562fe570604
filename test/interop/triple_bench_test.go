package interop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/dubbo-lab/dubbo/examples/greet/greetpb"
	"github.com/dubbo-lab/dubbo/internal/testkit/benchcalls"
	"github.com/dubbo-lab/dubbo/internal/testkit/child"
	"github.com/dubbo-lab/dubbo/internal/testkit/dubbogo"
	"github.com/dubbo-lab/dubbo/internal/testkit/ghz"
)

// BenchmarkTripleGreet calls greet.GreetService/Greet({"name":"world"})
// with ghz, the gRPC load generator (an independent client: the same for
// every server), on one connection at 1 and 32 concurrent callers,
// against
//
//	grpcgo       a plain grpc-go server of the same proto, generated-code
//	             style (internal/testkit/greetgrpc/greetserver): the anchor
//	dubbogo      dubbo-go v3.3.0's Triple provider (dgprovider -protocol tri)
//	ours-plugin  the dubbo binary, `run --role=provider` with protocol.name
//	             = "tri" and the examples/greet handler plugin
//
// Every server is a process of its own on 127.0.0.1; the targets
// alternate, and the whole set runs -interop.rounds times (names of later
// rounds get #01, #02, which tools/benchratio averages). It reports ghz's
// calls/s (qps), p50_us and p99_us, and cpu_us: the CPU time the server's
// processes (node and plugin for ours-plugin) spent per call, from /proc.
// ns/op is the wall time of a ghz run per call, its start-up included:
// read qps. A provider of ours that does not serve Triple fails the
// benchmark at its start.
//
//	go test -run '^$' -bench BenchmarkTripleGreet ./test/interop/ -interop.rounds=3 | go run ./tools/benchratio
func BenchmarkTripleGreet(b *testing.B) {
	load := ghz.Build(b)
	proto, err := filepath.Abs(greetProto)
	if err != nil {
		b.Fatal(err)
	}
	ours := startTripleProvider(b)
	anchor := startGreetServer(b)
	dg := dubbogo.StartProvider(b, dubbogo.ProviderOptions{Protocol: "tri"})

	targets := []struct {
		name, addr string
		pid        int
	}{
		{"grpcgo", anchor.Addr, anchor.cmd.Process.Pid},
		{"dubbogo", dg.Addr, dg.PID()},
		{"ours-plugin", ours.Addr, ours.cmd.Process.Pid},
	}
	for range max(1, *rounds) {
		for _, conc := range []int{1, 32} {
			b.Run(fmt.Sprintf("c=%d", conc), func(b *testing.B) {
				for _, tg := range targets {
					b.Run(tg.name, func(b *testing.B) { benchGhz(b, load, proto, conc, tg.addr, tg.pid) })
				}
			})
		}
	}
}

// benchGhz makes b.N Greet calls (at least conc) with ghz from conc
// callers on one connection to addr; server is the server's process.
func benchGhz(b *testing.B, load *ghz.Tool, proto string, conc int, addr string, server int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cpu := benchcalls.StartCPU(b, server)
	b.ResetTimer()
	r, err := load.Run(ctx, ghz.Options{
		Addr: addr, Proto: proto, Call: greetService + "/Greet", Data: `{"name":"world"}`,
		Concurrency: conc, Connections: 1, Calls: int64(b.N),
	})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if r.Errors > 0 {
		b.Fatalf("%d of %d calls failed: %v", r.Errors, r.Calls, r.ErrorMessages)
	}
	b.ReportMetric(r.QPS, "qps")
	b.ReportMetric(float64(r.P50.Microseconds()), "p50_us")
	b.ReportMetric(float64(r.P99.Microseconds()), "p99_us")
	cpu.Report(b, r.Calls)
}

// startGreetServer runs greetserver, the plain grpc-go greet server, and
// waits until it answers Greet.
func startGreetServer(t testing.TB) *process {
	t.Helper()
	dir := buildGreetServer(t)
	p := startProcess(t, exec.Command(filepath.Join(dir, "greetserver")), "READY ", true)
	waitGreet(t, p.Addr, p.log)
	return p
}

// startTripleProvider runs `dubbo run --role=provider` serving Triple
// (protocol.name = "tri") with the examples/greet handler plugin and no
// registry, and waits until it answers Greet over gRPC. A binary that does
// not serve Triple fails t with its log.
func startTripleProvider(t testing.TB) *process {
	t.Helper()
	bin, _, plugin := buildOurs(t)
	dir := t.TempDir()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`data-dir = %q

[application]
name = "interop-triple"

[registry]
address = ""

[protocol]
name = "tri"
host = "127.0.0.1"
port = %d

[provider]
plugins = [%q]

[qos]
listen = ""
`, dir, port, plugin)
	path := filepath.Join(dir, "dubbo.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--role=provider", "-c", path, "--log-level", "warn")
	cmd.Dir = dir
	p := startProcess(t, cmd, "provider ", false)
	// The line it prints names the protocol's first port; ours is the one
	// configured.
	p.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	waitGreet(t, p.Addr, p.log)
	return p
}

// buildGreetServer builds greetserver, the plain grpc-go greet server,
// into a directory removed when t ends.
func buildGreetServer(t testing.TB) string {
	t.Helper()
	dir, err := child.Build("../../internal/testkit/greetgrpc/greetserver")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// waitGreet calls Greet over gRPC until it answers "Hello, world": a
// provider that listens may not have its handler plugin up yet.
func waitGreet(t testing.TB, addr string, log fmt.Stringer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cc, err := grpc.Dial(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer cc.Close()
	var last error
	for ctx.Err() == nil {
		var res greetpb.GreetResponse
		err := cc.Invoke(ctx, "/"+greetService+"/Greet", &greetpb.GreetRequest{Name: "world"}, &res)
		if err == nil && res.Greeting == "Hello, world" {
			return
		}
		last = err
		if err == nil {
			last = fmt.Errorf("answered %q", res.Greeting)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s does not serve %s/Greet over gRPC after 60s: %v\n%s", addr, greetService, last, log)
}
