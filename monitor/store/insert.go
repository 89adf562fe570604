package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
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

// sumKey is what identifies a key of sums (sum_keys): a level, and the
// columns it has (iface is 0 across interfaces).
type sumKey struct {
	level int
	iface int64
	cols  [len(keyColumns)]string // empty where the level has not the column
}

// sumKeyOf is the key of r's sums at level l, of interface iface.
func sumKeyOf(l *level, iface int64, r *Row) sumKey {
	k := sumKey{level: l.id, iface: iface}
	if l.across {
		k.iface = 0
	}
	for i, c := range keyColumns {
		if slices.Contains(l.cols, c) {
			k.cols[i] = column(r, c)
		}
	}
	return k
}

// args are the values of k's columns in sum_keys: level, interface_id,
// then keyColumns.
func (k sumKey) args() []any {
	args := []any{k.level, k.iface}
	for _, v := range k.cols {
		args = append(args, v)
	}
	return args
}

// writeStmts are prepared once on the single write connection.
type writeStmts struct {
	selIface, insIface, selStream, insStream, setStreamLast, selKey, insKey, setKeyLast, changes *sql.Stmt
	// insRaw[k] inserts 1<<k rows (a batch is cut into such pieces);
	// insRawReturning[k] also names the rows it stored.
	insRaw, insRawReturning [chunkBits + 1]*sql.Stmt
	// addSums[k] adds 1<<k sums.
	addSums [chunkBits + 1]*sql.Stmt
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
		{&w.selStream, `SELECT id, last, application FROM streams WHERE interface_id = ? AND side = ? AND method = ? AND node = ? AND grp = ? AND version = ? AND address = ? AND consumer = ?`},
		{&w.insStream, `INSERT INTO streams (interface_id, side, method, node, grp, version, address, consumer, application, last) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&w.setStreamLast, `UPDATE streams SET last = ? WHERE id = ?`},
		{&w.selKey, `SELECT id, last FROM sum_keys WHERE level = ? AND interface_id = ? AND ` + strings.Join(keyColumns[:], " = ? AND ") + ` = ?`},
		{&w.insKey, `INSERT INTO sum_keys (level, interface_id, ` + strings.Join(keyColumns[:], ", ") + `, last) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&w.setKeyLast, `UPDATE sum_keys SET last = ? WHERE id = ?`},
		{&w.changes, `SELECT total_changes()`},
	}
	for k := range chunkBits + 1 {
		list = append(list, stmt{&w.insRaw[k], rawInsert(1<<k, false)}, stmt{&w.insRawReturning[k], rawInsert(1<<k, true)},
			stmt{&w.addSums[k], sumsUpsert(1 << k)})
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
	all := []*sql.Stmt{w.selIface, w.insIface, w.selStream, w.insStream, w.setStreamLast, w.selKey, w.insKey, w.setKeyLast, w.changes}
	all = append(all, w.insRaw[:]...)
	all = append(all, w.insRawReturning[:]...)
	all = append(all, w.addSums[:]...)
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
	raw := rawWriter{tx: tx, stmts: &s.stmts, exact: exact, sums: newBatchSums()}
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
	if err := raw.sums.write(tx, &s.stmts, s.sumsRolled); err != nil {
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
	sums         *batchSums

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
		w.args = append(w.args, p.iface, r.Time, p.stream.id, r.Interval, r.Success, r.Failure, r.Input, r.Output,
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
			i := slices.Index(w.got, rowID{p.stream.id, p.r.Time})
			if i < 0 {
				w.dups++
				continue
			}
			w.got[i] = rowID{}
		}
		w.stored++
		w.sums.add(p)
	}
}

// blob is a histogram as a column value: NULL when there is none.
func blob(h histogram.Sparse) any {
	if h == "" {
		return nil
	}
	return []byte(h)
}

// pending is a row to insert, with its interface and stream.
type pending struct {
	r      *Row
	iface  int64
	stream *stream
}

// iface is a cached row of interfaces.
type iface struct {
	id     int64
	rolled int64 // rolled_through: its rows up to this time are folded into hourly rows
}

// entry is a cached row of streams or sum_keys: its id and its last
// column, which retention reads to forget it.
type entry struct {
	id   int64
	last int64 // as committed
	next int64 // as the transaction in progress set it; 0 = unchanged
}

// stream is a cached row of streams, with the keys of its rows' sums.
type stream struct {
	entry
	application string
	keys        [len(levels)]*entry
}

// writeTx resolves the ids of interfaces, streams and sum keys inside one
// write transaction. What it creates or changes reaches the Store's
// caches only when the transaction commits (apply), so a rolled-back
// batch leaves them true.
type writeTx struct {
	selIface, insIface, selStream, insStream, setStreamLast, selKey, insKey, setKeyLast *sql.Stmt

	ifaces     map[string]*iface // committed; read only here
	streams    map[streamKey]*stream
	keys       map[sumKey]*entry
	newIfaces  map[string]*iface // read or created by this transaction
	newStreams map[streamKey]*stream
	newKeys    map[sumKey]*entry
	raised     []*entry // entries whose next is set
}

// newWriteTx resolves ids inside tx.
func (s *Store) newWriteTx(tx *sql.Tx) *writeTx {
	return &writeTx{
		selIface:      tx.Stmt(s.stmts.selIface),
		insIface:      tx.Stmt(s.stmts.insIface),
		selStream:     tx.Stmt(s.stmts.selStream),
		insStream:     tx.Stmt(s.stmts.insStream),
		setStreamLast: tx.Stmt(s.stmts.setStreamLast),
		selKey:        tx.Stmt(s.stmts.selKey),
		insKey:        tx.Stmt(s.stmts.insKey),
		setKeyLast:    tx.Stmt(s.stmts.setKeyLast),
		ifaces:        s.ifaces,
		streams:       s.streams,
		keys:          s.keys,
		newIfaces:     map[string]*iface{},
		newStreams:    map[streamKey]*stream{},
		newKeys:       map[sumKey]*entry{},
	}
}

// resolve finds every row's interface, stream and sum keys, creating
// them, and drops the rows of an hour already folded into hourly rows
// (stale).
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
		st, err := w.stream(ctx, streamKey{ifc.id, r.Side, r.Method, r.Node, r.Group, r.Version, r.Address, r.Consumer}, r)
		if err != nil {
			return nil, 0, err
		}
		todo = append(todo, pending{r, ifc.id, st})
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

// stream returns k's stream, creating it and its sum keys for r, and
// makes sure the last columns of both cover r: one UPDATE per stream and
// key and hour, not per row.
func (w *writeTx) stream(ctx context.Context, k streamKey, r *Row) (*stream, error) {
	st, ok := w.streams[k]
	if !ok {
		st, ok = w.newStreams[k]
	}
	if !ok {
		st = &stream{}
		err := w.selStream.QueryRowContext(ctx, k.iface, k.side, k.method, k.node, k.group, k.version, k.address, k.consumer).Scan(&st.id, &st.last, &st.application)
		if errors.Is(err, sql.ErrNoRows) {
			var res sql.Result
			st.last, st.application = hourEnd(r.Time), r.Application
			if res, err = w.insStream.ExecContext(ctx, k.iface, k.side, k.method, k.node, k.group, k.version, k.address, k.consumer, r.Application, st.last); err == nil {
				st.id, err = res.LastInsertId()
			}
		}
		if err != nil {
			return nil, fmt.Errorf("stream %s %s of %s: %w", k.side, k.method, k.node, err)
		}
		// A stream's rows are its first row's application's: Query
		// answers the stream's.
		app := *r
		app.Application = st.application
		for i := range levels {
			if st.keys[i], err = w.key(ctx, sumKeyOf(&levels[i], k.iface, &app), r.Time); err != nil {
				return nil, err
			}
		}
		w.newStreams[k] = st
	}
	if err := w.raise(ctx, &st.entry, hourEnd(r.Time), w.setStreamLast); err != nil {
		return nil, fmt.Errorf("stream %s %s of %s: %w", k.side, k.method, k.node, err)
	}
	for _, e := range st.keys {
		if err := w.raise(ctx, e, hourEnd(r.Time), w.setKeyLast); err != nil {
			return nil, fmt.Errorf("sums of %s %s of %s: %w", k.side, k.method, k.node, err)
		}
	}
	return st, nil
}

// key returns the entry of k, creating it with last covering t.
func (w *writeTx) key(ctx context.Context, k sumKey, t int64) (*entry, error) {
	if e, ok := w.keys[k]; ok {
		return e, nil
	}
	if e, ok := w.newKeys[k]; ok {
		return e, nil
	}
	e := &entry{}
	err := w.selKey.QueryRowContext(ctx, k.args()...).Scan(&e.id, &e.last)
	if errors.Is(err, sql.ErrNoRows) {
		var res sql.Result
		e.last = hourEnd(t)
		if res, err = w.insKey.ExecContext(ctx, append(k.args(), e.last)...); err == nil {
			e.id, err = res.LastInsertId()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("sum key %+v: %w", k, err)
	}
	w.newKeys[k] = e
	return e, nil
}

// raise sets e's last column to last, with set, if that is later.
func (w *writeTx) raise(ctx context.Context, e *entry, last int64, set *sql.Stmt) error {
	if last <= max(e.last, e.next) {
		return nil
	}
	if _, err := set.ExecContext(ctx, last, e.id); err != nil {
		return err
	}
	if e.next == 0 {
		w.raised = append(w.raised, e)
	}
	e.next = last
	return nil
}

// apply records in the caches what the committed transaction did.
func (w *writeTx) apply() {
	maps.Copy(w.ifaces, w.newIfaces)
	maps.Copy(w.streams, w.newStreams)
	maps.Copy(w.keys, w.newKeys)
	for _, e := range w.raised {
		e.last = e.next
		e.next = 0
	}
	w.raised = nil
}

// discard forgets what a transaction that did not commit set.
func (w *writeTx) discard() {
	for _, e := range w.raised {
		e.next = 0
	}
}
