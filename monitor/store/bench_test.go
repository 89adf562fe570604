package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// The console's scale: 50 services x 10 methods, 20 provider and 20
// consumer nodes, one row per service, method, node and minute on each
// side, i.e. 20,000 rows a minute and 28.8 million a day.
const (
	benchServices = 50
	benchMethods  = 10
	benchNodes    = 20
)

// benchMinute returns one minute of reports, as the monitor would batch
// them: every node's rows for that minute. Counts vary with the minute so
// that sums are not constant.
func benchMinute(rows []Row, t int64) []Row {
	rows = rows[:0]
	for svc := range benchServices {
		iface := fmt.Sprintf("org.example.bench.Service%02d", svc)
		for m := range benchMethods {
			method := fmt.Sprintf("method%d", m)
			for n := range benchNodes {
				provider := fmt.Sprintf("10.0.1.%d:20880", n+1)
				consumer := fmt.Sprintf("10.0.2.%d", n+1)
				calls := int64(100 + (svc*7+m*3+n+int(t/60))%50)
				fail := calls / 50
				common := Row{Time: t, Interval: 60, Interface: iface, Version: "1.0.0", Method: method,
					Address: provider, Consumer: consumer, Success: calls - fail, Failure: fail,
					Input: calls * 120, Output: calls * 80, ElapsedMs: calls * 3, MaxElapsedMs: 40 + int64(n),
					Concurrent: 2, MaxConcurrent: 8, MaxInput: 200, MaxOutput: 150}
				p := common
				p.Side, p.Application, p.Node = SideProvider, "bench-provider", provider+"#1#1700000000"
				c := common
				c.Side, c.Application, c.Node = SideConsumer, "bench-consumer", consumer+":0#2#1700000000"
				c.ElapsedMs += calls // the network
				rows = append(rows, p, c)
			}
		}
	}
	return rows
}

// BenchmarkStoreDay inserts b.N minutes of the console's scale (1440x is
// a day, 28.8 million rows; make bench runs that; -benchtime 60x is an
// hour) in batches of one minute, then times the console's heaviest query:
// one service's calls, failures and latency per minute over the whole
// range, across all its methods and nodes, on both sides.
func BenchmarkStoreDay(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	path := filepath.Join(dir, "monitor.db")
	end := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC).Unix()
	start := end - int64(b.N)*60
	now := time.Unix(end, 0)
	st, err := Open(path, Options{Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	batch := make([]Row, 0, benchServices*benchMethods*benchNodes*2)
	var inserted int64
	var insertTime time.Duration
	b.ResetTimer()
	for i := range b.N {
		batch = benchMinute(batch, start+int64(i+1)*60)
		t0 := time.Now()
		n, err := st.Insert(ctx, batch)
		insertTime += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		inserted += int64(n)
	}
	b.StopTimer()
	if want := int64(b.N * len(batch)); inserted != want {
		b.Fatalf("inserted %d rows, want %d", inserted, want)
	}
	b.ReportMetric(float64(inserted)/insertTime.Seconds(), "rows/s")
	b.ReportMetric(float64(inserted), "rows")

	// The heaviest query, p50 of several runs.
	q := SeriesQuery{Interface: "org.example.bench.Service07", From: start + 1, To: end, Step: 60}
	var times []time.Duration
	for range 15 {
		t0 := time.Now()
		buckets, err := st.Series(ctx, q)
		times = append(times, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		if len(buckets) != b.N || buckets[0].Calls == 0 {
			b.Fatalf("series: %d buckets, first %+v", len(buckets), buckets[0])
		}
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "series-p50-ms")
	b.ReportMetric(float64(times[len(times)-1].Microseconds())/1000, "series-max-ms")

	// The same service's rows for one method over the last hour (the stats API).
	t0 := time.Now()
	rows, err := st.Query(ctx, Filter{Interface: q.Interface, Method: "method3", From: end - 3600 + 1, To: end})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(time.Since(t0).Microseconds())/1000, "query-1h-1method-ms")
	if want := min(b.N, 60) * benchNodes * 2; len(rows) != want {
		b.Fatalf("query: %d rows, want %d", len(rows), want)
	}

	// Folding the oldest hour, an hour after the data's end.
	if b.N >= 60 {
		now = time.Unix(start+3600, 0).Add(24 * time.Hour)
		t0 = time.Now()
		if err := st.Retain(ctx); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(t0).Seconds(), "rollup-1h-s")
		if got := st.Stats().RolledUp; got != int64(60*len(batch)) {
			b.Fatalf("rolled up %d rows, want %d", got, 60*len(batch))
		}
	}
	var size int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			size += fi.Size()
		}
	}
	b.ReportMetric(float64(size)/(1<<20), "db-MB")
}
