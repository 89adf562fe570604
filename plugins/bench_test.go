package plugins_test

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/plugins/sdk"
)

// BenchmarkPluginInvoke calls sayHello through a plugin process, next to
// BenchmarkInProcess, which calls the same handler through the SDK's
// dispatcher in this process; the difference is what the process boundary
// costs. Both report the median latency as p50-ns.
func BenchmarkPluginInvoke(b *testing.B) {
	p := startGreeter(b, startConfig(b, "greeter"))
	benchInvoker(b, p)
}

func BenchmarkInProcess(b *testing.B) {
	d, err := sdk.NewDispatcher(greeterService())
	if err != nil {
		b.Fatal(err)
	}
	benchInvoker(b, d)
}

func benchInvoker(b *testing.B, inv rpc.Invoker) {
	call := func(ctx context.Context) {
		res, err := inv.Invoke(ctx, greeterCall("sayHello", []string{"java.lang.String"}, "world"))
		if err != nil || res.Value != "Hello, world" {
			b.Fatalf("sayHello = %v, %v", res, err)
		}
	}
	b.Run("p1", func(b *testing.B) {
		ctx := context.Background()
		lat := make([]time.Duration, 0, b.N)
		b.ReportAllocs()
		for b.Loop() {
			t0 := time.Now()
			call(ctx)
			lat = append(lat, time.Since(t0))
		}
		reportP50(b, lat)
	})
	b.Run("p32", func(b *testing.B) {
		// 32 callers in all, whatever GOMAXPROCS is.
		b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
		var mu sync.Mutex
		var all []time.Duration
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			ctx := context.Background()
			var lat []time.Duration
			for pb.Next() {
				t0 := time.Now()
				call(ctx)
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		})
		reportP50(b, all)
	})
}

func reportP50(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
}
