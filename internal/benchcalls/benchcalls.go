// Package benchcalls runs the calls of a Go benchmark with node/loadgen,
// the engine of `dubbo bench`, and reports what every RPC benchmark of the
// project reports: qps, p50_us and p99_us (internal/benchratio reads them).
package benchcalls

import (
	"context"
	"testing"

	"github.com/dubbo-lab/dubbo/node/loadgen"
)

// Measure makes b.N calls of call from conc goroutines. A failed call
// fails the benchmark; call says why with b.Error when the error alone
// would not.
func Measure(b *testing.B, conc int, call loadgen.CallFunc) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	s := loadgen.Run(context.Background(), loadgen.Options{Concurrency: conc, Calls: int64(b.N)}, call)
	b.StopTimer()
	if s.Errors > 0 {
		b.Fatalf("%d of %d calls failed: %v", s.Errors, s.Calls, s.ErrorsByKind)
	}
	b.ReportMetric(s.QPS, "qps")
	b.ReportMetric(float64(s.P50us), "p50_us")
	b.ReportMetric(float64(s.P99us), "p99_us")
}
