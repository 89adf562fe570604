// Package histogram is the response-time histogram of Dubbo calls: one
// fixed set of log-scale buckets that every node counts in and the monitor
// adds up, so the histograms of any nodes, methods and intervals merge by
// adding their counts, and percentiles come from the merged counts.
//
// The buckets are of microseconds: one per microsecond below 4 µs, then
// four per power of two ([4,5) [5,6) [6,7) [7,8) [8,10) [10,12) [12,14)
// [14,16) [16,20) ... [917504,1048576) µs ...) up to 2^27 µs (134 s);
// longer calls share the last bucket. Above 4 µs a bucket is 1/4 to 1/7 of
// its lower edge wide (25% to 14%). Buckets is their number.
//
// Quantile interpolates linearly within the bucket that holds the rank, so
// the estimate lies in the same bucket as the true value: it is off by
// less than one bucket's width, under 25% of the true value (under 1 µs
// below 4 µs). Above 134 s it says 134 s.
//
// A histogram has three forms:
//   - Counts, one count per bucket, to add up and read quantiles from;
//   - the text form nodes send in their count:// statistics URL (Text,
//     ParseText): "lower-edge-µs:calls" pairs of the non-empty buckets,
//     comma-separated, e.g. "896:120,1024:31,49152:14";
//   - Sparse, the compact binary form the monitor stores: a pair of
//     uvarints (bucket, calls) per non-empty bucket. Two Sparse histograms
//     concatenated are one holding both's calls, so a database can merge
//     them by concatenating and Counts.AddSparse reads the result.
package histogram

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

const (
	exact  = 4  // one bucket per microsecond below this
	sub    = 4  // buckets per power of two above it
	maxExp = 27 // 2^27 µs: longer calls share the last bucket

	// Buckets is the number of buckets.
	Buckets = exact + (maxExp-2)*sub + 1
)

// MaxCount bounds one bucket's count in the text and binary forms: far
// more calls than any interval holds, far from overflowing when added up.
const MaxCount = 1 << 48

// Of is the bucket of a call that took d.
func Of(d time.Duration) int {
	if d < 0 {
		d = 0
	}
	us := uint64(d) / 1000
	if us < exact {
		return int(us)
	}
	e := bits.Len64(us) - 1
	if e >= maxExp {
		return Buckets - 1
	}
	s := int(us>>(e-2)) & (sub - 1)
	return exact + (e-2)*sub + s
}

// Bounds is bucket i's range in microseconds, [lo, hi); hi is +Inf for
// the last bucket.
func Bounds(i int) (lo, hi float64) {
	if i < exact {
		return float64(i), float64(i + 1)
	}
	if i >= Buckets-1 {
		return float64(uint64(1) << maxExp), math.Inf(1)
	}
	e := (i-exact)/sub + 2
	s := (i - exact) % sub
	return float64(uint64(sub+s) << (e - 2)), float64(uint64(sub+s+1) << (e - 2))
}

// Counts is a histogram: calls per bucket.
type Counts [Buckets]int64

// Total is the number of calls counted.
func (c *Counts) Total() int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

// Add adds o's calls to c.
func (c *Counts) Add(o *Counts) {
	for i, v := range o {
		c[i] += v
	}
}

// Quantile is the q-quantile (0 < q ≤ 1) of the calls, in milliseconds,
// interpolated within its bucket; 0 when there are none.
func (c *Counts) Quantile(q float64) float64 {
	total := c.Total()
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	var seen int64
	for i, n := range c {
		if n == 0 {
			continue
		}
		if float64(seen+n) >= rank {
			lo, hi := Bounds(i)
			if math.IsInf(hi, 1) {
				return lo / 1000
			}
			frac := (rank - float64(seen)) / float64(n)
			return (lo + (hi-lo)*frac) / 1000
		}
		seen += n
	}
	lo, _ := Bounds(Buckets - 1)
	return lo / 1000
}

// Text is the text form: "lower-edge-µs:calls" of each non-empty bucket,
// in order, comma-separated; "" when there are no calls.
func (c *Counts) Text() string {
	var b []byte
	for i, n := range c {
		if n == 0 {
			continue
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		lo, _ := Bounds(i)
		b = strconv.AppendInt(b, int64(lo), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, n, 10)
	}
	return string(b)
}

// ParseText reads the text form. Every pair must name a bucket's lower
// edge and a count in 1..MaxCount; a bucket named twice is added up.
func ParseText(s string) (Counts, error) {
	var c Counts
	if s == "" {
		return c, nil
	}
	for pair := range strings.SplitSeq(s, ",") {
		edge, count, ok := strings.Cut(pair, ":")
		lo, err1 := strconv.ParseUint(edge, 10, 64)
		n, err2 := strconv.ParseInt(count, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return Counts{}, fmt.Errorf("histogram %q: %q is not lower-edge-µs:calls", clip(s), clip(pair))
		}
		i := bucketAt(lo)
		if i < 0 {
			return Counts{}, fmt.Errorf("histogram %q: %d µs is not the lower edge of a bucket", clip(s), lo)
		}
		if n < 1 || n > MaxCount {
			return Counts{}, fmt.Errorf("histogram %q: %d calls in a bucket is not in 1..%d", clip(s), n, int64(MaxCount))
		}
		c[i] += n
	}
	return c, nil
}

// bucketAt is the bucket whose lower edge is us microseconds, or -1.
func bucketAt(us uint64) int {
	if us > 1<<maxExp {
		return -1
	}
	i := Of(time.Duration(us) * time.Microsecond)
	if lo, _ := Bounds(i); uint64(lo) != us {
		return -1
	}
	return i
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// Sparse is a histogram in the compact binary form: a pair of uvarints
// (bucket, calls) per non-empty bucket. It is a string, so that it is
// immutable and a struct holding it stays comparable; "" has no calls.
type Sparse string

// Sparse is c in the compact form, buckets in order.
func (c *Counts) Sparse() Sparse {
	var b []byte
	for i, n := range c {
		if n > 0 {
			b = binary.AppendUvarint(b, uint64(i))
			b = binary.AppendUvarint(b, uint64(n))
		}
	}
	return Sparse(b)
}

// ErrCorrupt is wrapped by the errors of reading a damaged Sparse.
var ErrCorrupt = errors.New("corrupt histogram")

// AddSparse adds the calls of s, which may be several Sparse histograms
// concatenated, to c. On an error c is unchanged.
func (c *Counts) AddSparse(s Sparse) error {
	var add Counts
	for i := 0; i < len(s); {
		b, n := uvarint(s[i:])
		if n <= 0 || b >= Buckets {
			return fmt.Errorf("%w: bad bucket at byte %d", ErrCorrupt, i)
		}
		i += n
		v, n := uvarint(s[i:])
		if n <= 0 || v < 1 || v > MaxCount {
			return fmt.Errorf("%w: bad count at byte %d", ErrCorrupt, i)
		}
		i += n
		add[b] += int64(v)
	}
	c.Add(&add)
	return nil
}

// Counts reads s.
func (s Sparse) Counts() (Counts, error) {
	var c Counts
	err := c.AddSparse(s)
	return c, err
}

// uvarint is binary.Uvarint over a string, without copying it.
func uvarint(s Sparse) (uint64, int) {
	var x uint64
	var shift uint
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		b := s[i]
		if b < 0x80 {
			if i == binary.MaxVarintLen64-1 && b > 1 {
				return 0, -1
			}
			return x | uint64(b)<<shift, i + 1
		}
		x |= uint64(b&0x7f) << shift
		shift += 7
	}
	return 0, 0
}
