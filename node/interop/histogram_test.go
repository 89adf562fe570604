package interop

import (
	"testing"
	"time"
)

// The latency histogram of BenchmarkSayHello: exact below 1024µs, within
// 1.6% above, and quantiles by rank.
func TestHistogram(t *testing.T) {
	for _, us := range []int64{0, 1, 1023, 1024, 1100, 2047, 2048, 5000, 123456, 1 << 38} {
		got := bucketValue(bucketOf(us))
		if got > us || float64(us-got) > 0.016*float64(us) {
			t.Errorf("bucketValue(bucketOf(%d)) = %d", us, got)
		}
	}
	if got := bucketValue(bucketOf(1 << 45)); got < 1<<38 {
		t.Errorf("overflow bucket = %d", got)
	}
	var h histogram
	for i := 1; i <= 100; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	if p50, p99 := h.quantile(0.5), h.quantile(0.99); p50 != 50 || p99 != 99 {
		t.Errorf("p50 = %d, p99 = %d, want 50, 99", p50, p99)
	}
}
