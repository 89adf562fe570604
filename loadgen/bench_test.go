package loadgen

import (
	"context"
	"testing"
	"time"
)

func BenchmarkHistogramRecord(b *testing.B) {
	var h histogram
	d := 1234 * time.Microsecond
	for b.Loop() {
		h.record(d)
	}
}

// BenchmarkRunOverhead is the engine's cost per call with a call that does
// nothing: what bench adds to every measured call.
func BenchmarkRunOverhead(b *testing.B) {
	Run(context.Background(), Options{Concurrency: 2, Calls: int64(b.N)}, func(context.Context) (string, error) {
		return "127.0.0.1:20880", nil
	})
}
