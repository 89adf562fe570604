package provider_test

import (
	"context"
	"testing"

	"github.com/dubbo-lab/dubbo/examples/greet/greetpb"
	"github.com/dubbo-lab/dubbo/node/provider"
)

// BenchmarkProviderTriple is greet.GreetService/Greet through the provider's
// Triple server to the example plugin, from a grpc-go client on one
// connection in this process (its CPU counts too), one call at a time and
// 32 at once. It watches the provider's glue; the load-generator
// comparison with grpc-go and dubbo-go is make bench's.
func BenchmarkProviderTriple(b *testing.B) {
	p := startTriple(b, provider.Config{}, provider.Options{})
	exportPlugin(b, p, startPlugin(b, "greet"))
	cc := grpcConn(b, p.Addr())
	ctx := context.Background()
	req := &greetpb.GreetRequest{Name: "world"}
	call := func(b *testing.B) {
		var resp greetpb.GreetResponse
		if err := cc.Invoke(ctx, "/greet.GreetService/Greet", req, &resp); err != nil || resp.Greeting != "Hello, world" {
			b.Fatalf("Greet: %q, %v", resp.Greeting, err)
		}
	}
	b.Run("c=1", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			call(b)
		}
	})
	b.Run("c=32", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(16) // 32 goroutines on 2 cores
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				call(b)
			}
		})
	})
}
