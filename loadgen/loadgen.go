// Package loadgen is the engine behind `dubbo bench`: it runs a call
// function from a fixed number of goroutines until a call count or a
// duration is reached, and summarises latency, errors by kind and calls by
// provider in the JSON line the command line promises
// (docs/ARCHITECTURE.md, "Contracts"), with more percentiles, the minimum
// and the mean beside its keys:
//
//	{"calls":N,"errors":N,"qps":X,"p50_us":N,"p90_us":N,"p99_us":N,"p999_us":N,"min_us":N,"mean_us":N,"max_us":N,
//	 "errors_by_kind":{...},"by_provider":{"host:port":N}}
//
// By default each goroutine calls again as soon as its call returns (a
// closed loop). With Options.Rate the calls are due at fixed times instead
// (an open loop): call i is due at start + i/Rate, the goroutines take the
// calls in turn, and a call's latency runs from the time it was due, not
// from when a goroutine got to it. When the service is slower than the
// rate, calls wait for a free goroutine and that wait is counted, so the
// queueing a real client at that rate would see is not hidden
// (coordinated omission).
//
// The call function does one call and reports the provider that answered;
// Run knows nothing of Dubbo beyond classifying errors with
// rpc.ErrorKind. Latencies go into a log-linear histogram (0.4%
// precision, fixed memory), one per goroutine, merged at the end.
package loadgen

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Options bound a run. With neither Calls nor Duration set, Run goes on
// until ctx ends.
type Options struct {
	// Concurrency is the number of goroutines calling in a loop, and so
	// the most calls in flight. Default 1.
	Concurrency int
	// Rate, when positive, is the calls per second to start, at evenly
	// spaced due times (open loop); latencies count from the due time.
	// Default 0: each goroutine calls again as soon as its call returns.
	Rate float64
	// Calls is the exact number of calls to make (-n); 0 means no limit.
	Calls int64
	// Duration stops starting new calls after this long (-d); calls in
	// flight then finish and are counted, calls due later are not made.
	// 0 means no limit.
	Duration time.Duration
	// Progress receives a live line, rewritten with \r, and a final newline.
	// nil (the default) writes nothing; the caller passes a terminal only.
	Progress io.Writer
	// ProgressInterval is how often the line is rewritten. Default 500ms.
	ProgressInterval time.Duration
}

// CallFunc makes one call and returns the address of the provider that
// answered ("" if none was reached) and the call's error.
type CallFunc func(ctx context.Context) (provider string, err error)

// Summary is the result of a run; it marshals to bench's JSON line
// (docs/ARCHITECTURE.md, "Contracts").
// Latencies are of every completed call, failed ones included; by_provider
// counts every call that reported a provider, failed ones included.
type Summary struct {
	Calls        int64            `json:"calls"`
	Errors       int64            `json:"errors"`
	QPS          float64          `json:"qps"`
	P50us        int64            `json:"p50_us"`
	P90us        int64            `json:"p90_us"`
	P99us        int64            `json:"p99_us"`
	P999us       int64            `json:"p999_us"`
	MinUs        int64            `json:"min_us"`
	MeanUs       int64            `json:"mean_us"`
	MaxUs        int64            `json:"max_us"`
	ErrorsByKind map[string]int64 `json:"errors_by_kind"`
	ByProvider   map[string]int64 `json:"by_provider"`
	// Elapsed is the wall time from the first call's start to the last one's end.
	Elapsed time.Duration `json:"-"`
}

// worker is one goroutine's private tally.
type worker struct {
	hist       histogram
	errors     map[string]int64
	byProvider map[string]int64
}

// Run calls call until the options' bounds or ctx end it, and summarises.
// Calls that fail because ctx was cancelled are not counted.
func Run(ctx context.Context, opts Options, call CallFunc) Summary {
	conc := max(opts.Concurrency, 1)
	if opts.Calls > 0 {
		conc = int(min(int64(conc), opts.Calls))
	}

	// stop ends the issuing of new calls; calls get ctx itself, so a
	// duration limit does not cancel (and miscount) the calls in flight.
	stop := ctx
	if opts.Duration > 0 {
		var cancel context.CancelFunc
		stop, cancel = context.WithTimeout(ctx, opts.Duration)
		defer cancel()
	}

	var issued, done, failed atomic.Int64
	workers := make([]*worker, conc)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range workers {
		w := &worker{errors: map[string]int64{}, byProvider: map[string]int64{}}
		workers[i] = w
		wg.Go(func() {
			var pace *time.Timer
			for stop.Err() == nil {
				n := issued.Add(1)
				if opts.Calls > 0 && n > opts.Calls {
					return
				}
				t0 := time.Now()
				if opts.Rate > 0 {
					t0 = start.Add(time.Duration(float64(n-1) * float64(time.Second) / opts.Rate))
					if !waitUntil(stop, &pace, t0) {
						return
					}
				}
				provider, err := call(ctx)
				elapsed := time.Since(t0)
				if err != nil && ctx.Err() != nil {
					return // cancelled by the caller, not a failure of the service
				}
				w.hist.record(elapsed)
				if provider != "" {
					w.byProvider[provider]++
				}
				if err != nil {
					w.errors[rpc.ErrorKind(err)]++
					failed.Add(1)
				}
				done.Add(1)
			}
		})
	}

	progressDone := make(chan struct{})
	stopProgress := make(chan struct{})
	if opts.Progress != nil {
		go func() {
			defer close(progressDone)
			progress(opts, start, &done, &failed, stopProgress)
		}()
	} else {
		close(progressDone)
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stopProgress)
	<-progressDone

	return summarise(workers, elapsed)
}

// waitUntil sleeps until t, on *timer (made on first use); false when stop
// ends first.
func waitUntil(stop context.Context, timer **time.Timer, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	if *timer == nil {
		*timer = time.NewTimer(d)
	} else {
		(*timer).Reset(d)
	}
	select {
	case <-(*timer).C:
		return true
	case <-stop.Done():
		(*timer).Stop()
		return false
	}
}

func summarise(workers []*worker, elapsed time.Duration) Summary {
	s := Summary{ErrorsByKind: map[string]int64{}, ByProvider: map[string]int64{}, Elapsed: elapsed}
	var h histogram
	for _, w := range workers {
		h.merge(&w.hist)
		for k, n := range w.errors {
			s.ErrorsByKind[k] += n
			s.Errors += n
		}
		for p, n := range w.byProvider {
			s.ByProvider[p] += n
		}
	}
	s.Calls = int64(h.n)
	if elapsed > 0 {
		s.QPS = math.Round(float64(s.Calls)/elapsed.Seconds()*10) / 10
	}
	s.P50us = h.quantile(0.50).Microseconds()
	s.P90us = h.quantile(0.90).Microseconds()
	s.P99us = h.quantile(0.99).Microseconds()
	s.P999us = h.quantile(0.999).Microseconds()
	s.MinUs = time.Duration(h.min).Microseconds()
	s.MeanUs = h.mean().Microseconds()
	s.MaxUs = time.Duration(h.max).Microseconds()
	return s
}

// progress rewrites one status line every interval until stop closes, then
// writes it a last time and ends it with a newline. Write errors are
// ignored: the line is a courtesy, the summary is the result.
func progress(opts Options, start time.Time, done, failed *atomic.Int64, stop <-chan struct{}) {
	interval := opts.ProgressInterval
	if interval <= 0 {
		interval = 500 * time.Millisecond
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	lastN, lastT := int64(0), start
	// line shows the rate over the last interval while running, and the
	// average over the whole run at the end.
	line := func(now time.Time, final bool) {
		n := done.Load()
		from, base := lastT, lastN
		if final {
			from, base = start, 0
		}
		rate := 0.0
		if dt := now.Sub(from).Seconds(); dt > 0 {
			rate = float64(n-base) / dt
		}
		lastN, lastT = n, now
		count := strconv.FormatInt(n, 10)
		if opts.Calls > 0 {
			count += "/" + strconv.FormatInt(opts.Calls, 10)
		}
		elapsed := now.Sub(start).Round(100 * time.Millisecond).String()
		if opts.Duration > 0 {
			elapsed += "/" + opts.Duration.String()
		}
		// Trailing spaces erase what a longer previous line left behind.
		_, _ = fmt.Fprintf(opts.Progress, "\rcalls %s  errors %d  %.0f calls/s  %s    ",
			count, failed.Load(), rate, elapsed)
	}
	for {
		select {
		case now := <-tick.C:
			line(now, false)
		case <-stop:
			line(time.Now(), true)
			_, _ = io.WriteString(opts.Progress, "\n")
			return
		}
	}
}
