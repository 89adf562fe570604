package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/dubbo-lab/dubbo/node/stats/histogram"
)

// sumsUpsert is the statement that adds n sums: a new row per sum, or
// added to the row already there (counts summed, maxima kept, the
// application kept if the same, histograms added). Histograms are added
// by concatenating them (package histogram), and merged into one by
// dubbo_histogram only past maxHistogram bytes: a call into Go for each
// sum of each batch was a third of the time of writing them.
func sumsUpsert(n int) string {
	const key = "level, span, time, interface_id, key_id"
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO sums (%s, success, failure, input, output, elapsed, max_elapsed, max_concurrent, last, application, histogram) VALUES ", key)
	values(&b, n, sumArgs)
	fmt.Fprintf(&b, ` ON CONFLICT (%s) DO UPDATE SET success = success + excluded.success, failure = failure + excluded.failure,
		input = input + excluded.input, output = output + excluded.output, elapsed = elapsed + excluded.elapsed,
		max_elapsed = max(max_elapsed, excluded.max_elapsed), max_concurrent = max(max_concurrent, excluded.max_concurrent),
		last = max(last, excluded.last), application = CASE WHEN application IS excluded.application THEN application END,
		histogram = CASE WHEN excluded.histogram IS NULL THEN histogram WHEN histogram IS NULL THEN excluded.histogram
			WHEN length(histogram) + length(excluded.histogram) <= %d THEN CAST(histogram || excluded.histogram AS BLOB)
			ELSE dubbo_histogram(histogram, excluded.histogram) END`, key, maxHistogram)
	return b.String()
}

// maxHistogram is the most bytes of a sum's histogram kept as
// concatenated histograms (a node's minute is some 10 to 60 bytes).
const maxHistogram = 512

// sumArgs is the number of values of a sum: its key and figures.
const sumArgs = 15

// batchSums adds up the rows of a batch into the sums they change: per
// key, its minutes; the hours and days are added up from them.
type batchSums struct {
	byKey map[*entry]*keySums
}

// keySums are a key's minutes in the batch.
type keySums struct {
	level   *level
	iface   int64 // 0 across interfaces
	key     int64
	minutes []*sum
}

// sum is what a batch adds to one sum.
type sum struct {
	time                                                          int64
	success, failure, input, output, elapsed, maxElapsed, maxConc int64
	last                                                          int64
	app                                                           string
	apps                                                          int    // 0: no row yet; 1: app is the rows'; 2: several
	hist                                                          []byte // the rows' histograms concatenated: their sum (package histogram)
}

func newBatchSums() *batchSums { return &batchSums{byKey: map[*entry]*keySums{}} }

// add adds the row p to its minute's sum at every level.
func (b *batchSums) add(p pending) {
	t := ceilTo(p.r.Time, minute)
	for i, e := range p.stream.keys {
		ks := b.byKey[e]
		if ks == nil {
			ks = &keySums{level: &levels[i], iface: p.iface, key: e.id}
			if ks.level.across {
				ks.iface = 0
			}
			b.byKey[e] = ks
		}
		var x *sum
		for _, m := range ks.minutes {
			if m.time == t {
				x = m
			}
		}
		if x == nil {
			x = &sum{time: t}
			ks.minutes = append(ks.minutes, x)
		}
		x.addRow(p.r, p.stream.application)
	}
}

func (x *sum) addRow(r *Row, app string) {
	x.addSum(&sum{success: r.Success, failure: r.Failure, input: r.Input, output: r.Output, elapsed: r.ElapsedMs,
		maxElapsed: r.MaxElapsedMs, maxConc: r.MaxConcurrent, last: r.Time, app: app, apps: 1})
	x.hist = append(x.hist, r.Histogram...)
}

// addApp adds the application of rows, apps 1 (one) or 2 (several).
func (x *sum) addApp(app string, apps int) {
	switch {
	case x.apps == 0:
		x.app, x.apps = app, apps
	case apps == 2 || app != x.app:
		x.apps = 2
	}
}

// addSum adds the sum o to x.
func (x *sum) addSum(o *sum) {
	x.success += o.success
	x.failure += o.failure
	x.input += o.input
	x.output += o.output
	x.elapsed += o.elapsed
	x.maxElapsed = max(x.maxElapsed, o.maxElapsed)
	x.maxConc = max(x.maxConc, o.maxConc)
	x.last = max(x.last, o.last)
	x.addApp(o.app, o.apps)
	x.hist = append(x.hist, o.hist...)
}

// compact merges the concatenated histograms into one.
func (x *sum) compact() error {
	var h histogram.Counts
	if err := h.AddSparse(histogram.Sparse(x.hist)); err != nil {
		return err // the rows were validated: not reached
	}
	x.hist = []byte(h.Sparse())
	return nil
}

// written is a sum to write: its place in the table (level, span, end,
// interface, key) and its figures.
type written struct {
	level, span, end, iface, key int64
	x                            *sum
}

func (ks *keySums) written(span int64, x *sum) written {
	return written{int64(ks.level.id), span, ceilTo(x.time, span), ks.iface, ks.key, x}
}

// write adds the sums to the table, in the table's order (so that each
// piece lands on few pages), in pieces of 1<<k sums. Minutes up to
// rolled (sum_rollup) are not written: their hour's sum answers for them.
func (b *batchSums) write(tx *sql.Tx, stmts *writeStmts, rolled int64) error {
	var out []written
	for _, ks := range b.byKey {
		for _, m := range ks.minutes {
			if err := m.compact(); err != nil {
				return err
			}
			if m.time > rolled {
				out = append(out, ks.written(minute, m))
			}
		}
		for _, span := range spans[1:] {
			if len(ks.minutes) == 1 { // the usual batch: its minute is its hour and day
				out = append(out, ks.written(span, ks.minutes[0]))
				continue
			}
			var longer []*sum // the key's sums of span, of its minutes
			for _, m := range ks.minutes {
				end := ceilTo(m.time, span)
				i := slices.IndexFunc(longer, func(x *sum) bool { return x.time == end })
				if i < 0 {
					i = len(longer)
					longer = append(longer, &sum{time: end})
				}
				longer[i].addSum(m)
			}
			for _, x := range longer {
				if err := x.compact(); err != nil {
					return err
				}
				out = append(out, ks.written(span, x))
			}
		}
	}
	slices.SortFunc(out, func(a, b written) int {
		return cmp.Or(cmp.Compare(a.level, b.level), cmp.Compare(a.span, b.span), cmp.Compare(a.end, b.end), cmp.Compare(a.iface, b.iface), cmp.Compare(a.key, b.key))
	})
	args := make([]any, 0, sumArgs<<chunkBits)
	for len(out) > 0 {
		// The largest piece of 1<<k sums that fits; pieces run as
		// queries, as the rows do: one cgo call binds them.
		k := min(bits.Len(uint(len(out)))-1, chunkBits)
		args = args[:0]
		for _, w := range out[:1<<k] {
			x := w.x
			var app, hist any // NULL: several applications, no histogram
			if x.apps == 1 {
				app = x.app
			}
			if len(x.hist) > 0 {
				hist = x.hist
			}
			args = append(args, w.level, w.span, w.end, w.iface, w.key,
				x.success, x.failure, x.input, x.output, x.elapsed, x.maxElapsed, x.maxConc, x.last, app, hist)
		}
		out = out[1<<k:]
		res, err := tx.Stmt(stmts.addSums[k]).QueryContext(context.Background(), args...)
		if err == nil {
			res.Next() // runs it
			err = errors.Join(res.Err(), res.Close())
		}
		if err != nil {
			return fmt.Errorf("add sums: %w", err)
		}
	}
	return nil
}
