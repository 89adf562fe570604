package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/loadgen"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/provider"
)

// BenchmarkSayHelloStatistics is sayHello through the real consumer and
// provider (references, cluster, transport, the provider's routing) with
// call statistics counted on both sides, or on neither. On this shared
// machine throughput drifts by tens of percent within seconds, so the two
// pairs (a consumer and a provider each) serve alternating rounds of 2,000
// calls from 32 callers, and the benchmark reports both throughputs and
// their ratio (on_off at least 0.97 is the goal):
//
//	go test -run '^$' -bench SayHelloStatistics -benchtime 400000x ./node/consumer/
func BenchmarkSayHelloStatistics(b *testing.B) {
	ctx := context.Background()
	pair := func(off bool) *consumer.Consumer {
		p, err := provider.Start(ctx, provider.Config{Application: "bench", Protocol: provider.ProtocolConfig{Host: "127.0.0.1", Port: -1}},
			provider.Options{Logger: quietLogger(), NoStatistics: off})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { p.Close() })
		if err := p.Export(ctx, providertest.Greeter(nil)); err != nil {
			b.Fatal(err)
		}
		ref := greeterRef()
		ref.URL = "dubbo://" + p.Addr()
		c, err := consumer.New(ctx, consumer.Config{Application: "bench", References: []consumer.ReferenceConfig{ref}},
			consumer.Options{Logger: quietLogger(), NoStatistics: off})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		if err := c.Start(ctx); err != nil {
			b.Fatal(err)
		}
		return c
	}
	pairs := [2]*consumer.Consumer{pair(true), pair(false)}
	const round = 2000
	var took [2]time.Duration
	var calls [2]int64
	b.ReportAllocs()
	b.ResetTimer()
	for done, i := 0, 0; done < b.N; i++ {
		mode := i % 2
		c := pairs[mode]
		n := min(round, b.N-done)
		t0 := time.Now()
		s := loadgen.Run(ctx, loadgen.Options{Concurrency: 32, Calls: int64(n)}, func(ctx context.Context) (string, error) {
			return "", sayHello(c, ctx)
		})
		took[mode] += time.Since(t0)
		calls[mode] += int64(n)
		if s.Errors > 0 {
			b.Fatalf("%d calls failed: %v", s.Errors, s.ErrorsByKind)
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
	if pairs[1].Stats() == nil || pairs[0].Stats() != nil {
		b.Fatal("the pairs do not count as they should")
	}
}
