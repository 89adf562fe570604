package histogram

import (
	"math"
	"strings"
	"testing"
	"time"
)

// The buckets tile 0..134 s without gaps, each at most 25% of its lower
// edge wide above 4 µs, and Of puts both ends of each in it.
func TestBuckets(t *testing.T) {
	prevHi := 0.0
	for i := range Buckets - 1 {
		lo, hi := Bounds(i)
		if lo != prevHi || hi <= lo {
			t.Fatalf("bucket %d [%v, %v) does not follow %v", i, lo, hi, prevHi)
		}
		prevHi = hi
		for _, us := range []float64{lo, hi - 1} {
			if b := Of(time.Duration(us) * time.Microsecond); b != i {
				t.Fatalf("%v µs in bucket %d, want %d [%v, %v)", us, b, i, lo, hi)
			}
		}
		if i >= exact && (hi-lo)/lo > 0.25 {
			t.Errorf("bucket %d [%v, %v) wider than 25%%", i, lo, hi)
		}
	}
	if lo, hi := Bounds(Buckets - 1); lo != prevHi || !math.IsInf(hi, 1) {
		t.Errorf("last bucket [%v, %v)", lo, hi)
	}
	for _, tc := range []struct {
		d    time.Duration
		want int
	}{{-time.Second, 0}, {0, 0}, {999, 0}, {3 * time.Microsecond, 3}, {4 * time.Microsecond, 4}, {time.Hour, Buckets - 1}} {
		if got := Of(tc.d); got != tc.want {
			t.Errorf("Of(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
}

// A quantile of calls spread over 1..1000 ms, or all alike, is within a
// bucket's width of the truth.
func TestQuantile(t *testing.T) {
	var spread, alike, none Counts
	for i := 1; i <= 1000; i++ {
		spread[Of(time.Duration(i)*time.Millisecond)]++
	}
	for range 90 {
		alike[Of(time.Millisecond)]++
	}
	for range 10 {
		alike[Of(50*time.Millisecond)]++
	}
	for _, tc := range []struct {
		name    string
		c       *Counts
		q, want float64 // ms
	}{
		{"spread p50", &spread, 0.5, 500}, {"spread p95", &spread, 0.95, 950}, {"spread p99", &spread, 0.99, 990},
		{"90% 1ms p50", &alike, 0.5, 1}, {"90% 1ms p90", &alike, 0.9, 1}, {"10% 50ms p99", &alike, 0.99, 50},
		{"none", &none, 0.99, 0},
	} {
		got := tc.c.Quantile(tc.q)
		if got < tc.want*0.75 || got > tc.want*1.25 {
			t.Errorf("%s = %v ms, want %v within 25%%", tc.name, got, tc.want)
		}
	}
	var slow Counts
	slow[Of(time.Hour)] = 3
	if got := slow.Quantile(0.5); got != float64(uint64(1)<<maxExp)/1000 {
		t.Errorf("p50 of hour-long calls = %v ms, want the last bucket's edge", got)
	}
}

// Both forms read back what they wrote, and two Sparse histograms
// concatenated read as their sum.
func TestForms(t *testing.T) {
	var a, b Counts
	a[0], a[Of(time.Millisecond)], a[Buckets-1] = 2, 120, 1
	b[Of(time.Millisecond)], b[Of(50*time.Millisecond)] = 5, MaxCount
	if got := a.Text(); got != "0:2,896:120,134217728:1" {
		t.Errorf("text %q", got)
	}
	for _, c := range []Counts{a, b, {}} {
		back, err := ParseText(c.Text())
		if err != nil || back != c {
			t.Errorf("text %q read back %v, %v", c.Text(), back, err)
		}
		back, err = c.Sparse().Counts()
		if err != nil || back != c {
			t.Errorf("sparse %x read back %v, %v", c.Sparse(), back, err)
		}
	}
	var sum Counts
	if err := sum.AddSparse(a.Sparse() + b.Sparse()); err != nil {
		t.Fatal(err)
	}
	want := a
	want.Add(&b)
	if sum != want || sum.Total() != 2+125+1+MaxCount {
		t.Errorf("concatenated: %v, want %v", sum, want)
	}
	if got, _ := ParseText("896:1,896:2"); got[Of(time.Millisecond)] != 3 {
		t.Errorf("a bucket named twice: %v", got)
	}
}

func TestParseTextErrors(t *testing.T) {
	for _, s := range []string{"896", "896:", ":3", "896:0", "896:-1", "897:1", "896:1,", "x:1", "896:281474976710657",
		"268435456:1", "896:1;1024:2", strings.Repeat("1:1,", 40) + "?"} {
		if c, err := ParseText(s); err == nil {
			t.Errorf("ParseText(%q) = %v, want an error", s, c)
		}
	}
}

func TestSparseErrors(t *testing.T) {
	for _, s := range []Sparse{"\x05", "\x69\x01", "\x05\x00", "\x05\x80", "\x80\x80\x80\x80\x80\x80\x80\x80\x80\x02\x01",
		"\x05\x81\x80\x80\x80\x80\x80\x40"} {
		c := Counts{1}
		if err := c.AddSparse(s); err == nil || c != (Counts{1}) {
			t.Errorf("AddSparse(%x): %v, counts %v: want an error and no change", s, err, c)
		}
	}
}

// Any text ParseText accepts writes back to the same counts; any bytes
// AddSparse accepts re-encode to the same counts.
func FuzzParseText(f *testing.F) {
	for _, s := range []string{"", "0:2,896:120,134217728:1", "896:1,896:2", "897:1", "4:1,5:1,6:1,7:1,8:1,10:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseText(s)
		if err != nil {
			return
		}
		back, err := ParseText(c.Text())
		if err != nil || back != c {
			t.Fatalf("%q: text %q reads back %v, %v", s, c.Text(), back, err)
		}
	})
}

func FuzzSparse(f *testing.F) {
	for _, s := range []string{"", "\x00\x02\x1c\x78\x68\x01", "\x05\x00", "\x1c\x01\x1c\x01"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Sparse(b).Counts()
		if err != nil {
			return
		}
		back, err := c.Sparse().Counts()
		if err != nil || back != c {
			t.Fatalf("%x: re-encoded %x reads back %v, %v", b, c.Sparse(), back, err)
		}
	})
}
