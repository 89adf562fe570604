package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/dubbo-lab/dubbo/node/stats/histogram"
)

// ErrBadQuery is wrapped by the errors of Query, Series and the parsers
// for a filter the caller got wrong (an HTTP layer answers 400).
var ErrBadQuery = errors.New("bad statistics query")

// Filter selects rows for Query.
type Filter struct {
	Interface string // required
	Method    string // "" = every method
	Side      string // "" = both, else SideProvider or SideConsumer
	Address   string // the provider's host:port; "" = every provider
	// Version and Group select one version and group of the service
	// ("" is none); nil = all of them.
	Version, Group *string
	From, To       int64 // Unix seconds, inclusive, of the rows' Time (interval end); 0 = unbounded
	Limit          int   // most rows returned, the oldest first; 0 = all
}

func (f Filter) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadQuery, fmt.Sprintf(format, args...))
	}
	switch {
	case f.Interface == "":
		return bad("interface is required")
	case f.Side != "" && f.Side != SideProvider && f.Side != SideConsumer:
		return bad("side %q is neither %q nor %q", f.Side, SideProvider, SideConsumer)
	case f.From < 0 || f.To < 0 || f.From > maxTime || f.To > maxTime:
		return bad("from and to are Unix seconds in 0..%d", int64(maxTime))
	case f.To != 0 && f.From > f.To:
		return bad("from %d is after to %d", f.From, f.To)
	case f.Limit < 0:
		return bad("limit %d is negative", f.Limit)
	}
	return nil
}

// where returns the conditions on t (raw or hourly) and s (its streams)
// that f asks for, and their arguments.
func (f Filter) where(iface, from, to int64) (string, []any) {
	conds := []string{"t.interface_id = ?", "t.time >= ?", "t.time <= ?"}
	args := []any{iface, from, to}
	if f.Side != "" {
		conds = append(conds, "s.side = ?")
		args = append(args, f.Side)
	}
	if f.Method != "" {
		conds = append(conds, "s.method = ?")
		args = append(args, f.Method)
	}
	if f.Address != "" {
		conds = append(conds, "s.address = ?")
		args = append(args, f.Address)
	}
	if f.Version != nil {
		conds = append(conds, "s.version = ?")
		args = append(args, *f.Version)
	}
	if f.Group != nil {
		conds = append(conds, "s.grp = ?")
		args = append(args, *f.Group)
	}
	return strings.Join(conds, " AND "), args
}

const rowColumns = `t.time, %s, s.side, s.application, s.node, s.grp, s.version, s.method, s.address, s.consumer,
	t.success, t.failure, t.input, t.output, t.elapsed, t.max_elapsed, t.concurrent, t.max_concurrent, t.max_input, t.max_output, t.histogram`

// Query returns the rows f selects, oldest first: hourly rows (Interval
// 3600, Time the end of the hour) where the range is older than the raw
// retention, then the rows as reported. Each call made is in exactly one
// row, so the sum of Success+Failure over the result is the number of calls
// whose interval (or hour, for hourly rows) ended within From..To. Each
// row has its percentiles, from its histogram.
func (s *Store) Query(ctx context.Context, f Filter) ([]Row, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	to := f.To
	if to == 0 {
		to = 1<<63 - 1
	}
	out := []Row{}
	// One read transaction: a rollup committing between the two reads
	// would otherwise move an hour out of the first table's view and into
	// the second's after it was read, or the other way round.
	err := s.read(ctx, func(tx *sql.Tx) error {
		iface, ok, err := ifaceOf(ctx, tx, f.Interface)
		if err != nil || !ok {
			return err
		}
		for _, tbl := range []struct{ name, interval string }{{"hourly", "3600"}, {"raw", "t.interval"}} {
			where, args := f.where(iface, f.From, to)
			q := "SELECT " + fmt.Sprintf(rowColumns, tbl.interval) + " FROM " + tbl.name + " t JOIN streams s ON s.id = t.stream_id WHERE " + where + " ORDER BY t.time, t.stream_id"
			if f.Limit > 0 {
				if len(out) >= f.Limit {
					return nil
				}
				q += " LIMIT ?"
				args = append(args, f.Limit-len(out))
			}
			if out, err = appendRows(ctx, tx, out, f.Interface, q, args); err != nil {
				return fmt.Errorf("%s rows: %w", tbl.name, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", f.Interface, err)
	}
	return out, nil
}

func appendRows(ctx context.Context, tx *sql.Tx, out []Row, iface, q string, args []any) ([]Row, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	var hist []byte
	for rows.Next() {
		r := Row{Interface: iface}
		if err := rows.Scan(&r.Time, &r.Interval, &r.Side, &r.Application, &r.Node, &r.Group, &r.Version, &r.Method, &r.Address, &r.Consumer,
			&r.Success, &r.Failure, &r.Input, &r.Output, &r.ElapsedMs, &r.MaxElapsedMs, &r.Concurrent, &r.MaxConcurrent, &r.MaxInput, &r.MaxOutput, &hist); err != nil {
			return out, err
		}
		if len(hist) > 0 {
			r.Histogram = histogram.Sparse(hist)
			h, err := r.Histogram.Counts()
			if err != nil {
				return out, fmt.Errorf("row of %s at %d: %w", r.Node, r.Time, err)
			}
			r.Percentiles = percentilesOf(&h)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// read runs f in one read transaction, a single snapshot of the database.
func (s *Store) read(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return f(tx)
}

func ifaceOf(ctx context.Context, tx *sql.Tx, name string) (int64, bool, error) {
	var id int64
	err := tx.QueryRowContext(ctx, "SELECT id FROM interfaces WHERE name = ?", name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return id, err == nil, err
}

// SeriesQuery selects what Series sums.
type SeriesQuery struct {
	Interface string // required
	Method    string // "" = every method
	Side      string // "" = both, else SideProvider or SideConsumer
	Address   string // the provider's host:port; "" = every provider
	// Version and Group select one version and group ("" is none); nil =
	// all of them.
	Version, Group *string
	From, To       int64 // Unix seconds, required: the buckets holding From through the one holding To
	Step           int64 // bucket length in seconds, a multiple of 60; 0 = 60
}

// MaxBuckets is the most buckets one Series call returns.
const MaxBuckets = 10000

// Bucket sums the rows whose Time lies in (Time-step, Time].
type Bucket struct {
	Time          int64 `json:"time"`  // end of the bucket, Unix seconds, a multiple of the step
	Calls         int64 `json:"calls"` // Success + Failure
	Success       int64 `json:"success"`
	Failure       int64 `json:"failure"`
	Input         int64 `json:"input"`
	Output        int64 `json:"output"`
	ElapsedMs     int64 `json:"elapsed_ms"` // sum over the calls: average = ElapsedMs / Calls
	MaxElapsedMs  int64 `json:"max_elapsed_ms"`
	MaxConcurrent int64 `json:"max_concurrent"` // the most calls in flight at one node
	Percentiles
}

func (q SeriesQuery) check() (SeriesQuery, error) {
	if q.Step == 0 {
		q.Step = 60
	}
	if err := (Filter{Interface: q.Interface, Method: q.Method, Side: q.Side, Address: q.Address, From: q.From, To: q.To}).check(); err != nil {
		return q, err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadQuery, fmt.Sprintf(format, args...))
	}
	switch {
	case q.From == 0 || q.To == 0:
		return q, bad("from and to are required")
	case q.Step < 0 || q.Step%60 != 0 || q.Step > maxTime:
		return q, bad("step %d s is not a positive multiple of 60", q.Step)
	case (ceilTo(q.To, q.Step)-ceilTo(q.From, q.Step))/q.Step >= MaxBuckets:
		return q, bad("%d s in steps of %d s is more than %d buckets; take a larger step", q.To-q.From, q.Step, MaxBuckets)
	}
	return q, nil
}

// Series sums one service's calls per step for the console's charts,
// returning every bucket from the one holding From to the one holding To,
// empty ones included, with the percentiles of each bucket's calls.
// Recent data is at minute resolution; where the range is older than the
// raw retention the data is hourly, and each hour's sums fall in the
// bucket holding the hour's end (use a step of 3600 or more there).
//
// It reads the sums (sums.go) of the least detailed table that has the
// filter's columns; the rows only for a method and an address together.
func (s *Store) Series(ctx context.Context, q SeriesQuery) ([]Bucket, error) {
	q, err := q.check()
	if err != nil {
		return nil, err
	}
	first := ceilTo(q.From, q.Step)
	last := ceilTo(q.To, q.Step)
	out := make([]Bucket, (last-first)/q.Step+1)
	for i := range out {
		out[i].Time = first + int64(i)*q.Step
	}
	sc := scope{side: q.Side, method: q.Method, version: q.Version, group: q.Group, address: q.Address,
		from: first - q.Step + minute, to: last, within: q.Step}
	err = s.read(ctx, func(tx *sql.Tx) error {
		iface, ok, err := ifaceOf(ctx, tx, q.Interface)
		if err != nil || !ok {
			return err
		}
		sc.iface = iface
		src := sourceFor(sc.columns()...)
		from, args := src.selectFrom(sc, fmt.Sprintf("(%[1]s + %[2]d - 1) / %[2]d * %[2]d", src.expr("time"), q.Step), src.partialSums(false))
		sel := fmt.Sprintf(`SELECT g, SUM(success), SUM(failure), SUM(input), SUM(output), SUM(elapsed), MAX(max_elapsed), MAX(max_concurrent), %s
			FROM (%s) GROUP BY g`, concatHistograms("histogram"), from)
		rows, err := tx.QueryContext(ctx, sel, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		var hist []byte
		for rows.Next() {
			var b Bucket
			if err := rows.Scan(&b.Time, &b.Success, &b.Failure, &b.Input, &b.Output, &b.ElapsedMs, &b.MaxElapsedMs, &b.MaxConcurrent, &hist); err != nil {
				return err
			}
			var h histogram.Counts
			if err := h.AddSparse(histogram.Sparse(hist)); err != nil {
				return fmt.Errorf("bucket %d: %w", b.Time, err)
			}
			b.Calls = b.Success + b.Failure
			b.Percentiles = percentilesOf(&h)
			if i := (b.Time - first) / q.Step; i >= 0 && i < int64(len(out)) {
				out[i] = b
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("series %s: %w", q.Interface, err)
	}
	return out, nil
}

// ceilTo rounds t up to a multiple of step.
func ceilTo(t, step int64) int64 { return (t + step - 1) / step * step }
