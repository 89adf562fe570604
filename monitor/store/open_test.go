package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/stats/histogram"
)

func TestOpenCreatesTheDirectoryAndReopens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "monitor.db")
	clk := newClock(t0 + 3600)
	st, err := Open(path, Options{Now: clk.Now, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	rows := twoMinutes()
	mustInsert(t, st, rows)
	var mode string
	if err := st.wdb.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal mode %q, %v; want wal", mode, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = openAt(t, path, clk)
	if got := calls(mustQuery(t, st, Filter{Interface: greeter})); got != callsIn(rows, 0, t0+3600)-10*2 {
		t.Errorf("after reopening: %d calls", got)
	}
	// The cache of ids starts empty after a reopen: resent rows are still
	// recognised, from the database.
	if n := mustInsert(t, st, rows); n != 0 {
		t.Errorf("resent after reopening: stored %d", n)
	}
}

func TestOpenRefusesForeignFiles(t *testing.T) {
	dir := t.TempDir()
	garbage := make([]byte, 8192)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range garbage {
		garbage[i] = byte(rng.UintN(256))
	}
	foreign := filepath.Join(dir, "foreign.db")
	db, err := sql.Open("sqlite3", dsn(foreign, ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('alice')"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	marked := filepath.Join(dir, "marked.db")
	db, err = sql.Open("sqlite3", dsn(marked, ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA application_id = 1234"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	for _, tc := range []struct {
		name, path string
		content    []byte // written first when set
		want       string
	}{
		{"random bytes", filepath.Join(dir, "random.db"), garbage, "not a monitor database, or a corrupt one"},
		{"a text file", filepath.Join(dir, "text.db"), []byte(strings.Repeat("not a database\n", 200)), "not a monitor database, or a corrupt one"},
		{"another program's tables", foreign, nil, "not a monitor database: it holds 1 tables of another program"},
		{"another program's application id", marked, nil, "belongs to another program"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.content != nil {
				if err := os.WriteFile(tc.path, tc.content, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before, err := os.ReadFile(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			st, err := Open(tc.path, Options{Logger: quiet()})
			if err == nil {
				st.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q; want the path and %q", err, tc.want)
			}
			if after, _ := os.ReadFile(tc.path); !bytes.Equal(before, after) {
				t.Errorf("the refused file was changed")
			}
		})
	}
}

func TestOpenRefusesANewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "monitor.db")
	st, err := Open(path, Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.wdb.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	_, err = Open(path, Options{Logger: quiet()})
	if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "schema version 99") {
		t.Fatalf("Open of a version 99 database: %v", err)
	}
}

// TestOpenUpgradesOldVersions writes a database as versions 1 (rows, no
// per-interface sums), 2 (sums; one rolled-through mark for all
// interfaces) and 3 (the mark per interface) of the schema wrote it, and
// opens it: the sums are built again from the rows, as Insert makes them
// (at every level; by minute, hour and day; without histograms), the mark
// moves to the interface, and the store goes on from there, with
// histograms.
func TestOpenUpgradesOldVersions(t *testing.T) {
	ctx := context.Background()
	rows := `
		INSERT INTO interfaces (id, name) VALUES (1, 'org.example.Greeter'), (2, 'org.example.Other');
		INSERT INTO streams (id, interface_id, side, method, node, grp, version, address, consumer, application, last)
			VALUES (1, 1, 'provider', 'sayHello', 'p1', '', '1.0.0', '10.0.0.1:20880', '10.0.0.9', 'app', $T + 3600),
			       (2, 1, 'consumer', 'sayHello', 'c1', '', '1.0.0', '10.0.0.1:20880', '10.0.0.9', 'web', $T + 3600),
			       (3, 2, 'provider', 'get', 'p1', '', '', '10.0.0.1:20880', '10.0.0.9', 'other', $T + 3600);
		INSERT INTO raw VALUES (1, $T + 60, 1, 60, 10, 1, 0, 0, 30, 5, 1.5, 2, 0, 0),
		                       (1, $T + 60, 2, 60, 10, 1, 0, 0, 40, 6, 1.5, 2, 0, 0),
		                       (1, $T + 90, 1, 60, 4, 0, 0, 0, 8, 3, 1, 1, 0, 0),
		                       (2, $T + 120, 3, 60, 7, 0, 0, 0, 7, 1, 1, 1, 0, 0);
		INSERT INTO hourly VALUES (1, $T, 1, 100, 5, 0, 0, 300, 20, 2.5, 4, 0, 0);
		UPDATE meta SET value = $T WHERE name = 'rolled_through';`
	rows3 := strings.Replace(rows, "UPDATE meta SET value = $T WHERE name = 'rolled_through';", "UPDATE interfaces SET rolled_through = $T;", 1)
	sums := `
		INSERT INTO minute_sums VALUES (1, $T + 60, 'consumer', 'sayHello', 10, 1, 0, 0, 40, 6, 2),
		                               (1, $T + 60, 'provider', 'sayHello', 10, 1, 0, 0, 30, 5, 2),
		                               (1, $T + 120, 'provider', 'sayHello', 4, 0, 0, 0, 8, 3, 1);
		INSERT INTO hour_sums VALUES (1, $T, 'provider', 'sayHello', 100, 5, 0, 0, 300, 20, 4);`
	for _, tc := range []struct {
		version int
		sql     string
	}{{1, rows}, {2, rows + sums}, {3, rows3 + sums}} {
		t.Run("version "+strconv.Itoa(tc.version), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "monitor.db")
			db, err := sql.Open("sqlite3", dsn(path, "_journal_mode=WAL"))
			if err != nil {
				t.Fatal(err)
			}
			if err := migrateTo(ctx, db, tc.version); err != nil {
				t.Fatal(err)
			}
			// Two minutes as reported, and the hour before them folded.
			if _, err := db.Exec(strings.ReplaceAll(tc.sql, "$T", strconv.FormatInt(t0+3600, 10))); err != nil {
				t.Fatal(err)
			}
			db.Close()

			st := openAt(t, path, newClock(t0+2*3600))
			var version int
			var rolled int64
			if err := st.wdb.QueryRow("SELECT user_version, rolled_through FROM pragma_user_version, interfaces").Scan(&version, &rolled); err != nil ||
				version != len(migrations) || rolled != t0+3600 {
				t.Fatalf("user_version %d, rolled_through %d, %v; want %d and %d", version, rolled, err, len(migrations), t0+3600)
			}
			// The sums the upgrade made are those Insert makes of the same
			// rows, the same hour folded.
			clk := newClock(t0 + 3600 + 24*3600)
			fresh := openTemp(t, clk)
			hourRow := report(node{SideProvider, "app", "p1", "10.0.0.1:20880"}, "10.0.0.9", greeter, "sayHello", t0+3600, 100, 5)
			hourRow.Interval, hourRow.Input, hourRow.Output, hourRow.ElapsedMs, hourRow.MaxElapsedMs = 3600, 0, 0, 300, 20
			hourRow.Concurrent, hourRow.MaxConcurrent, hourRow.MaxInput, hourRow.MaxOutput = 2.5, 4, 0, 0
			mustInsert(t, fresh, []Row{hourRow})
			if err := fresh.Retain(ctx); err != nil {
				t.Fatal(err)
			}
			minutes := []Row{hourRow, hourRow, hourRow}
			for i, m := range []struct {
				time, success, failure, elapsed, maxElapsed int64
				side                                        string
			}{{t0 + 3600 + 60, 10, 1, 30, 5, SideProvider}, {t0 + 3600 + 60, 10, 1, 40, 6, SideConsumer}, {t0 + 3600 + 90, 4, 0, 8, 3, SideProvider}} {
				r := &minutes[i]
				r.Time, r.Interval, r.Success, r.Failure, r.ElapsedMs, r.MaxElapsedMs, r.Concurrent, r.MaxConcurrent = m.time, 60, m.success, m.failure, m.elapsed, m.maxElapsed, 1.5, 2
				if m.side == SideConsumer {
					r.Side, r.Application, r.Node = SideConsumer, "web", "c1"
				}
			}
			minutes[2].Concurrent, minutes[2].MaxConcurrent = 1, 1
			other := report(node{SideProvider, "other", "p1", "10.0.0.1:20880"}, "10.0.0.9", "org.example.Other", "get", t0+3600+120, 7, 0)
			other.Version, other.Input, other.Output, other.ElapsedMs, other.MaxElapsedMs = "", 0, 0, 7, 1
			other.Concurrent, other.MaxConcurrent, other.MaxInput, other.MaxOutput = 1, 1, 0, 0
			mustInsert(t, fresh, append(minutes, other))
			if got, want := dumpSums(t, st.wdb), dumpSums(t, fresh.wdb); !slices.Equal(got, want) {
				t.Errorf("sums after the upgrade:\n%s\nInsert makes:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}

			got := mustSeries(t, st, SeriesQuery{Interface: greeter, From: t0 + 1, To: t0 + 2*3600, Step: 60})
			want := map[int64]Bucket{
				t0 + 3600:       {Time: t0 + 3600, Calls: 105, Success: 100, Failure: 5, ElapsedMs: 300, MaxElapsedMs: 20, MaxConcurrent: 4},
				t0 + 3600 + 60:  {Time: t0 + 3600 + 60, Calls: 22, Success: 20, Failure: 2, ElapsedMs: 70, MaxElapsedMs: 6, MaxConcurrent: 2},
				t0 + 3600 + 120: {Time: t0 + 3600 + 120, Calls: 4, Success: 4, ElapsedMs: 8, MaxElapsedMs: 3, MaxConcurrent: 1},
			}
			for _, b := range got {
				if w, ok := want[b.Time]; ok && b != w || !ok && b.Calls != 0 {
					t.Errorf("bucket %+v, want %+v", b, w)
				}
			}
			// A row for the folded hour is refused; a new one is stored.
			if n := mustInsert(t, st, []Row{report(prov1, cons1.addr, greeter, "sayHello", t0+1800, 1, 0)}); n != 0 {
				t.Errorf("stored a row for an hour the old version had folded")
			}
			// The sums of old rows have no histogram: no percentiles.
			sum, err := st.Summary(ctx, SummaryQuery{By: ByService, Interface: greeter, From: t0 + 1, To: t0 + 2*3600})
			if err != nil || len(sum.Rows) != 2 {
				t.Fatalf("summary after the upgrade: %+v, %v", sum, err)
			}
			for _, r := range sum.Rows {
				if w := map[string]int64{SideProvider: 105 + 11 + 4, SideConsumer: 11}[r.Side]; r.Calls != w || r.P99Ms != nil || r.Version != "1.0.0" {
					t.Errorf("summary row %+v, want %d calls and no percentiles", r, w)
				}
			}
			next := report(prov1, cons1.addr, greeter, "sayHello", t0+3600+180, 10, 0)
			var h histogram.Counts
			h[histogram.Of(2*time.Millisecond)] = 10
			next.Histogram = h.Sparse()
			if n := mustInsert(t, st, []Row{next}); n != 1 {
				t.Errorf("a new row after the upgrade: stored %d", n)
			}
			sum, err = st.Summary(ctx, SummaryQuery{By: ByService, Interface: greeter, Side: SideProvider, From: t0 + 3600 + 121, To: t0 + 3600 + 180})
			if err != nil || len(sum.Rows) != 1 || sum.Rows[0].HistogramCalls != 10 || sum.Rows[0].P50Ms == nil {
				t.Errorf("a new row's histogram after the upgrade: %+v, %v", sum, err)
			}
		})
	}
}

// dumpSums lists the sums of db with their keys and the mark across
// interfaces, in order, ids aside.
func dumpSums(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT printf('%d %s %s %s %s %s %s %s %s last %d: %d %d %d %d %d %d %d %d %d %s %s', k.level, COALESCE(i.name, '-'),
			k.side, k.version, k.grp, k.method, k.application, k.address, k.consumer, k.last, s.span, s.time, s.success, s.failure, s.input, s.output,
			s.elapsed, s.max_elapsed, s.max_concurrent, s.last, COALESCE(s.application, 'NULL'), hex(s.histogram))
		FROM sums s JOIN sum_keys k ON k.id = s.key_id LEFT JOIN interfaces i ON i.id = k.interface_id
		UNION ALL SELECT 'sums rolled through ' || rolled_through FROM sum_rollup ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		out = append(out, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestConcurrentInsertsAndQueries runs writers, readers and retention at
// once, as the monitor and the console do: no "database is locked", every
// call counted once, and readers never see an hour being folded counted
// twice or not at all.
func TestConcurrentInsertsAndQueries(t *testing.T) {
	clk := newClock(t0 + 27*3600) // the first three hours are older than 24 h
	st := openTemp(t, clk)
	ctx := context.Background()
	old := thirtyHours()[:3*60*8]
	mustInsert(t, st, old)
	oldCalls := calls(old)

	const writers, batches, perBatch = 4, 40, 30
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	var made sync.Map
	for w := range writers {
		wg.Go(func() {
			ip := "10.0.1." + strconv.Itoa(w+1)
			n := node{SideProvider, "app", ip + ":20880#1#1", ip + ":20880"}
			var total int64
			for b := range int64(batches) {
				var rows []Row
				for i := range int64(perBatch) {
					rows = append(rows, report(n, cons1.addr, greeter, "m"+strconv.Itoa(int(i%5)), t0+3*3600+(b*perBatch/5+i/5+1)*60, 1+i, i%2))
				}
				if _, err := st.Insert(ctx, rows); err != nil {
					errs <- err
					return
				}
				if b%3 == 0 { // a resend
					if _, err := st.Insert(ctx, rows); err != nil {
						errs <- err
						return
					}
				}
				total += calls(rows)
			}
			made.Store(w, total)
		})
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for r := range 3 {
		readers.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var got int64
				if (i+r)%2 == 0 {
					rows, err := st.Query(ctx, Filter{Interface: greeter, To: t0 + 3*3600})
					if err != nil {
						errs <- err
						return
					}
					got = calls(rows)
				} else {
					bs, err := st.Series(ctx, SeriesQuery{Interface: greeter, From: t0 + 1, To: t0 + 3*3600, Step: 3600})
					if err != nil {
						errs <- err
						return
					}
					got = bucketCalls(bs)
				}
				if got != oldCalls {
					errs <- fmt.Errorf("read %d calls of the first three hours while they were folded, made %d", got, oldCalls)
					return
				}
			}
		})
	}
	readers.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if err := st.Retain(ctx); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := st.Stats().RolledUp; got != int64(len(old)) {
		t.Errorf("rolled up %d rows, want the %d of the first three hours", got, len(old))
	}
	want := oldCalls
	made.Range(func(_, v any) bool { want += v.(int64); return true })
	if got := calls(mustQuery(t, st, Filter{Interface: greeter})); got != want {
		t.Errorf("query: %d calls, made %d", got, want)
	}
	if got := bucketCalls(mustSeries(t, st, SeriesQuery{Interface: greeter, From: t0, To: t0 + 8*3600})); got != want {
		t.Errorf("series: %d calls, made %d", got, want)
	}
}

func TestOpenRefusesBadRetention(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{RawRetention: 30 * time.Minute}, "raw retention 30m0s is under 1h"},
		{Options{RawRetention: 48 * time.Hour, RollupRetention: 24 * time.Hour}, "rollup retention 24h0m0s is shorter than raw retention 48h0m0s"},
		{Options{RollupRetention: time.Hour}, "rollup retention 1h0m0s is shorter than raw retention 24h0m0s"},
	} {
		path := filepath.Join(t.TempDir(), "monitor.db")
		st, err := Open(path, tc.opts)
		if err == nil {
			st.Close()
			t.Fatalf("%+v: opened", tc.opts)
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%+v: %v; want %q and the path", tc.opts, err, tc.want)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%+v: the file was created", tc.opts)
		}
	}
}
