package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/dubbo-lab/dubbo/node/stats/histogram"
)

// streamKey is what identifies a stream of rows; with the time it is the
// key under which an interval is stored once.
type streamKey struct {
	iface                                                 int64
	side, method, node, group, version, address, consumer string
}

// writeStmts are prepared once on the single write connection.
type writeStmts struct {
	selIface, insIface, selStream, insStream, setLast, changes *sql.Stmt
	// insRaw[k] inserts 1<<k rows (a batch is cut into such pieces);
	// insRawReturning[k] also names the rows it stored.
	insRaw, insRawReturning [chunkBits + 1]*sql.Stmt
	// addSums[t][k] adds 1<<k sums to sumTables[t].
	addSums [][chunkBits + 1]*sql.Stmt
}

// chunkBits sets the most rows one INSERT into raw carries, 1<<chunkBits.
// Inserts run as queries: go-sqlite3 binds and runs a query's arguments in
// one cgo call (an Exec binds each value in its own), which at 14 values a
// row was most of the cost of storing rows one statement each.
const chunkBits = 8

const rawColumns = 15

func (w *writeStmts) prepare(ctx context.Context, db *sql.DB) error {
	type stmt struct {
		dst **sql.Stmt
		sql string
	}
	list := []stmt{
		{&w.selIface, `SELECT id, rolled_through FROM interfaces WHERE name = ?`},
		{&w.insIface, `INSERT INTO interfaces (name, rolled_through) VALUES (?, 0)`},
		{&w.selStream, `SELECT id, last FROM streams WHERE interface_id = ? AND side = ? AND method = ? AND node = ? AND grp = ? AND version = ? AND address = ? AND consumer = ?`},
		{&w.insStream, `INSERT INTO streams (interface_id, side, method, node, grp, version, address, consumer, application, last) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&w.setLast, `UPDATE streams SET last = ? WHERE id = ?`},
		{&w.changes, `SELECT total_changes()`},
	}
	w.addSums = make([][chunkBits + 1]*sql.Stmt, len(sumTables))
	for k := range chunkBits + 1 {
		list = append(list, stmt{&w.insRaw[k], rawInsert(1<<k, false)}, stmt{&w.insRawReturning[k], rawInsert(1<<k, true)})
		for t, tbl := range sumTables {
			list = append(list, stmt{&w.addSums[t][k], sumsUpsert(tbl, 1<<k)})
		}
	}
	for _, p := range list {
		st, err := db.PrepareContext(ctx, p.sql)
		if err != nil {
			return fmt.Errorf("prepare %.60q: %w", p.sql, err)
		}
		*p.dst = st
	}
	return nil
}

// rawInsert is the INSERT of n rows; a row already stored is skipped (ON
// CONFLICT DO NOTHING). With returning, it names the rows it stored.
func rawInsert(n int, returning bool) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO raw (interface_id, time, stream_id, interval, success, failure, input, output, elapsed, max_elapsed, concurrent, max_concurrent, max_input, max_output, histogram) VALUES `)
	values(&b, n, rawColumns)
	b.WriteString(" ON CONFLICT DO NOTHING")
	if returning {
		b.WriteString(" RETURNING stream_id, time")
	}
	return b.String()
}

// sumsUpsert is the statement that adds n sums to tbl: a new row per sum,
// or added to the row already there (counts summed, maxima kept,
// histograms merged).
func sumsUpsert(tbl source, n int) string {
	key := "interface_id, span, time, " + strings.Join(tbl.cols, ", ")
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s (%s, success, failure, input, output, elapsed, max_elapsed, max_concurrent, last, histogram) VALUES ", tbl.table, key)
	values(&b, n, 3+len(tbl.cols)+len(sumColumns))
	fmt.Fprintf(&b, ` ON CONFLICT (%s) DO UPDATE SET success = success + excluded.success, failure = failure + excluded.failure,
		input = input + excluded.input, output = output + excluded.output, elapsed = elapsed + excluded.elapsed,
		max_elapsed = max(max_elapsed, excluded.max_elapsed), max_concurrent = max(max_concurrent, excluded.max_concurrent),
		last = max(last, excluded.last), histogram = dubbo_histogram(histogram, excluded.histogram)`, key)
	return b.String()
}

// sumColumns are the figures of a sum, after its key.
var sumColumns = [...]string{"success", "failure", "input", "output", "elapsed", "max_elapsed", "max_concurrent", "last", "histogram"}

// values writes n tuples of cols placeholders.
func values(b *strings.Builder, n, cols int) {
	tuple := "(" + strings.TrimSuffix(strings.Repeat("?,", cols), ",") + ")"
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(tuple)
	}
}

func (w *writeStmts) close() {
	all := []*sql.Stmt{w.selIface, w.insIface, w.selStream, w.insStream, w.setLast, w.changes}
	all = append(all, w.insRaw[:]...)
	all = append(all, w.insRawReturning[:]...)
	for _, sts := range w.addSums {
		all = append(all, sts[:]...)
	}
	for _, st := range all {
		if st != nil {
			st.Close()
		}
	}
}

// rowID is the key of a raw row within its interface.
type rowID struct{ stream, time int64 }

// hourEnd is the end of the hour holding an interval that ended at t: an
// interval ending 12:00:00 belongs to the hour 11:00-12:00.
func hourEnd(t int64) int64 { return ceilTo(t, hour) }

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
	// Most batches are all new: insert them without asking which rows were
	// stored. If some were not, roll back and insert again, learning which
	// (RETURNING costs about a sixth of the time of a batch).
	stored, dups, stale, err := s.insert(ctx, rows, false)
	if errors.Is(err, errNotAllNew) {
		stored, dups, stale, err = s.insert(ctx, rows, true)
	}
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

// errNotAllNew is insert's answer when, told that every row is new, it
// finds some already stored; it has rolled back.
var errNotAllNew = errors.New("some rows were already stored")

// insert runs with s.mu held. With exact, it learns which rows were
// already stored; without, it fails with errNotAllNew if any was.
func (s *Store) insert(ctx context.Context, rows []Row, exact bool) (stored, dups, stale int, err error) {
	// The transaction and its statements get no cancellable context:
	// database/sql and go-sqlite3 would start a goroutine per statement to
	// watch it. The steps check ctx between statements instead.
	bg := context.Background()
	tx, err := s.wdb.BeginTx(bg, nil)
	if err != nil {
		return 0, 0, 0, err
	}
	defer tx.Rollback()
	w := s.newWriteTx(tx)
	defer w.discard()
	todo, stale, err := w.resolve(bg, rows)
	if err != nil {
		return 0, 0, 0, err
	}
	changes := tx.Stmt(s.stmts.changes)
	var before int64
	if !exact {
		if before, err = totalChanges(changes); err != nil {
			return 0, 0, 0, err
		}
	}
	raw := rawWriter{tx: tx, stmts: &s.stmts, exact: exact, sums: newSumsOf()}
	if err := raw.store(ctx, todo); err != nil {
		return 0, 0, 0, err
	}
	if !exact {
		after, err := totalChanges(changes)
		if err != nil {
			return 0, 0, 0, err
		}
		if after-before != int64(raw.stored) {
			return 0, 0, 0, errNotAllNew
		}
	}
	if err := raw.sums.write(tx, &s.stmts); err != nil {
		return 0, 0, 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, 0, err
	}
	w.apply()
	return raw.stored, raw.dups, stale, nil
}

// totalChanges is SQLite's count of rows changed on the connection.
func totalChanges(st *sql.Stmt) (int64, error) {
	var n int64
	err := st.QueryRowContext(context.Background()).Scan(&n)
	return n, err
}

// rawWriter stores the rows of one transaction into raw, in pieces of 1<<k
// rows, counting what it stored and summing it.
type rawWriter struct {
	tx    *sql.Tx
	stmts *writeStmts
	exact bool // learn which rows were already stored (RETURNING)

	stored, dups int
	sums         *sumsOf

	args []any   // one piece's values, reused
	got  []rowID // the rows a piece stored, reused
}

// store inserts todo, checking ctx between pieces.
func (w *rawWriter) store(ctx context.Context, todo []pending) error {
	w.args = make([]any, 0, rawColumns<<chunkBits)
	for len(todo) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		// The largest piece of 1<<k rows that fits.
		k := min(bits.Len(uint(len(todo)))-1, chunkBits)
		part := todo[:1<<k]
		todo = todo[len(part):]
		if err := w.insertPiece(k, part); err != nil {
			return fmt.Errorf("store rows: %w", err)
		}
		w.count(part)
	}
	return nil
}

// insertPiece runs the INSERT of part, 1<<k rows, and with exact keeps the
// rows it names as stored.
func (w *rawWriter) insertPiece(k int, part []pending) error {
	w.args = w.args[:0]
	for _, p := range part {
		r := p.r
		w.args = append(w.args, p.iface, r.Time, p.stream, r.Interval, r.Success, r.Failure, r.Input, r.Output,
			r.ElapsedMs, r.MaxElapsedMs, r.Concurrent, r.MaxConcurrent, r.MaxInput, r.MaxOutput, blob(r.Histogram))
	}
	st := w.stmts.insRaw[k]
	if w.exact {
		st = w.stmts.insRawReturning[k]
	}
	res, err := w.tx.Stmt(st).QueryContext(context.Background(), w.args...)
	if err != nil {
		return err
	}
	w.got = w.got[:0]
	for res.Next() {
		var g rowID
		if err := res.Scan(&g.stream, &g.time); err != nil {
			res.Close()
			return err
		}
		w.got = append(w.got, g)
	}
	if err := res.Close(); err != nil {
		return err
	}
	return res.Err()
}

// count adds the rows of part that were stored to the counts and the
// sums.
func (w *rawWriter) count(part []pending) {
	for _, p := range part {
		if w.exact && len(w.got) < len(part) {
			// Count only the rows the statement names, each once (a
			// batch may repeat a row).
			i := slices.Index(w.got, rowID{p.stream, p.r.Time})
			if i < 0 {
				w.dups++
				continue
			}
			w.got[i] = rowID{}
		}
		w.stored++
		w.sums.add(p.iface, p.r)
	}
}

// blob is a histogram as a column value: NULL when there is none.
func blob(h histogram.Sparse) any {
	if h == "" {
		return nil
	}
	return []byte(h)
}

// sumsOf adds up the rows of a batch into the sums they change.
type sumsOf struct {
	byKey map[sumKey]*sumSpans
	order []sumKey // in the order they came, so that writes are repeatable
}

// sumKey is a sum's key but for its span and time.
type sumKey struct {
	table int
	iface int64
	cols  [6]string // the table's key columns, in its order
}

// sumSpans are the sums of one key the batch changes: a minute, an hour
// and a day, more when the batch spans several.
type sumSpans []*sum

type sum struct {
	span, time                                                    int64
	success, failure, input, output, elapsed, maxElapsed, maxConc int64
	last                                                          int64
	hist                                                          []byte // the rows' histograms concatenated: their sum (package histogram)
}

func newSumsOf() *sumsOf { return &sumsOf{byKey: map[sumKey]*sumSpans{}} }

// add adds r, of interface iface, to its sums in every table and span.
func (s *sumsOf) add(iface int64, r *Row) {
	for t, tbl := range sumTables {
		k := sumKey{table: t, iface: iface}
		for i, c := range tbl.cols {
			k.cols[i] = column(r, c)
		}
		ss := s.byKey[k]
		if ss == nil {
			ss = &sumSpans{}
			s.byKey[k] = ss
			s.order = append(s.order, k)
		}
		for _, span := range spans {
			ss.of(span, ceilTo(r.Time, span)).add(r)
		}
	}
}

func (ss *sumSpans) of(span, time int64) *sum {
	for _, x := range *ss {
		if x.span == span && x.time == time {
			return x
		}
	}
	x := &sum{span: span, time: time}
	*ss = append(*ss, x)
	return x
}

func (x *sum) add(r *Row) {
	x.success += r.Success
	x.failure += r.Failure
	x.input += r.Input
	x.output += r.Output
	x.elapsed += r.ElapsedMs
	x.maxElapsed = max(x.maxElapsed, r.MaxElapsedMs)
	x.maxConc = max(x.maxConc, r.MaxConcurrent)
	x.last = max(x.last, r.Time)
	x.hist = append(x.hist, r.Histogram...)
}

// write adds the sums to their tables, in pieces of 1<<k sums.
func (s *sumsOf) write(tx *sql.Tx, stmts *writeStmts) error {
	for t, tbl := range sumTables {
		var args []any
		n := 0
		// Pieces run as queries, as the rows do: one cgo call binds them.
		flush := func() error {
			per := 3 + len(tbl.cols) + len(sumColumns)
			for n > 0 {
				k := min(bits.Len(uint(n))-1, chunkBits)
				res, err := tx.Stmt(stmts.addSums[t][k]).QueryContext(context.Background(), args[:per<<k]...)
				if err == nil {
					res.Next() // runs it
					err = errors.Join(res.Err(), res.Close())
				}
				if err != nil {
					return fmt.Errorf("add %s: %w", tbl.table, err)
				}
				args, n = args[per<<k:], n-(1<<k)
			}
			return nil
		}
		for _, k := range s.order {
			if k.table != t {
				continue
			}
			for _, x := range *s.byKey[k] {
				args = append(args, k.iface, x.span, x.time)
				for i := range tbl.cols {
					args = append(args, k.cols[i])
				}
				var h histogram.Counts
				if err := h.AddSparse(histogram.Sparse(x.hist)); err != nil {
					return err // the rows were validated: not reached
				}
				args = append(args, x.success, x.failure, x.input, x.output, x.elapsed, x.maxElapsed, x.maxConc, x.last, blob(h.Sparse()))
				n++
			}
		}
		if err := flush(); err != nil {
			return err
		}
	}
	return nil
}

// pending is a row to insert, with its ids.
type pending struct {
	r             *Row
	iface, stream int64
}

// iface is a cached row of interfaces.
type iface struct {
	id     int64
	rolled int64 // rolled_through: its rows up to this time are folded into hourly rows
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

	ifaces    map[string]*iface // committed; read only here
	streams   map[streamKey]*stream
	newIfaces map[string]*iface // read or created by this transaction
	newKeys   map[streamKey]*stream
	raised    []*stream // streams whose next is set
}

// newWriteTx resolves ids inside tx.
func (s *Store) newWriteTx(tx *sql.Tx) *writeTx {
	return &writeTx{
		selIface:  tx.Stmt(s.stmts.selIface),
		insIface:  tx.Stmt(s.stmts.insIface),
		selStream: tx.Stmt(s.stmts.selStream),
		insStream: tx.Stmt(s.stmts.insStream),
		setLast:   tx.Stmt(s.stmts.setLast),
		ifaces:    s.ifaces,
		streams:   s.streams,
		newIfaces: map[string]*iface{},
		newKeys:   map[streamKey]*stream{},
	}
}

// resolve finds every row's interface and stream, creating them, and
// drops the rows of an hour already folded into hourly rows (stale).
func (w *writeTx) resolve(ctx context.Context, rows []Row) (todo []pending, stale int, err error) {
	todo = make([]pending, 0, len(rows))
	for i := range rows {
		r := &rows[i]
		ifc, err := w.iface(ctx, r.Interface)
		if err != nil {
			return nil, 0, err
		}
		if r.Time <= ifc.rolled {
			stale++
			continue
		}
		stream, err := w.streamID(ctx, streamKey{ifc.id, r.Side, r.Method, r.Node, r.Group, r.Version, r.Address, r.Consumer}, r.Application, r.Time)
		if err != nil {
			return nil, 0, err
		}
		todo = append(todo, pending{r, ifc.id, stream})
	}
	return todo, stale, nil
}

func (w *writeTx) iface(ctx context.Context, name string) (*iface, error) {
	if ifc, ok := w.ifaces[name]; ok {
		return ifc, nil
	}
	if ifc, ok := w.newIfaces[name]; ok {
		return ifc, nil
	}
	ifc := &iface{}
	err := w.selIface.QueryRowContext(ctx, name).Scan(&ifc.id, &ifc.rolled)
	if errors.Is(err, sql.ErrNoRows) {
		var res sql.Result
		if res, err = w.insIface.ExecContext(ctx, name); err == nil {
			ifc.id, err = res.LastInsertId()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("interface %s: %w", name, err)
	}
	w.newIfaces[name] = ifc
	return ifc, nil
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
		st.next = 0
	}
	w.raised = nil
}

// discard forgets what a transaction that did not commit set.
func (w *writeTx) discard() {
	for _, st := range w.raised {
		st.next = 0
	}
}
