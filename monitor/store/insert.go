package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// streamKey is what identifies a stream of rows; with the time it is the
// key under which an interval is stored once.
type streamKey struct {
	iface                                                 int64
	side, method, node, group, version, address, consumer string
}

// writeStmts are prepared once on the single write connection.
type writeStmts struct {
	selIface, insIface, selStream, insStream, setLast, addMinute *sql.Stmt
	insRaw                                                       map[int]*sql.Stmt // by rows per statement, prepared when first needed
}

// chunk is the most rows one INSERT into raw carries: go-sqlite3 binds and
// runs a query's arguments in one cgo call, which at 14 values a row is
// most of the cost of storing it one statement per row.
const chunk = 64

const rawColumns = 14

func (w *writeStmts) prepare(ctx context.Context, db *sql.DB) error {
	for _, p := range []struct {
		dst **sql.Stmt
		sql string
	}{
		{&w.selIface, `SELECT id FROM interfaces WHERE name = ?`},
		{&w.insIface, `INSERT INTO interfaces (name) VALUES (?)`},
		{&w.selStream, `SELECT id, last FROM streams WHERE interface_id = ? AND side = ? AND method = ? AND node = ? AND grp = ? AND version = ? AND address = ? AND consumer = ?`},
		{&w.insStream, `INSERT INTO streams (interface_id, side, method, node, grp, version, address, consumer, application, last) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&w.setLast, `UPDATE streams SET last = ? WHERE id = ?`},
		{&w.addMinute, `INSERT INTO minute_sums (interface_id, time, side, method, success, failure, input, output, elapsed, max_elapsed, max_concurrent)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (interface_id, time, side, method) DO UPDATE SET
				success = success + excluded.success, failure = failure + excluded.failure,
				input = input + excluded.input, output = output + excluded.output,
				elapsed = elapsed + excluded.elapsed, max_elapsed = max(max_elapsed, excluded.max_elapsed),
				max_concurrent = max(max_concurrent, excluded.max_concurrent)`},
	} {
		st, err := db.PrepareContext(ctx, p.sql)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", p.sql, err)
		}
		*p.dst = st
	}
	w.insRaw = map[int]*sql.Stmt{}
	return nil
}

// rawInsert returns the statement inserting n rows, which names the rows
// it stored (a row already stored is skipped, ON CONFLICT DO NOTHING).
func (w *writeStmts) rawInsert(ctx context.Context, db *sql.DB, n int) (*sql.Stmt, error) {
	if st := w.insRaw[n]; st != nil {
		return st, nil
	}
	var b strings.Builder
	b.WriteString(`INSERT INTO raw (interface_id, time, stream_id, interval, success, failure, input, output, elapsed, max_elapsed, concurrent, max_concurrent, max_input, max_output) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
	}
	b.WriteString(" ON CONFLICT DO NOTHING RETURNING stream_id, time")
	st, err := db.PrepareContext(ctx, b.String())
	if err != nil {
		return nil, fmt.Errorf("prepare the insert of %d rows: %w", n, err)
	}
	w.insRaw[n] = st
	return st, nil
}

func (w *writeStmts) close() {
	for _, st := range []*sql.Stmt{w.selIface, w.insIface, w.selStream, w.insStream, w.setLast, w.addMinute} {
		if st != nil {
			st.Close()
		}
	}
	for _, st := range w.insRaw {
		st.Close()
	}
}

// sumKey is one row of minute_sums or hour_sums.
type sumKey struct {
	iface, time  int64
	side, method string
}

type sums struct {
	success, failure, input, output, elapsed, maxElapsed, maxConcurrent int64
}

func (s *sums) add(r *Row) {
	s.success += r.Success
	s.failure += r.Failure
	s.input += r.Input
	s.output += r.Output
	s.elapsed += r.ElapsedMs
	s.maxElapsed = max(s.maxElapsed, r.MaxElapsedMs)
	s.maxConcurrent = max(s.maxConcurrent, r.MaxConcurrent)
}

// minuteEnd is the end of the minute holding an interval that ended at t:
// an interval ending 12:00:00 belongs to the minute 11:59-12:00.
func minuteEnd(t int64) int64 { return (t + 59) / 60 * 60 }

// hourEnd is the same for hours.
func hourEnd(t int64) int64 { return (t + hour - 1) / hour * hour }

// Insert stores rows in one transaction and returns how many were new.
// Rows already stored (same stream and time) are ignored and counted in
// Stats().Duplicates; rows for an hour already folded into hourly rows are
// refused and counted in Stats().Stale. A batch holding an invalid row (see
// Row.Validate) is refused whole, before anything is written.
func (s *Store) Insert(ctx context.Context, rows []Row) (int, error) {
	start := time.Now()
	for i := range rows {
		if err := rows[i].Validate(); err != nil {
			return 0, fmt.Errorf("insert row %d of %d: %w", i, len(rows), err)
		}
	}
	if len(rows) == 0 {
		return 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, dups, stale, err := s.insert(ctx, rows)
	if err != nil {
		return 0, fmt.Errorf("insert %d rows: %w", len(rows), err)
	}
	took := time.Since(start)
	s.count(func(st *Stats) {
		st.RowsStored += int64(stored)
		st.Duplicates += int64(dups)
		st.Stale += int64(stale)
		st.InsertBatches++
		st.InsertTime += took
		st.LastInsertTime = took
		st.LastInsertRows = len(rows)
	})
	return stored, nil
}

// insert runs with s.mu held.
func (s *Store) insert(ctx context.Context, rows []Row) (stored, dups, stale int, err error) {
	// The transaction and its statements get no cancellable context:
	// database/sql and go-sqlite3 would start a goroutine per statement to
	// watch it. The loop checks ctx between chunks instead.
	bg := context.Background()
	// Prepare the INSERTs this batch needs before the transaction takes
	// the only write connection.
	fresh := 0
	for i := range rows {
		if rows[i].Time > s.rolledThrough {
			fresh++
		}
	}
	for _, n := range []int{min(fresh, chunk), fresh % chunk} {
		if n > 0 {
			if _, err := s.stmts.rawInsert(bg, s.wdb, n); err != nil {
				return 0, 0, 0, err
			}
		}
	}
	tx, err := s.wdb.BeginTx(bg, nil)
	if err != nil {
		return 0, 0, 0, err
	}
	defer tx.Rollback()
	w := &writeTx{
		selIface:  tx.Stmt(s.stmts.selIface),
		insIface:  tx.Stmt(s.stmts.insIface),
		selStream: tx.Stmt(s.stmts.selStream),
		insStream: tx.Stmt(s.stmts.insStream),
		setLast:   tx.Stmt(s.stmts.setLast),
		ifaces:    s.ifaces,
		streams:   s.streams,
		newIfaces: map[string]int64{},
		newKeys:   map[streamKey]*stream{},
	}
	defer w.discard()

	// Resolve every row's interface and stream first, dropping the stale.
	type pending struct {
		r             *Row
		iface, stream int64
	}
	todo := make([]pending, 0, len(rows))
	for i := range rows {
		r := &rows[i]
		if r.Time <= s.rolledThrough {
			stale++
			continue
		}
		iface, err := w.ifaceID(bg, r.Interface)
		if err != nil {
			return 0, 0, 0, err
		}
		stream, err := w.streamID(bg, streamKey{iface, r.Side, r.Method, r.Node, r.Group, r.Version, r.Address, r.Consumer}, r.Application, r.Time)
		if err != nil {
			return 0, 0, 0, err
		}
		todo = append(todo, pending{r, iface, stream})
	}

	minutes := map[sumKey]*sums{}
	args := make([]any, 0, chunk*rawColumns)
	type rowID struct{ stream, time int64 }
	var got []rowID
	for len(todo) > 0 {
		if err := ctx.Err(); err != nil {
			return 0, 0, 0, err
		}
		part := todo[:min(chunk, len(todo))]
		todo = todo[len(part):]
		args = args[:0]
		for _, p := range part {
			r := p.r
			args = append(args, p.iface, r.Time, p.stream, r.Interval, r.Success, r.Failure, r.Input, r.Output,
				r.ElapsedMs, r.MaxElapsedMs, r.Concurrent, r.MaxConcurrent, r.MaxInput, r.MaxOutput)
		}
		res, err := tx.Stmt(s.stmts.insRaw[len(part)]).QueryContext(bg, args...)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("store rows: %w", err)
		}
		got = got[:0]
		for res.Next() {
			var g rowID
			if err := res.Scan(&g.stream, &g.time); err != nil {
				res.Close()
				return 0, 0, 0, fmt.Errorf("store rows: %w", err)
			}
			got = append(got, g)
		}
		if err := res.Close(); err != nil {
			return 0, 0, 0, fmt.Errorf("store rows: %w", err)
		}
		if err := res.Err(); err != nil {
			return 0, 0, 0, fmt.Errorf("store rows: %w", err)
		}
		for _, p := range part {
			if len(got) < len(part) {
				// Some rows were already stored: count only those the
				// statement names, each once (a batch may repeat a row).
				i := slices.Index(got, rowID{p.stream, p.r.Time})
				if i < 0 {
					dups++
					continue
				}
				got[i] = rowID{}
			}
			stored++
			k := sumKey{p.iface, minuteEnd(p.r.Time), p.r.Side, p.r.Method}
			sm := minutes[k]
			if sm == nil {
				sm = &sums{}
				minutes[k] = sm
			}
			sm.add(p.r)
		}
	}
	addMinute := tx.Stmt(s.stmts.addMinute)
	for k, v := range minutes {
		if _, err := addMinute.ExecContext(bg, k.iface, k.time, k.side, k.method,
			v.success, v.failure, v.input, v.output, v.elapsed, v.maxElapsed, v.maxConcurrent); err != nil {
			return 0, 0, 0, fmt.Errorf("add minute sums: %w", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, 0, err
	}
	w.apply()
	return stored, dups, stale, nil
}

// stream is a cached row of streams.
type stream struct {
	id   int64
	last int64 // its last column as committed
	next int64 // last as the transaction in progress set it; 0 = unchanged
}

// writeTx resolves interface and stream ids inside one write transaction.
// What it creates or changes reaches the Store's caches only when the
// transaction commits (apply), so a rolled-back batch leaves them true.
type writeTx struct {
	selIface, insIface, selStream, insStream, setLast *sql.Stmt

	ifaces    map[string]int64 // committed; read only here
	streams   map[streamKey]*stream
	newIfaces map[string]int64 // created by this transaction
	newKeys   map[streamKey]*stream
	raised    []*stream // streams whose next is set
	applied   bool
}

func (w *writeTx) ifaceID(ctx context.Context, name string) (int64, error) {
	if id, ok := w.ifaces[name]; ok {
		return id, nil
	}
	if id, ok := w.newIfaces[name]; ok {
		return id, nil
	}
	var id int64
	err := w.selIface.QueryRowContext(ctx, name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		var res sql.Result
		if res, err = w.insIface.ExecContext(ctx, name); err == nil {
			id, err = res.LastInsertId()
		}
	}
	if err != nil {
		return 0, fmt.Errorf("interface %s: %w", name, err)
	}
	w.newIfaces[name] = id
	return id, nil
}

// streamID returns the id of k's stream, creating it, and makes sure its
// last column covers t: one UPDATE per stream and hour, not per row.
func (w *writeTx) streamID(ctx context.Context, k streamKey, application string, t int64) (int64, error) {
	st, ok := w.streams[k]
	if !ok {
		st, ok = w.newKeys[k]
	}
	if !ok {
		st = &stream{}
		err := w.selStream.QueryRowContext(ctx, k.iface, k.side, k.method, k.node, k.group, k.version, k.address, k.consumer).Scan(&st.id, &st.last)
		if errors.Is(err, sql.ErrNoRows) {
			var res sql.Result
			st.last = hourEnd(t)
			if res, err = w.insStream.ExecContext(ctx, k.iface, k.side, k.method, k.node, k.group, k.version, k.address, k.consumer, application, st.last); err == nil {
				st.id, err = res.LastInsertId()
			}
		}
		if err != nil {
			return 0, fmt.Errorf("stream %s %s of %s: %w", k.side, k.method, k.node, err)
		}
		w.newKeys[k] = st
	}
	if h := hourEnd(t); h > max(st.last, st.next) {
		if _, err := w.setLast.ExecContext(ctx, h, st.id); err != nil {
			return 0, fmt.Errorf("stream %s %s of %s: %w", k.side, k.method, k.node, err)
		}
		if st.next == 0 {
			w.raised = append(w.raised, st)
		}
		st.next = h
	}
	return st.id, nil
}

// apply records in the caches what the committed transaction did.
func (w *writeTx) apply() {
	for k, v := range w.newIfaces {
		w.ifaces[k] = v
	}
	for k, v := range w.newKeys {
		w.streams[k] = v
	}
	for _, st := range w.raised {
		st.last = st.next
	}
	w.applied = true
}

// discard forgets what a transaction that did not commit set.
func (w *writeTx) discard() {
	for _, st := range w.raised {
		st.next = 0
	}
}
