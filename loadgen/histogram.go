package loadgen

import (
	"math"
	"math/bits"
	"time"
)

// histogram counts latencies in log-linear buckets, as HdrHistogram does:
// exact below 256 ns, then 128 buckets per power of two, so any value is
// reported within 0.4% (half a bucket) in a fixed 35 KiB, however many
// calls are recorded. Not safe for concurrent use: each worker has its own
// and Run merges them.
type histogram struct {
	counts [numBuckets]uint64
	n      uint64
	min    uint64 // exact, in ns; meaningful when n > 0
	max    uint64 // exact, in ns
	sum    float64
}

const (
	subBits    = 8
	half       = 1 << (subBits - 1) // buckets per power of two
	maxBits    = 41                 // ≥ 2^41 ns (36 min) share the last bucket
	numBuckets = (maxBits - subBits + 2) * half
)

func bucketOf(ns uint64) int {
	if ns >= 1<<maxBits {
		return numBuckets - 1
	}
	shift := bits.Len64(ns) - subBits
	if shift <= 0 {
		return int(ns)
	}
	return (shift+1)*half + int(ns>>shift) - half
}

// bucketValue is the middle of bucket i, the value reported for it.
func bucketValue(i int) uint64 {
	if i < 2*half {
		return uint64(i)
	}
	shift := i/half - 1
	top := uint64(i%half + half)
	return top<<shift + (1<<shift)/2
}

func (h *histogram) record(d time.Duration) {
	ns := uint64(max(d, 0))
	h.counts[bucketOf(ns)]++
	if h.n == 0 || ns < h.min {
		h.min = ns
	}
	h.n++
	h.max = max(h.max, ns)
	h.sum += float64(ns)
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if o.n > 0 && (h.n == 0 || o.min < h.min) {
		h.min = o.min
	}
	h.n += o.n
	h.max = max(h.max, o.max)
	h.sum += o.sum
}

// mean is the exact average of the recorded values; 0 when empty.
func (h *histogram) mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

// quantile is the smallest recorded value (to bucket precision) such that
// at least q of all values are at or below it; 0 when empty.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	// Nearest rank; the epsilon keeps 0.99*100 from rounding up to 100.
	rank := uint64(math.Ceil(q*float64(h.n) - 1e-9))
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			// Never report more than the true maximum.
			return time.Duration(min(bucketValue(i), h.max))
		}
	}
	return time.Duration(h.max)
}
