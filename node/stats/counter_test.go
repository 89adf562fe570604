package stats

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats/histogram"
)

var greeterKey = Key{Interface: "org.example.Greeter", Version: "1.0.0", Method: "sayHello", Peer: "127.0.0.1"}

func providerRecorder() *Recorder {
	return NewRecorder(Config{Side: Provider, Application: "demo", Host: "127.0.0.1", Port: 20880})
}

// N goroutines × M calls through one counter: every call, byte and failure
// is counted exactly once, and the maxima are the true maxima.
func TestCountingIsExactUnderConcurrency(t *testing.T) {
	const goroutines, calls = 16, 2000
	rec := providerRecorder()
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				c := rec.Counter(greeterKey) // looked up per call, as call sites do
				s := c.Begin()
				o := Success
				if i%4 == 0 {
					o = BusinessFailed
				}
				c.End(s, o, 100+g, 10)
			}
		}()
	}
	wg.Wait()
	samples := rec.Collect(time.Now())
	if len(samples) != 1 {
		t.Fatalf("want 1 sample, got %d: %+v", len(samples), samples)
	}
	s := samples[0]
	if s.Success+s.Failure != goroutines*calls || s.Failure != goroutines*calls/4 {
		t.Errorf("success %d failure %d, want %d and %d", s.Success, s.Failure, goroutines*calls*3/4, goroutines*calls/4)
	}
	wantIn := int64(0)
	for g := range goroutines {
		wantIn += int64(calls * (100 + g))
	}
	if s.Input != wantIn || s.Output != goroutines*calls*10 {
		t.Errorf("input %d output %d, want %d and %d", s.Input, s.Output, wantIn, goroutines*calls*10)
	}
	if s.MaxInput != 100+goroutines-1 || s.MaxOutput != 10 {
		t.Errorf("max.input %d max.output %d, want %d and 10", s.MaxInput, s.MaxOutput, 100+goroutines-1)
	}
	if s.MaxConcurrent < 1 || s.MaxConcurrent > goroutines || s.Concurrent < 1 || s.Concurrent > s.MaxConcurrent {
		t.Errorf("concurrent %d, max.concurrent %d: want 1 <= concurrent <= max <= %d", s.Concurrent, s.MaxConcurrent, goroutines)
	}
	c := rec.Counter(greeterKey)
	if c.active.Load() != 0 || c.started.Load() != goroutines*calls {
		t.Errorf("active %d started %d after all calls ended", c.active.Load(), c.started.Load())
	}
}

// Concurrency: the average over the interval's calls of how many ran when
// each began, and the most at once.
func TestConcurrentAverageAndMax(t *testing.T) {
	rec := providerRecorder()
	c := rec.Counter(greeterKey)
	a, b, d := c.Begin(), c.Begin(), c.Begin() // 1, 2 and 3 running
	c.End(a, Success, 0, 0)
	c.End(b, Success, 0, 0)
	e := c.Begin() // 2 running
	c.End(d, Success, 0, 0)
	c.End(e, Success, 0, 0)
	s := rec.Collect(time.Now())[0]
	if s.Concurrent != 2 || s.MaxConcurrent != 3 { // (1+2+3+2)/4
		t.Errorf("concurrent %d max %d, want 2 and 3", s.Concurrent, s.MaxConcurrent)
	}
}

func TestElapsedAndMaxElapsed(t *testing.T) {
	rec := providerRecorder()
	c := rec.Counter(greeterKey)
	for _, d := range []time.Duration{30 * time.Millisecond, 10 * time.Millisecond} {
		c.End(Start{at: int64(time.Since(c.epoch) - d), conc: 1}, Success, 0, 0)
	}
	s := rec.Collect(time.Now())[0]
	// The calls took at least what was subtracted; a loaded machine adds.
	if s.Elapsed < 40 || s.Elapsed > 1000 || s.MaxElapsed < 30 || s.MaxElapsed > s.Elapsed {
		t.Errorf("elapsed %d ms, max %d ms; want about 40 and 30", s.Elapsed, s.MaxElapsed)
	}
}

// Each interval reports its own calls; maxima start again; an idle key
// sends nothing; a call still running shows as concurrency; milliseconds
// that do not fill an interval's last one carry over.
func TestCollectIntervals(t *testing.T) {
	rec := providerRecorder()
	c := rec.Counter(greeterKey)
	call := func(in int, elapsed time.Duration, o Outcome) {
		s := c.Begin()
		c.End(s, o, in, 0)
		c.elapsed.Add(int64(elapsed)) // on top of the real (sub-ms) time
	}
	t0 := time.Now()
	call(500, 1500*time.Microsecond, Success)
	call(50, 0, Timeout)
	s1 := rec.Collect(t0.Add(time.Minute))
	call(10, 1500*time.Microsecond, Success)
	s2 := rec.Collect(t0.Add(2 * time.Minute))
	s3 := rec.Collect(t0.Add(3 * time.Minute))
	running := c.Begin()
	s4 := rec.Collect(t0.Add(4 * time.Minute))
	c.End(running, Success, 0, 0)

	if len(s1) != 1 || s1[0].Success != 1 || s1[0].Failure != 1 || s1[0].Input != 550 || s1[0].MaxInput != 500 || s1[0].Elapsed != 1 {
		t.Errorf("interval 1: %+v", s1)
	}
	if len(s2) != 1 || s2[0].Success != 1 || s2[0].Failure != 0 || s2[0].Input != 10 || s2[0].MaxInput != 10 || s2[0].Elapsed != 2 {
		t.Errorf("interval 2 (1.5 ms + 1.5 ms = 3 ms, 1 sent before): %+v", s2)
	}
	if s2[0].Interval != time.Minute || !s2[0].Timestamp.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("interval 2 covers %v ending %v", s2[0].Interval, s2[0].Timestamp)
	}
	if len(s3) != 0 {
		t.Errorf("idle interval sent %+v", s3)
	}
	if len(s4) != 1 || s4[0].Success+s4[0].Failure != 0 || s4[0].MaxConcurrent != 1 {
		t.Errorf("interval with a call running: %+v", s4)
	}
}

// Each interval's histogram holds that interval's calls, in the buckets of
// their response times: 90 at 1 ms and 10 at 50 ms give p50 about 1 ms
// and p99 about 50 ms; the next interval holds only its own call.
func TestCollectHistogram(t *testing.T) {
	rec := providerRecorder()
	c := rec.Counter(greeterKey)
	took := func(d time.Duration) {
		c.End(Start{at: int64(time.Since(c.epoch) - d), conc: 1}, Success, 0, 0)
	}
	for i := range 100 {
		took(map[bool]time.Duration{true: 50 * time.Millisecond, false: time.Millisecond}[i%10 == 0])
	}
	t0 := time.Now()
	s1 := rec.Collect(t0.Add(time.Minute))[0]
	took(3 * time.Second)
	s2 := rec.Collect(t0.Add(2 * time.Minute))[0]

	h1, err := s1.Histogram.Counts()
	if err != nil || h1.Total() != 100 {
		t.Fatalf("interval 1: %d calls in the histogram (%v), want 100", h1.Total(), err)
	}
	// The estimate is in the true value's bucket; a loaded machine adds to
	// a call's time, so the next bucket up is allowed too.
	within := func(name string, got float64, d time.Duration) {
		lo, _ := histogram.Bounds(histogram.Of(d))
		_, hi := histogram.Bounds(histogram.Of(d) + 1)
		if got*1000 < lo || got*1000 >= hi {
			t.Errorf("interval 1 %s %v ms, want %v µs..%v µs", name, got, lo, hi)
		}
	}
	within("p50", h1.Quantile(0.5), time.Millisecond)
	within("p99", h1.Quantile(0.99), 50*time.Millisecond)
	h2, err := s2.Histogram.Counts()
	if err != nil || h2.Total() != 1 || h2[histogram.Of(3*time.Second)] != 1 && h2[histogram.Of(3*time.Second)+1] != 1 {
		t.Errorf("interval 2: %v (%v), want the one 3 s call", h2, err)
	}
}

func TestCollectSortsAndFillsNodeFields(t *testing.T) {
	rec := NewRecorder(Config{Side: Consumer, Application: "app", Host: "10.0.0.9"})
	for _, m := range []string{"b", "a"} {
		for _, peer := range []string{"10.0.0.2:20880", "10.0.0.1:20880"} {
			c := rec.Counter(Key{Interface: "I", Method: m, Peer: peer})
			c.End(c.Begin(), Success, 1, 1)
		}
	}
	var got []string
	for _, s := range rec.Collect(time.Now()) {
		if s.Side != Consumer || s.Application != "app" || s.Host != "10.0.0.9" || s.Port != 0 {
			t.Errorf("sample node fields: %+v", s)
		}
		got = append(got, s.Method+"@"+s.Peer)
	}
	if fmt.Sprint(got) != "[a@10.0.0.1:20880 a@10.0.0.2:20880 b@10.0.0.1:20880 b@10.0.0.2:20880]" {
		t.Errorf("order %v", got)
	}
}

// A flood of new peers stops growing the recorder at the bound: new peers
// of a method share its Other key, and past the hard bound everything
// shares one key. Keys made before the bound keep counting as themselves.
func TestKeyBound(t *testing.T) {
	rec := NewRecorder(Config{Side: Consumer, MaxKeys: 16})
	key := func(method string, i int) Key {
		return Key{Interface: "I", Method: method, Peer: "10.0.0." + strconv.Itoa(i) + ":20880"}
	}
	for i := range 16 {
		c := rec.Counter(key("m", i))
		c.End(c.Begin(), Success, 0, 0)
	}
	for i := 16; i < 1000; i++ {
		c := rec.Counter(key("m", i))
		if c.Key() != (Key{Interface: "I", Method: "m", Peer: Other}) {
			t.Fatalf("peer %d counted under %+v", i, c.Key())
		}
		c.End(c.Begin(), Success, 0, 0)
	}
	for i := range 16 { // the first keys still count as themselves
		if c := rec.Counter(key("m", i)); c.Key() != key("m", i) {
			t.Fatalf("key %d now counted under %+v", i, c.Key())
		}
	}
	for i := range 100 { // new methods: a folded key each, until the hard bound
		rec.Counter(key("n"+strconv.Itoa(i), 0))
	}
	if c := rec.Counter(key("zzz", 1)); c.Key() != (Key{Other, Other, Other, Other, Other}) {
		t.Errorf("past the hard bound: %+v", c.Key())
	}
	if n := len(rec.counters()); n > 16+16/8+1 {
		t.Errorf("%d keys, bound %d", n, 16+16/8+1)
	}
	if rec.Folded() < 984+100 {
		t.Errorf("folded %d, want at least %d", rec.Folded(), 984+100)
	}
	var other int64
	for _, s := range rec.Collect(time.Now()) {
		if s.Peer == Other && s.Method == "m" {
			other = s.Success
		}
	}
	if other != 984 {
		t.Errorf("other peer of m counted %d calls, want 984", other)
	}
}

// Many keys made one by one are all found again, each its own counter.
func TestManyKeys(t *testing.T) {
	rec := NewRecorder(Config{Side: Provider})
	seen := map[*Counter]bool{}
	for i := range 5000 {
		k := Key{Interface: "I", Method: "m", Peer: strconv.Itoa(i)}
		c := rec.Counter(k)
		if c.Key() != k || seen[c] {
			t.Fatalf("key %d: counter %+v, reused %v", i, c.Key(), seen[c])
		}
		seen[c] = true
		if rec.Counter(k) != c {
			t.Fatalf("key %d found a different counter", i)
		}
	}
	for i := range 5000 {
		if c := rec.Counter(Key{Interface: "I", Method: "m", Peer: strconv.Itoa(i)}); !seen[c] {
			t.Fatalf("key %d lost", i)
		}
	}
}

func TestNoAllocations(t *testing.T) {
	rec := providerRecorder()
	rec.Counter(greeterKey)
	k := greeterKey
	if n := testing.AllocsPerRun(1000, func() {
		c := rec.Counter(k)
		c.End(c.Begin(), Success, 100, 20)
	}); n != 0 {
		t.Errorf("lookup and Begin/End allocate %v times per call", n)
	}
	err := &rpc.CallError{Kind: rpc.ErrTimeout, Service: "I", Method: "m"}
	if n := testing.AllocsPerRun(1000, func() { OutcomeOf(err) }); n != 0 {
		t.Errorf("OutcomeOf allocates %v times", n)
	}
}

// The fields every call writes sit in one cache line (Counters are
// allocated from a size class of 64-byte multiples).
func TestHotFieldsShareALine(t *testing.T) {
	var c Counter
	first, last := unsafe.Offsetof(c.active), unsafe.Offsetof(c.last)
	if first%64 != 0 || last/64 != first/64 {
		t.Errorf("hot fields at offsets %d..%d", first, last)
	}
}

func TestOutcomeOf(t *testing.T) {
	call := func(kind error) error { return &rpc.CallError{Kind: kind, Service: "I", Method: "m"} }
	for _, tc := range []struct {
		err  error
		want Outcome
	}{
		{nil, Success},
		{&rpc.Exception{Class: "java.lang.RuntimeException", Message: "boom"}, BusinessFailed},
		{fmt.Errorf("call: %w", &rpc.Exception{Message: "boom"}), BusinessFailed},
		{call(rpc.ErrTimeout), Timeout},
		{call(rpc.ErrPoolExhausted), Limit},
		{call(rpc.ErrConnection), Network},
		{call(rpc.ErrNoProvider), ServiceUnavailable},
		{call(rpc.ErrServiceNotFound), ServiceUnavailable},
		{call(rpc.ErrBadRequest), Codec},
		{call(rpc.ErrProvider), UnknownFailed},
		{errors.New("plugin crashed"), UnknownFailed},
	} {
		if got := OutcomeOf(tc.err); got != tc.want {
			t.Errorf("OutcomeOf(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
