package store

import (
	"context"
	"database/sql"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// thirtyHours is what two providers and a consumer calling both report
// for two methods at 60-second intervals for 30 hours from t0: 8 streams,
// 14,400 rows.
func thirtyHours() []Row {
	var rows []Row
	for m := range int64(30 * 60) {
		tm := t0 + (m+1)*60
		for _, meth := range []string{"sayHello", "add"} {
			for i, p := range []node{prov1, prov2} {
				s, f := 10+(m*7+int64(i))%23, m%3
				rows = append(rows, report(p, cons1.addr, greeter, meth, tm, s, f), report(cons1, p.addr, greeter, meth, tm, s, f))
			}
		}
	}
	return rows
}

func insertInBatches(t testing.TB, st *Store, rows []Row, n int) {
	t.Helper()
	for len(rows) > 0 {
		k := min(n, len(rows))
		mustInsert(t, st, rows[:k])
		rows = rows[k:]
	}
}

func callsIn(rows []Row, from, to int64) int64 {
	var n int64
	for _, r := range rows {
		if r.Time >= from && r.Time <= to {
			n += r.Calls()
		}
	}
	return n
}

// hourOf folds the rows of one stream into what its hourly row must be.
func hourOf(rows []Row, like Row, end int64) Row {
	h := Row{Time: end, Interval: 3600, Side: like.Side, Application: like.Application, Node: like.Node, Interface: like.Interface,
		Group: like.Group, Version: like.Version, Method: like.Method, Address: like.Address, Consumer: like.Consumer}
	var n int
	for _, r := range rows {
		if r.Time <= end-3600 || r.Time > end || r.Node != like.Node || r.Method != like.Method || r.Address != like.Address || r.Consumer != like.Consumer || r.Side != like.Side {
			continue
		}
		n++
		h.Success += r.Success
		h.Failure += r.Failure
		h.Input += r.Input
		h.Output += r.Output
		h.ElapsedMs += r.ElapsedMs
		h.MaxElapsedMs = max(h.MaxElapsedMs, r.MaxElapsedMs)
		h.Concurrent += r.Concurrent
		h.MaxConcurrent = max(h.MaxConcurrent, r.MaxConcurrent)
		h.MaxInput = max(h.MaxInput, r.MaxInput)
		h.MaxOutput = max(h.MaxOutput, r.MaxOutput)
	}
	h.Concurrent /= float64(n)
	return h
}

func TestRetentionRollsUpAndExpires(t *testing.T) {
	ctx := context.Background()
	end := t0 + 30*3600
	clk := newClock(end)
	st := openTemp(t, clk)
	made := thirtyHours()
	insertInBatches(t, st, made, 400)
	all := Filter{Interface: greeter}
	before := mustQuery(t, st, all)

	// At t0+30h with 24 h of raw retention, the hours ending t0+1h..t0+6h
	// become hourly rows, one per stream and hour.
	if err := st.Retain(ctx); err != nil {
		t.Fatal(err)
	}
	cut := t0 + 6*3600
	after := mustQuery(t, st, all)
	var hourly, raw []Row
	for _, r := range after {
		if r.Interval == 3600 {
			hourly = append(hourly, r)
		} else {
			raw = append(raw, r)
		}
	}
	if len(hourly) != 6*8 || len(raw) != len(made)-6*60*8 {
		t.Fatalf("after retention: %d hourly and %d raw rows, want %d and %d", len(hourly), len(raw), 6*8, len(made)-6*60*8)
	}
	if hourly[len(hourly)-1].Time != cut || raw[0].Time != cut+60 {
		t.Errorf("hourly rows end at %d, raw rows start at %d; want %d and %d", hourly[len(hourly)-1].Time, raw[0].Time, cut, cut+60)
	}
	if !slices.Equal(after[len(hourly):], before[6*60*8:]) {
		t.Errorf("raw rows newer than the retention changed")
	}
	for _, h := range hourly {
		if want := hourOf(made, h, h.Time); h != want {
			t.Errorf("hourly row\n got %+v\nwant %+v", h, want)
		}
	}
	if got, want := calls(after), calls(made); got != want {
		t.Errorf("after rollup: %d calls, made %d", got, want)
	}
	if got := st.Stats().RolledUp; got != 6*60*8 {
		t.Errorf("Stats().RolledUp = %d, want %d", got, 6*60*8)
	}
	// The folded hours' minute sums are gone, the later ones kept.
	var gone, kept int
	if err := st.wdb.QueryRow("SELECT count(*) FILTER (WHERE time <= ?1), count(*) FILTER (WHERE time > ?1) FROM sums WHERE span = 60", cut).Scan(&gone, &kept); err != nil ||
		gone != 0 || kept == 0 {
		t.Errorf("minute sums: %d of the folded hours left, %d after (%v)", gone, kept, err)
	}

	// A query spanning both returns the hourly rows whose hour ends in the
	// range, then the rows as reported: t0+5h+1s..t0+7h gives the hour
	// ending t0+6h and the minutes of the seventh hour.
	span := mustQuery(t, st, Filter{Interface: greeter, From: t0 + 5*3600 + 1, To: t0 + 7*3600})
	if len(span) != 8+60*8 || span[0].Interval != 3600 || span[0].Time != cut || span[8].Interval != 60 || span[8].Time != cut+60 {
		t.Fatalf("span: %d rows, first %+v", len(span), span[0])
	}
	if got, want := calls(span), callsIn(made, t0+5*3600+1, t0+7*3600); got != want {
		t.Errorf("span: %d calls, made %d", got, want)
	}
	// Series per hour over the whole range, on both paths.
	for _, q := range []SeriesQuery{{Interface: greeter}, {Interface: greeter, Address: prov1.addr}} {
		q.From, q.To, q.Step = t0+1, end, 3600
		bs := mustSeries(t, st, q)
		if len(bs) != 30 {
			t.Fatalf("series: %d buckets", len(bs))
		}
		for _, b := range bs {
			want := callsIn(made, b.Time-3599, b.Time)
			if q.Address != "" {
				var sub []Row
				for _, r := range made {
					if r.Address == q.Address {
						sub = append(sub, r)
					}
				}
				want = callsIn(sub, b.Time-3599, b.Time)
			}
			if b.Calls != want {
				t.Errorf("series %+v: bucket %d has %d calls, made %d", q, b.Time, b.Calls, want)
			}
		}
	}

	// Running it again changes nothing.
	stats := st.Stats()
	if err := st.Retain(ctx); err != nil {
		t.Fatal(err)
	}
	if again := mustQuery(t, st, all); !reflect.DeepEqual(again, after) {
		t.Errorf("a second run changed the rows")
	}
	if st.Stats().RolledUp != stats.RolledUp {
		t.Errorf("a second run rolled up %d more rows", st.Stats().RolledUp-stats.RolledUp)
	}

	// A report for an hour already folded is refused, not added to it.
	late := report(prov1, cons1.addr, greeter, "sayHello", t0+3*3600-30, 1000, 0)
	if n := mustInsert(t, st, []Row{late}); n != 0 || st.Stats().Stale != 1 {
		t.Errorf("late row: stored %d, Stats().Stale %d; want 0 and 1", n, st.Stats().Stale)
	}
	if got := calls(mustQuery(t, st, all)); got != calls(made) {
		t.Errorf("after a late row: %d calls, made %d", got, calls(made))
	}

	// 30 days after t0+3h the hourly rows up to t0+3h expire, and every raw
	// row is older than 24 h, so all are folded.
	clk.Set(t0 + 3*3600 + 720*3600)
	if err := st.Retain(ctx); err != nil {
		t.Fatal(err)
	}
	left := mustQuery(t, st, all)
	if len(left) != 27*8 || left[0].Time != t0+4*3600 || left[0].Interval != 3600 || left[len(left)-1].Time != end {
		t.Fatalf("after expiry: %d rows from %d to %d", len(left), left[0].Time, left[len(left)-1].Time)
	}
	if got, want := calls(left), callsIn(made, t0+3*3600+1, end); got != want {
		t.Errorf("after expiry: %d calls, made %d after the horizon", got, want)
	}
	if got := bucketCalls(mustSeries(t, st, SeriesQuery{Interface: greeter, From: t0 + 1, To: end, Step: 3600})); got != calls(left) {
		t.Errorf("series after expiry: %d calls, rows %d", got, calls(left))
	}
	if got := st.Stats().HourlyExpired; got != 3*8 {
		t.Errorf("Stats().HourlyExpired = %d, want %d", got, 3*8)
	}

	// Once everything has expired nothing is left, streams included, and a
	// node reporting again is stored afresh.
	clk.Set(end + 720*3600)
	if err := st.Retain(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mustQuery(t, st, all); len(got) != 0 {
		t.Fatalf("%d rows left after everything expired", len(got))
	}
	var streams, ifaces int
	db := st.wdb
	if err := db.QueryRow("SELECT (SELECT count(*) FROM streams), (SELECT count(*) FROM interfaces)").Scan(&streams, &ifaces); err != nil {
		t.Fatal(err)
	}
	if streams != 0 || ifaces != 0 {
		t.Errorf("%d streams and %d interfaces left", streams, ifaces)
	}
	var sums, keys int
	if err := db.QueryRow("SELECT (SELECT count(*) FROM sums), (SELECT count(*) FROM sum_keys)").Scan(&sums, &keys); err != nil || sums != 0 || keys != 0 {
		t.Errorf("%d sums and %d sum keys left (%v)", sums, keys, err)
	}
	back := report(prov1, cons1.addr, greeter, "sayHello", end+720*3600, 3, 0)
	mustInsert(t, st, []Row{back})
	if got := mustQuery(t, st, all); len(got) != 1 || got[0] != back {
		t.Errorf("after expiry a new report reads back as %+v", got)
	}
}

// TestRollupFailingMidwayChangesNothing makes the last step of folding an
// hour fail (a trigger refuses it) after the hourly rows were written and
// the rows deleted: the hour must be left exactly as it was, then fold
// cleanly once the fault is gone.
func TestRollupFailingMidwayChangesNothing(t *testing.T) {
	ctx := context.Background()
	end := t0 + 30*3600
	clk := newClock(end)
	st := openTemp(t, clk)
	made := thirtyHours()
	insertInBatches(t, st, made, 1000)
	all := Filter{Interface: greeter}
	before := mustQuery(t, st, all)
	series := SeriesQuery{Interface: greeter, From: t0 + 1, To: end, Step: 3600}
	seriesBefore := mustSeries(t, st, series)

	fault, err := sql.Open("sqlite3", dsn(st.Path(), "_busy_timeout=10000"))
	if err != nil {
		t.Fatal(err)
	}
	defer fault.Close()
	if _, err := fault.Exec(`CREATE TRIGGER fault BEFORE UPDATE ON interfaces BEGIN SELECT RAISE(ABORT, 'injected fault'); END`); err != nil {
		t.Fatal(err)
	}
	err = st.Retain(ctx)
	if err == nil || !strings.Contains(err.Error(), "injected fault") || !strings.Contains(err.Error(), st.Path()) {
		t.Fatalf("Retain with a fault: %v", err)
	}
	if got := mustQuery(t, st, all); !reflect.DeepEqual(got, before) {
		t.Fatalf("a failed rollup changed the rows: %d rows, %d calls; before %d rows, %d calls", len(got), calls(got), len(before), calls(before))
	}
	if got := mustSeries(t, st, series); !reflect.DeepEqual(got, seriesBefore) {
		t.Fatalf("a failed rollup changed the series")
	}
	if s := st.Stats(); s.RetainErrors != 1 || s.RolledUp != 0 {
		t.Errorf("stats after a failed rollup: %+v", s)
	}

	if _, err := fault.Exec(`DROP TRIGGER fault`); err != nil {
		t.Fatal(err)
	}
	if err := st.Retain(ctx); err != nil {
		t.Fatal(err)
	}
	after := mustQuery(t, st, all)
	if len(after) == len(before) || calls(after) != calls(made) {
		t.Errorf("after the fault: %d rows (%d before), %d calls, made %d", len(after), len(before), calls(after), calls(made))
	}
	if got := mustSeries(t, st, series); !reflect.DeepEqual(got, seriesBefore) {
		t.Errorf("hourly series changed by the rollup")
	}
}

func TestRunAppliesRetentionUntilCancelled(t *testing.T) {
	clk := newClock(t0 + 3600)
	st := openTemp(t, clk)
	made := thirtyHours()[:8*120] // two hours
	mustInsert(t, st, made)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		st.Run(ctx, 10*time.Millisecond)
		close(done)
	}()
	clk.Set(t0 + 25*3600 + 1800) // the first hour is now older than 24 h, the second not yet
	deadline := time.Now().Add(20 * time.Second)
	for st.Stats().RolledUp == 0 {
		if time.Now().After(deadline) {
			t.Fatal("Run did not roll up within 20 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
	if got := st.Stats().RolledUp; got != 8*60 {
		t.Errorf("rolled up %d rows, want %d", got, 8*60)
	}
	if got := calls(mustQuery(t, st, Filter{Interface: greeter})); got != calls(made) {
		t.Errorf("%d calls, made %d", got, calls(made))
	}
}
