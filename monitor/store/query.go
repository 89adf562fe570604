package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
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
	From, To  int64  // Unix seconds, inclusive, of the rows' Time (interval end); 0 = unbounded
	Limit     int    // most rows returned, the oldest first; 0 = all
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

// where returns the conditions on t (raw, hourly, minute_sums or hour_sums)
// and s (streams, when joined) that f asks for, and their arguments.
func (f Filter) where(iface, from, to int64, joined bool) (string, []any) {
	conds := []string{"t.interface_id = ?", "t.time >= ?", "t.time <= ?"}
	args := []any{iface, from, to}
	col := "t."
	if joined {
		col = "s."
	}
	if f.Side != "" {
		conds = append(conds, col+"side = ?")
		args = append(args, f.Side)
	}
	if f.Method != "" {
		conds = append(conds, col+"method = ?")
		args = append(args, f.Method)
	}
	if f.Address != "" {
		conds = append(conds, "s.address = ?")
		args = append(args, f.Address)
	}
	return strings.Join(conds, " AND "), args
}

const rowColumns = `t.time, %s, s.side, s.application, s.node, s.grp, s.version, s.method, s.address, s.consumer,
	t.success, t.failure, t.input, t.output, t.elapsed, t.max_elapsed, t.concurrent, t.max_concurrent, t.max_input, t.max_output`

// Query returns the rows f selects, oldest first: hourly rows (Interval
// 3600, Time the end of the hour) where the range is older than the raw
// retention, then the rows as reported. Each call made is in exactly one
// row, so the sum of Success+Failure over the result is the number of calls
// whose interval (or hour, for hourly rows) ended within From..To.
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
			where, args := f.where(iface, f.From, to, true)
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
	for rows.Next() {
		r := Row{Interface: iface}
		if err := rows.Scan(&r.Time, &r.Interval, &r.Side, &r.Application, &r.Node, &r.Group, &r.Version, &r.Method, &r.Address, &r.Consumer,
			&r.Success, &r.Failure, &r.Input, &r.Output, &r.ElapsedMs, &r.MaxElapsedMs, &r.Concurrent, &r.MaxConcurrent, &r.MaxInput, &r.MaxOutput); err != nil {
			return out, err
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
	From, To  int64  // Unix seconds, required: the buckets holding From through the one holding To
	Step      int64  // bucket length in seconds, a multiple of 60; 0 = 60
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
// empty ones included. Recent data is at minute resolution; where the
// range is older than the raw retention the data is hourly, and each
// hour's sums fall in the bucket holding the hour's end (use a step of
// 3600 or more there).
//
// Without an address it reads the per-minute and per-hour sums kept per
// interface, side and method; with one it sums that provider's rows.
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
	f := Filter{Method: q.Method, Side: q.Side, Address: q.Address}
	tables := []string{"hour_sums t", "minute_sums t"}
	if q.Address != "" {
		tables = []string{"hourly t JOIN streams s ON s.id = t.stream_id", "raw t JOIN streams s ON s.id = t.stream_id"}
	}
	err = s.read(ctx, func(tx *sql.Tx) error {
		iface, ok, err := ifaceOf(ctx, tx, q.Interface)
		if err != nil || !ok {
			return err
		}
		for _, tbl := range tables {
			// Whole buckets: rows in (first-step, last].
			where, args := f.where(iface, first-q.Step+1, last, q.Address != "")
			sel := fmt.Sprintf(`SELECT (t.time + %[1]d - 1) / %[1]d * %[1]d AS b, SUM(t.success), SUM(t.failure), SUM(t.input), SUM(t.output),
				SUM(t.elapsed), MAX(t.max_elapsed), MAX(t.max_concurrent) FROM %s WHERE %s GROUP BY b`, q.Step, tbl, where)
			if err := addBuckets(ctx, tx, out, first, q.Step, sel, args); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("series %s: %w", q.Interface, err)
	}
	return out, nil
}

func addBuckets(ctx context.Context, tx *sql.Tx, out []Bucket, first, step int64, q string, args []any) error {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var t int64
		var v Bucket
		if err := rows.Scan(&t, &v.Success, &v.Failure, &v.Input, &v.Output, &v.ElapsedMs, &v.MaxElapsedMs, &v.MaxConcurrent); err != nil {
			return err
		}
		b := &out[(t-first)/step]
		b.Success += v.Success
		b.Failure += v.Failure
		b.Calls += v.Success + v.Failure
		b.Input += v.Input
		b.Output += v.Output
		b.ElapsedMs += v.ElapsedMs
		b.MaxElapsedMs = max(b.MaxElapsedMs, v.MaxElapsedMs)
		b.MaxConcurrent = max(b.MaxConcurrent, v.MaxConcurrent)
	}
	return rows.Err()
}

// ceilTo rounds t up to a multiple of step.
func ceilTo(t, step int64) int64 { return (t + step - 1) / step * step }
