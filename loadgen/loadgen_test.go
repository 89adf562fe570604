package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/syncbuf"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

func TestHistogramBuckets(t *testing.T) {
	prev := -1
	for v := uint64(0); v < 1<<24; v = v*33/32 + 1 {
		i := bucketOf(v)
		if i < prev {
			t.Fatalf("bucketOf(%d) = %d < bucketOf of a smaller value %d", v, i, prev)
		}
		prev = i
		got := bucketValue(i)
		diff := max(got, v) - min(got, v)
		if diff*256 > v+256 {
			t.Fatalf("value %d reported as %d: error %d above half a bucket", v, got, diff)
		}
	}
	if got := bucketOf(1 << 50); got != numBuckets-1 {
		t.Fatalf("huge value in bucket %d, want the last (%d)", got, numBuckets-1)
	}
}

func TestHistogramQuantiles(t *testing.T) {
	us := time.Microsecond
	ms := time.Millisecond
	tests := []struct {
		name                                    string
		values                                  func(record func(time.Duration))
		p50, p90, p99, p999, min, mean, maximum time.Duration
	}{
		{"uniform 1..10000us", func(r func(time.Duration)) {
			for i := 1; i <= 10000; i++ {
				r(time.Duration(i) * us)
			}
		}, 5000 * us, 9000 * us, 9900 * us, 9990 * us, us, 5000500 * time.Nanosecond, 10000 * us},
		{"constant", func(r func(time.Duration)) {
			for range 1000 {
				r(250 * us)
			}
		}, 250 * us, 250 * us, 250 * us, 250 * us, 250 * us, 250 * us, 250 * us},
		{"bimodal 98% fast 2% slow", func(r func(time.Duration)) {
			for i := range 1000 {
				if i%50 == 0 {
					r(50 * ms)
				} else {
					r(100 * us)
				}
			}
		}, 100 * us, 100 * us, 50 * ms, 50 * ms, 100 * us, 1098 * us, 50 * ms},
		{"one value", func(r func(time.Duration)) { r(3 * time.Second) },
			3 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second},
		{"sub-microsecond exact", func(r func(time.Duration)) {
			for i := range 100 {
				r(time.Duration(i+1) * time.Nanosecond)
			}
		}, 50, 90, 99, 100, 1, 50, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Spread over two histograms to exercise merge too.
			var a, b, h histogram
			n := 0
			tt.values(func(d time.Duration) {
				if n%2 == 0 {
					a.record(d)
				} else {
					b.record(d)
				}
				n++
			})
			h.merge(&a)
			h.merge(&b)
			for _, c := range []struct {
				name      string
				got, want time.Duration
			}{
				{"p50", h.quantile(0.5), tt.p50}, {"p90", h.quantile(0.9), tt.p90}, {"p99", h.quantile(0.99), tt.p99},
				{"p999", h.quantile(0.999), tt.p999}, {"min", time.Duration(h.min), tt.min}, {"mean", h.mean(), tt.mean},
				{"max", time.Duration(h.max), tt.maximum},
			} {
				if d := (c.got - c.want).Abs(); d*256 > c.want+256 {
					t.Errorf("%s = %v, want %v within 0.4%%", c.name, c.got, c.want)
				}
			}
		})
	}
	var empty histogram
	if q, m := empty.quantile(0.99), empty.mean(); q != 0 || m != 0 || empty.min != 0 {
		t.Errorf("empty p99 = %v, mean %v, min %v", q, m, empty.min)
	}
}

func TestRunCountExact(t *testing.T) {
	for _, tt := range []struct {
		conc  int
		calls int64
	}{{1, 1}, {1, 100}, {7, 1000}, {16, 5}, {0, 10}} {
		t.Run(fmt.Sprintf("c%d_n%d", tt.conc, tt.calls), func(t *testing.T) {
			var made atomic.Int64
			s := Run(context.Background(), Options{Concurrency: tt.conc, Calls: tt.calls}, func(context.Context) (string, error) {
				made.Add(1)
				return "127.0.0.1:20880", nil
			})
			if s.Calls != tt.calls || made.Load() != tt.calls || s.Errors != 0 {
				t.Fatalf("summary %+v, call function ran %d times; want %d calls", s, made.Load(), tt.calls)
			}
			if s.ByProvider["127.0.0.1:20880"] != tt.calls || s.QPS <= 0 {
				t.Fatalf("summary %+v", s)
			}
		})
	}
}

func TestRunDuration(t *testing.T) {
	const d = 100 * time.Millisecond
	start := time.Now()
	s := Run(context.Background(), Options{Concurrency: 3, Duration: d}, func(context.Context) (string, error) {
		time.Sleep(time.Millisecond)
		return "", nil
	})
	took := time.Since(start)
	if took < d || took > d+time.Second {
		t.Fatalf("run took %v, want about %v", took, d)
	}
	if s.Calls == 0 || s.Errors != 0 || s.P50us < 1000 || s.MaxUs < s.P99us || s.P99us < s.P50us {
		t.Fatalf("summary %+v", s)
	}
	if len(s.ByProvider) != 0 {
		t.Fatalf("by_provider %v for calls without a provider", s.ByProvider)
	}
}

// TestRunDurationFinishesInFlight: calls still running when the duration
// ends complete normally and are counted as successes.
func TestRunDurationFinishesInFlight(t *testing.T) {
	var started atomic.Int64
	s := Run(context.Background(), Options{Concurrency: 2, Duration: 30 * time.Millisecond}, func(ctx context.Context) (string, error) {
		started.Add(1)
		select {
		case <-time.After(80 * time.Millisecond):
			return "p", nil
		case <-ctx.Done():
			return "p", ctx.Err()
		}
	})
	// Each call lasts at least 80 ms; the histogram reports a bucket's
	// middle, within 0.4 %, so 80.1 ms may read 79.8.
	if started.Load() == 0 || s.Calls != started.Load() || s.Errors != 0 || s.P50us < 79600 {
		t.Fatalf("summary %+v after %d calls started, want them all counted as successes", s, started.Load())
	}
}

func TestRunErrorsByKind(t *testing.T) {
	results := []error{
		nil,
		&rpc.CallError{Kind: rpc.ErrNoProvider, Service: "s", Method: "m"},
		&rpc.CallError{Kind: rpc.ErrTimeout, Service: "s", Method: "m"},
		&rpc.Exception{Class: "java.lang.RuntimeException", Message: "boom"},
		fmt.Errorf("x: %w", rpc.ErrConnection),
		errors.New("strange"),
		rpc.ErrServiceNotFound, rpc.ErrPoolExhausted, rpc.ErrBadRequest, rpc.ErrProvider,
	}
	const rounds = 30
	var i atomic.Int64
	s := Run(context.Background(), Options{Concurrency: 4, Calls: rounds * int64(len(results))}, func(context.Context) (string, error) {
		n := i.Add(1) - 1
		err := results[n%int64(len(results))]
		provider := "127.0.0.1:20880"
		if n%2 == 1 {
			provider = "127.0.0.1:20881"
		}
		if errors.Is(err, rpc.ErrNoProvider) {
			provider = ""
		}
		return provider, err
	})
	want := map[string]int64{"no_provider": rounds, "timeout": rounds, "exception": rounds, "connection": rounds,
		"other": rounds, "service_not_found": rounds, "pool_exhausted": rounds, "bad_request": rounds, "provider": rounds}
	if fmt.Sprint(s.ErrorsByKind) != fmt.Sprint(want) || s.Errors != 9*rounds || s.Calls != 10*rounds {
		t.Fatalf("summary %+v\nwant errors_by_kind %v", s, want)
	}
	if s.ByProvider["127.0.0.1:20880"]+s.ByProvider["127.0.0.1:20881"] != 9*rounds || len(s.ByProvider) != 2 {
		t.Fatalf("by_provider %v", s.ByProvider)
	}
}

func TestRunConcurrency(t *testing.T) {
	for _, conc := range []int{1, 3, 8} {
		t.Run(fmt.Sprint(conc), func(t *testing.T) {
			var inFlight, peak atomic.Int64
			// Calls wait until conc of them are in flight together (or give
			// up after a while), so reaching the limit does not depend on
			// how fast goroutines start on a loaded machine.
			full := make(chan struct{})
			var once sync.Once
			s := Run(context.Background(), Options{Concurrency: conc, Calls: int64(conc * 4)}, func(context.Context) (string, error) {
				n := inFlight.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				if n == int64(conc) {
					once.Do(func() { close(full) })
				}
				select {
				case <-full:
				case <-time.After(2 * time.Second):
				}
				time.Sleep(time.Millisecond)
				inFlight.Add(-1)
				return "", nil
			})
			if peak.Load() > int64(conc) {
				t.Fatalf("%d calls in flight with concurrency %d", peak.Load(), conc)
			}
			if peak.Load() < int64(conc) {
				t.Fatalf("only %d calls in flight with concurrency %d", peak.Load(), conc)
			}
			if s.Calls != int64(conc*4) {
				t.Fatalf("summary %+v", s)
			}
		})
	}
}

// TestRunCancel: cancelling ctx stops the run and the calls it cut short
// are not reported as failures.
func TestRunCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	s := Run(ctx, Options{Concurrency: 4}, func(ctx context.Context) (string, error) {
		<-ctx.Done()
		return "", fmt.Errorf("%w: %w", rpc.ErrTimeout, ctx.Err())
	})
	if s.Calls != 0 || s.Errors != 0 {
		t.Fatalf("summary %+v, want nothing counted", s)
	}
}

func TestSummaryJSON(t *testing.T) {
	tests := []struct {
		s    Summary
		want string
	}{
		{Summary{}, `{"calls":0,"errors":0,"qps":0,"p50_us":0,"p90_us":0,"p99_us":0,"p999_us":0,"min_us":0,"mean_us":0,"max_us":0,"errors_by_kind":null,"by_provider":null}`},
		{
			Summary{Calls: 1000, Errors: 3, QPS: 2500.5, P50us: 310, P90us: 800, P99us: 1200, P999us: 5000, MinUs: 90, MeanUs: 402, MaxUs: 5400,
				ErrorsByKind: map[string]int64{"timeout": 2, "exception": 1},
				ByProvider:   map[string]int64{"127.0.0.1:20880": 600, "127.0.0.1:20881": 400}, Elapsed: time.Second},
			`{"calls":1000,"errors":3,"qps":2500.5,"p50_us":310,"p90_us":800,"p99_us":1200,"p999_us":5000,"min_us":90,"mean_us":402,"max_us":5400,` +
				`"errors_by_kind":{"exception":1,"timeout":2},"by_provider":{"127.0.0.1:20880":600,"127.0.0.1:20881":400}}`,
		},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.s)
		if err != nil || string(b) != tt.want {
			t.Errorf("json = %s, %v\nwant %s", b, err, tt.want)
		}
	}
	// What Run returns always has both maps, so they print as {}.
	s := Run(context.Background(), Options{Calls: 1}, func(context.Context) (string, error) { return "", nil })
	b, _ := json.Marshal(s)
	if !strings.HasSuffix(string(b), `"errors_by_kind":{},"by_provider":{}}`) {
		t.Errorf("json = %s", b)
	}
}

func TestProgress(t *testing.T) {
	var out syncbuf.Buffer
	Run(context.Background(), Options{Concurrency: 2, Calls: 20, Progress: &out, ProgressInterval: 5 * time.Millisecond},
		func(context.Context) (string, error) {
			time.Sleep(2 * time.Millisecond)
			return "", nil
		})
	got := out.String()
	if !strings.HasPrefix(got, "\rcalls ") || !strings.HasSuffix(got, "\n") || strings.Count(got, "\n") != 1 {
		t.Fatalf("progress output %q", got)
	}
	last := got[strings.LastIndex(got, "\r"):]
	if !strings.Contains(last, "calls 20/20  errors 0") {
		t.Fatalf("last progress line %q", last)
	}
	if strings.Count(got, "\r") < 2 {
		t.Fatalf("progress line was not updated while running: %q", got)
	}
}

// With Rate, calls start at their due times, start + i/Rate, whatever the
// concurrency: the run cannot go faster than the rate.
func TestRateSpacesCalls(t *testing.T) {
	const rate, calls = 200.0, 20
	start := time.Now()
	var mu sync.Mutex
	var began []time.Duration
	s := Run(context.Background(), Options{Concurrency: 4, Calls: calls, Rate: rate}, func(context.Context) (string, error) {
		mu.Lock()
		began = append(began, time.Since(start))
		mu.Unlock()
		return "p", nil
	})
	if s.Calls != calls || s.Errors != 0 {
		t.Fatalf("summary %+v", s)
	}
	slices.Sort(began)
	for i, b := range began {
		// Due at i/rate; the run's own start is a little after ours.
		if due := time.Duration(float64(i) * float64(time.Second) / rate); b < due {
			t.Errorf("call %d began %v after the start, before it was due (%v)", i, b, due)
		}
	}
}

// Open loop: when the service is slower than the rate, calls wait for a free
// goroutine and the latency counts that wait from the due time. 20 calls
// due every 10 ms on one goroutine, each taking 20 ms: call i begins about
// 10 ms * i late, so the median is far above the 20 ms a call takes (a
// closed loop, or timing from the actual send, would report about 20 ms).
func TestRateCountsQueueing(t *testing.T) {
	const service = 20 * time.Millisecond
	s := Run(context.Background(), Options{Concurrency: 1, Calls: 20, Rate: 100}, func(context.Context) (string, error) {
		time.Sleep(service)
		return "p", nil
	})
	if s.Calls != 20 {
		t.Fatalf("summary %+v", s)
	}
	if s.P50us < 3*service.Microseconds() || s.MaxUs < 8*service.Microseconds() {
		t.Errorf("p50 %d µs, max %d µs with a %v service at twice its capacity; want the queueing counted (p50 ≥ %d µs, max ≥ %d µs)",
			s.P50us, s.MaxUs, service, 3*service.Microseconds(), 8*service.Microseconds())
	}
	if s.MinUs < service.Microseconds() || s.MeanUs < s.MinUs || s.MeanUs > s.MaxUs {
		t.Errorf("min %d µs, mean %d µs, max %d µs", s.MinUs, s.MeanUs, s.MaxUs)
	}
}

// With Rate and Duration, calls due after the duration are not made.
func TestRateWithDuration(t *testing.T) {
	s := Run(context.Background(), Options{Concurrency: 4, Duration: 100 * time.Millisecond, Rate: 100},
		func(context.Context) (string, error) { return "p", nil })
	// Due at 0, 10, ..., 90 ms (and 100 ms at the very edge).
	if s.Calls < 1 || s.Calls > 11 {
		t.Errorf("%d calls at 100/s in 100ms; want at most 11", s.Calls)
	}
}
