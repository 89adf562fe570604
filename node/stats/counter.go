package stats

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats/histogram"
)

// Outcome is how a call ended, in the categories of Dubbo 3's metrics
// (dubbo_*_requests_{succeed,business_failed,timeout,limit,...}_total).
type Outcome uint8

// Outcomes. Every one but Success counts as a Dubbo "failure".
const (
	Success            Outcome = iota
	BusinessFailed             // the service threw an exception
	Timeout                    // the call's timeout passed
	Limit                      // the provider's thread pool refused it
	Network                    // the connection failed
	ServiceUnavailable         // no provider, or the provider has no such service
	Codec                      // the request could not be encoded or decoded
	UnknownFailed              // any other failure
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"success", "business_failed", "timeout", "limit", "network", "service_unavailable", "codec", "unknown_failed"}

func (o Outcome) String() string {
	if o < numOutcomes {
		return outcomeNames[o]
	}
	return "unknown_failed"
}

// OutcomeOf classifies the error a call ended with by the rpc error
// categories: nil is Success, an *rpc.Exception anywhere in the chain
// BusinessFailed. It does not allocate.
func OutcomeOf(err error) Outcome {
	if err == nil {
		return Success
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if _, ok := e.(*rpc.Exception); ok {
			return BusinessFailed
		}
	}
	switch {
	case errors.Is(err, rpc.ErrTimeout):
		return Timeout
	case errors.Is(err, rpc.ErrPoolExhausted):
		return Limit
	case errors.Is(err, rpc.ErrConnection):
		return Network
	case errors.Is(err, rpc.ErrNoProvider), errors.Is(err, rpc.ErrServiceNotFound):
		return ServiceUnavailable
	case errors.Is(err, rpc.ErrBadRequest):
		return Codec
	}
	return UnknownFailed
}

// Counter counts the calls of one Key. Begin and End use atomics only: no
// lock, no allocation. Totals only grow (Prometheus reads them as they
// are); the monitor's interval values are their differences between two
// Recorder.Collect calls, and the interval maxima are reset by Collect.
type Counter struct {
	key Key
	// epoch is the recorder's creation; times are kept as monotonic
	// nanoseconds since it, one clock read each (time.Now reads two clocks).
	epoch time.Time
	_     [24]byte // puts active at offset 128: the hot fields share one line

	// Written by every call: one cache line, as the calls of a key on
	// different cores contend for it.
	active    atomic.Int64 // calls between Begin and End
	started   atomic.Int64
	succeeded atomic.Int64
	elapsed   atomic.Int64 // nanoseconds
	concSum   atomic.Int64 // sum over ended calls of the concurrency each began with
	input     atomic.Int64 // bytes
	output    atomic.Int64
	last      atomic.Uint64 // the call that ended last: packLast

	// Read by every call, written when a call sets a new extreme. The
	// interval maxima are swapped to 0 by Collect, which folds maxElapsed
	// into maxRT (since start, for Prometheus). minRT is 0 until the first
	// call ends.
	maxElapsed, maxConc, maxInput, maxOutput, minRT atomic.Int64
	maxRT                                           atomic.Int64 // written by Collect only

	failed [numOutcomes]atomic.Int64 // by outcome; index 0 (Success) unused

	// hist counts the calls by response time (package histogram): one
	// atomic add per call; Collect takes its interval differences, and
	// Metrics its quantiles.
	hist [histogram.Buckets]atomic.Int64

	// The totals and histogram at the previous Collect; Collect only.
	prev     totals
	prevHist histogram.Counts
}

// Start is what Begin hands to End: when the call began and how many calls
// of its key ran then, itself included.
type Start struct {
	at   int64 // nanoseconds since the counter's epoch
	conc int64
}

// Begin counts a call in.
func (c *Counter) Begin() Start {
	c.started.Add(1)
	n := c.active.Add(1)
	raiseMax(&c.maxConc, n)
	return Start{at: int64(time.Since(c.epoch)), conc: n}
}

// End counts the call begun at s out: how it ended and the sizes of its
// request (input) and response (output) in bytes, as Dubbo counts them;
// pass 0 for a size not known here and add it later with AddOutput.
func (c *Counter) End(s Start, o Outcome, input, output int) {
	now := int64(time.Since(c.epoch))
	d := now - s.at
	if d < 0 {
		d = 0
	}
	c.active.Add(-1)
	if o == Success {
		c.succeeded.Add(1)
	} else {
		if o >= numOutcomes {
			o = UnknownFailed
		}
		c.failed[o].Add(1)
	}
	c.elapsed.Add(d)
	c.concSum.Add(s.conc)
	raiseMax(&c.maxElapsed, d)
	lowerMin(&c.minRT, d)
	c.last.Store(packLast(now, d))
	c.hist[histogram.Of(time.Duration(d))].Add(1)
	if input > 0 {
		c.input.Add(int64(input))
		raiseMax(&c.maxInput, int64(input))
	}
	if output > 0 {
		c.AddOutput(output)
	}
}

// AddOutput adds the response size of a call already ended, for callers
// that learn it only after End (a provider encodes its answer after the
// service returns).
func (c *Counter) AddOutput(n int) {
	if n <= 0 {
		return
	}
	c.output.Add(int64(n))
	raiseMax(&c.maxOutput, int64(n))
}

// Key is what the counter counts.
func (c *Counter) Key() Key { return c.key }

// packLast packs when a call ended (seconds since the epoch) and its
// response time (microseconds, at most 2^32-1: 71 minutes) into one word,
// so recording them is one store.
func packLast(at, rt int64) uint64 {
	return uint64(at/1e9)<<32 | uint64(min(rt/1e3, 1<<32-1))
}

// lastCall unpacks last: when (since the epoch, to the second) and how long.
func (c *Counter) lastCall() (at, rt time.Duration, ok bool) {
	v := c.last.Load()
	if v == 0 {
		return 0, 0, false
	}
	return time.Duration(v>>32) * time.Second, time.Duration(v&(1<<32-1)) * time.Microsecond, true
}

// maxRTSinceStart is the longest call since start.
func (c *Counter) maxRTSinceStart() int64 { return max(c.maxRT.Load(), c.maxElapsed.Load()) }

// raiseMax sets m to v if v is larger. The load first keeps the common
// case (not a new maximum) free of writes to the shared cache line.
func raiseMax(m *atomic.Int64, v int64) {
	for {
		cur := m.Load()
		if v <= cur || m.CompareAndSwap(cur, v) {
			return
		}
	}
}

// lowerMin sets m to v if m is 0 (unset) or larger than v.
func lowerMin(m *atomic.Int64, v int64) {
	if v == 0 {
		v = 1 // 0 means unset; 1ns is as good as 0 in milliseconds
	}
	for {
		cur := m.Load()
		if (cur != 0 && cur <= v) || m.CompareAndSwap(cur, v) {
			return
		}
	}
}

// totals is a reading of a counter's monotonic totals.
type totals struct {
	started, succeeded, failed int64
	byOutcome                  [numOutcomes]int64
	input, output, elapsed     int64
	concSum                    int64
}

func (c *Counter) totals() totals {
	t := totals{
		started:   c.started.Load(),
		succeeded: c.succeeded.Load(),
		input:     c.input.Load(),
		output:    c.output.Load(),
		elapsed:   c.elapsed.Load(),
		concSum:   c.concSum.Load(),
	}
	for i := 1; i < int(numOutcomes); i++ {
		t.byOutcome[i] = c.failed[i].Load()
		t.failed += t.byOutcome[i]
	}
	t.byOutcome[Success] = t.succeeded
	return t
}

// readHist reads the histogram's counts since start.
func (c *Counter) readHist(dst *histogram.Counts) {
	for i := range c.hist {
		dst[i] = c.hist[i].Load()
	}
}
