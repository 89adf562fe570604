package store

import (
	"errors"
	"fmt"
	"math"

	"github.com/dubbo-lab/dubbo/node/stats/histogram"
)

// Sides of a call, as Dubbo names them.
const (
	SideProvider = "provider"
	SideConsumer = "consumer"
)

// Row is one statistics report (Dubbo's MonitorService.collect): what Node
// counted for one method of one service towards one peer during the
// interval that ended at Time. Its JSON form is what GET /api/v1/stats
// returns. Insert reads Histogram; Query fills Percentiles from it.
type Row struct {
	Time     int64 `json:"time"`     // end of the interval, Unix seconds
	Interval int64 `json:"interval"` // its length in seconds; 3600 for hourly rows

	Side        string `json:"side"`        // SideProvider or SideConsumer
	Application string `json:"application"` // the reporter's application
	Node        string `json:"node"`        // the reporter's identity, e.g. "10.0.0.1:20880#pid#start"

	Interface string `json:"interface"`
	Group     string `json:"group"`
	Version   string `json:"version"`
	Method    string `json:"method"`

	Address  string `json:"address"`  // the provider's host:port (the reporter itself on the provider side)
	Consumer string `json:"consumer"` // the consumer's address

	Success       int64   `json:"success"`
	Failure       int64   `json:"failure"`
	Input         int64   `json:"input"`  // request bytes
	Output        int64   `json:"output"` // response bytes
	ElapsedMs     int64   `json:"elapsed_ms"`
	MaxElapsedMs  int64   `json:"max_elapsed_ms"`
	Concurrent    float64 `json:"concurrent"` // average calls in flight
	MaxConcurrent int64   `json:"max_concurrent"`
	MaxInput      int64   `json:"max_input"`
	MaxOutput     int64   `json:"max_output"`

	// Histogram counts the calls by response time; "" when the reporter
	// sends none (Java and dubbo-go nodes).
	Histogram histogram.Sparse `json:"-"`
	Percentiles
}

// Percentiles are response times of calls, read from their merged
// histograms (package histogram: each within a bucket, under 25%, of the
// true value). They are null when no reporter of the calls sent a
// histogram: Java and dubbo-go nodes report the average and maximum only.
type Percentiles struct {
	P50Ms *float64 `json:"p50_ms"`
	P90Ms *float64 `json:"p90_ms"`
	P99Ms *float64 `json:"p99_ms"`
	// HistogramCalls is how many of the calls the histograms hold: all of
	// them when every reporter sent one, fewer when some did not.
	HistogramCalls int64 `json:"histogram_calls"`
}

// percentilesOf reads the percentiles of h; null ones when it is empty.
func percentilesOf(h *histogram.Counts) Percentiles {
	n := h.Total()
	if n == 0 {
		return Percentiles{}
	}
	q := func(q float64) *float64 {
		v := math.Round(h.Quantile(q)*1000) / 1000 // to the microsecond
		return &v
	}
	return Percentiles{P50Ms: q(0.5), P90Ms: q(0.9), P99Ms: q(0.99), HistogramCalls: n}
}

// Calls is the number of calls the row counts.
func (r Row) Calls() int64 { return r.Success + r.Failure }

// ErrInvalidRow is wrapped by the errors of Row.Validate and Insert.
var ErrInvalidRow = errors.New("invalid statistics row")

// maxText bounds every text field, so that one bad reporter cannot fill the
// database with a single row.
const maxText = 1024

// maxTime is the latest time a row or a query may name (year 9999), so
// that rounding times up to a step never overflows.
const maxTime = 253402300799

// Validate says what is wrong with r, if anything. Insert refuses a batch
// holding an invalid row; callers check rows from the network one by one
// and drop the bad ones.
func (r Row) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidRow, fmt.Sprintf(format, args...))
	}
	switch {
	case r.Time <= 0 || r.Time > maxTime:
		return bad("time %d is not a Unix time in 1..%d", r.Time, int64(maxTime))
	case r.Interval <= 0 || r.Interval > hour:
		return bad("interval %d s is not in 1..3600", r.Interval)
	case r.Side != SideProvider && r.Side != SideConsumer:
		return bad("side %q is neither %q nor %q", r.Side, SideProvider, SideConsumer)
	case r.Node == "":
		return bad("no node")
	case r.Interface == "":
		return bad("no interface")
	case r.Method == "":
		return bad("no method")
	}
	for _, f := range []struct {
		name, v string
	}{{"application", r.Application}, {"node", r.Node}, {"interface", r.Interface}, {"group", r.Group}, {"version", r.Version}, {"method", r.Method}, {"address", r.Address}, {"consumer", r.Consumer}} {
		if len(f.v) > maxText {
			return bad("%s is %d bytes, more than %d", f.name, len(f.v), maxText)
		}
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"success", r.Success}, {"failure", r.Failure}, {"input", r.Input}, {"output", r.Output}, {"elapsed", r.ElapsedMs}, {"max elapsed", r.MaxElapsedMs}, {"max concurrent", r.MaxConcurrent}, {"max input", r.MaxInput}, {"max output", r.MaxOutput}} {
		if f.v < 0 {
			return bad("%s %d is negative", f.name, f.v)
		}
	}
	if math.IsNaN(r.Concurrent) || math.IsInf(r.Concurrent, 0) || r.Concurrent < 0 {
		return bad("concurrent %v is not a non-negative number", r.Concurrent)
	}
	if _, err := r.Histogram.Counts(); err != nil {
		return bad("histogram: %v", err)
	}
	return nil
}
