package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/stats/histogram"
)

// The console's scale: 50 services x 10 methods, 20 provider and 20
// consumer nodes, one row per service, method, node and minute on each
// side, i.e. 20,000 rows a minute and 28.8 million a day.
const (
	benchServices = 50
	benchMethods  = 10
	benchNodes    = 20
)

// benchDeployment returns one minute of reports, as the monitor would
// batch them: every node's rows for that minute. benchMinute sets the time
// and counts.
func benchDeployment() []Row {
	var rows []Row
	for svc := range benchServices {
		iface := fmt.Sprintf("org.example.bench.Service%02d", svc)
		for m := range benchMethods {
			method := fmt.Sprintf("method%d", m)
			for n := range benchNodes {
				provider := fmt.Sprintf("10.0.1.%d:20880", n+1)
				consumer := fmt.Sprintf("10.0.2.%d", n+1)
				common := Row{Interval: 60, Interface: iface, Version: "1.0.0", Method: method, Address: provider, Consumer: consumer}
				p := common
				p.Side, p.Application, p.Node = SideProvider, "bench-provider", provider+"#1#1700000000"
				c := common
				c.Side, c.Application, c.Node = SideConsumer, "bench-consumer", consumer+":0#2#1700000000"
				rows = append(rows, p, c)
			}
		}
	}
	return rows
}

// benchMinute fills rows with the figures of the minute ending at t; they
// vary with the minute and the row so that sums are not constant. Each
// row has a histogram of its calls over a few buckets around 3 ms, as a
// node's interval has.
func benchMinute(rows []Row, t int64) {
	for i := range rows {
		r := &rows[i]
		calls := int64(100 + (i/2*7+int(t/60))%50)
		fail := calls / 50
		*r = Row{Time: t, Interval: 60, Side: r.Side, Application: r.Application, Node: r.Node,
			Interface: r.Interface, Version: r.Version, Method: r.Method, Address: r.Address, Consumer: r.Consumer,
			Success: calls - fail, Failure: fail, Input: calls * 120, Output: calls * 80, ElapsedMs: calls * 3,
			MaxElapsedMs: 40 + int64(i%20), Concurrent: 2, MaxConcurrent: 8, MaxInput: 200, MaxOutput: 150,
			Histogram: benchHistogram(calls, i)}
		if r.Side == SideConsumer {
			r.ElapsedMs += calls // the network
		}
	}
}

// benchHistogram spreads calls over six buckets from 1.5 to 40 ms, in
// proportions that vary with i.
func benchHistogram(calls int64, i int) histogram.Sparse {
	var h histogram.Counts
	ms := []time.Duration{1500, 2200, 3000, 4100, 9000, 40000} // µs
	left := calls
	for k, d := range ms {
		n := left / int64(2+(i+k)%3)
		if k == len(ms)-1 {
			n = left
		}
		h[histogram.Of(d*time.Microsecond)] += n
		left -= n
	}
	return h.Sparse()
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
	batch := benchDeployment()
	var inserted int64
	var insertTime, cpu time.Duration
	b.ResetTimer()
	for i := range b.N {
		benchMinute(batch, start+int64(i+1)*60)
		began, cpu0 := time.Now(), cpuTime(b)
		n, err := st.Insert(ctx, batch)
		insertTime += time.Since(began)
		cpu += cpuTime(b) - cpu0
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
	// Rows per second of this process's CPU time in Insert: what one idle
	// core would insert, whatever else shares the machine.
	b.ReportMetric(float64(inserted)/cpu.Seconds(), "rows/cpu-s")
	b.ReportMetric(float64(inserted), "rows")

	// The heaviest query, p50 of several runs.
	q := SeriesQuery{Interface: "org.example.bench.Service07", From: start + 1, To: end, Step: 60}
	var times []time.Duration
	for range 15 {
		began := time.Now()
		buckets, err := st.Series(ctx, q)
		times = append(times, time.Since(began))
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
	if buckets, _ := st.Series(ctx, q); buckets[0].P99Ms == nil {
		b.Fatalf("series without percentiles: %+v", buckets[0])
	}
	benchPageQueries(b, st, q.Interface, start, end)

	// The same service's rows for one method over the last hour (the stats API).
	began := time.Now()
	rows, err := st.Query(ctx, Filter{Interface: q.Interface, Method: "method3", From: end - 3600 + 1, To: end})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(time.Since(began).Microseconds())/1000, "query-1h-1method-ms")
	if want := min(b.N, 60) * benchNodes * 2; len(rows) != want {
		b.Fatalf("query: %d rows, want %d", len(rows), want)
	}

	// Folding the oldest hour, an hour after the data's end.
	if b.N >= 60 {
		now = time.Unix(start+3600, 0).Add(24 * time.Hour)
		began = time.Now()
		if err := st.Retain(ctx); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(began).Seconds(), "rollup-1h-s")
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

// benchPageQueries times the queries of the console's pages over the
// range (start, end] and its last 5 minutes (p50 of 7 runs, in ms): the
// overview's and services list's services, the instances page's
// providers and consumers, the service page's methods, providers and
// charts of iface (per 10 minutes), and the dependencies' edges; and,
// over ranges that do not start or end on an hour, every service over the
// last 6 hours (read by minute at its edges) and 23 hours (widened to
// whole hours), and iface's methods over the last 6 hours.
func benchPageQueries(b *testing.B, st *Store, iface string, start, end int64) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		run  func() (int, error)
	}{
		{"services-5m", summaryRun(st, SummaryQuery{By: ByService, From: end - 299, To: end})},
		{"instances-5m", summaryRun(st, SummaryQuery{By: ByProvider, Side: SideProvider, From: end - 299, To: end})},
		{"services", summaryRun(st, SummaryQuery{By: ByService, Side: SideConsumer, From: start + 1, To: end})},
		{"edges", summaryRun(st, SummaryQuery{By: ByEdge, From: start + 1, To: end})},
		{"methods", summaryRun(st, SummaryQuery{By: ByMethod, Interface: iface, Side: SideConsumer, From: start + 1, To: end})},
		{"providers", summaryRun(st, SummaryQuery{By: ByProvider, Interface: iface, Side: SideConsumer, From: start + 1, To: end})},
		{"consumers", summaryRun(st, SummaryQuery{By: ByConsumer, Interface: iface, Side: SideProvider, From: start + 1, To: end})},
		{"services-6h-unaligned", summaryRun(st, SummaryQuery{By: ByService, Side: SideConsumer, From: end - 6*hour + 31, To: end - 29})},
		{"services-23h-unaligned", summaryRun(st, SummaryQuery{By: ByService, Side: SideConsumer, From: end - 23*hour + 31, To: end - 29})},
		{"methods-6h-unaligned", summaryRun(st, SummaryQuery{By: ByMethod, Interface: iface, Side: SideConsumer, From: end - 6*hour + 31, To: end - 29})},
		{"series-10m", func() (int, error) {
			bs, err := st.Series(ctx, SeriesQuery{Interface: iface, Side: SideConsumer, From: start + 1, To: end, Step: 600})
			return len(bs), err
		}},
	} {
		var times []time.Duration
		for range 7 {
			began := time.Now()
			n, err := tc.run()
			times = append(times, time.Since(began))
			if err != nil || n == 0 {
				b.Fatalf("%s: %d rows, %v", tc.name, n, err)
			}
		}
		slices.Sort(times)
		b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, tc.name+"-ms")
	}
}

func summaryRun(st *Store, q SummaryQuery) func() (int, error) {
	return func() (int, error) {
		s, err := st.Summary(context.Background(), q)
		if err == nil && len(s.Rows) > 0 && s.Rows[0].P99Ms == nil {
			err = fmt.Errorf("no percentiles in %+v", s.Rows[0])
		}
		return len(s.Rows), err
	}
}

// BenchmarkStoreMonth times the console's queries over 30 days of
// rollups at the console's scale: every sum key of BenchmarkStoreDay's
// deployment, reported once an hour for 30 days and folded (a row per
// method and per provider-consumer pair, not per stream: the sums are
// those of the full deployment, the hourly rows a tenth of them). The
// data takes a minute or two to build; b.N is the query rounds.
func BenchmarkStoreMonth(b *testing.B) {
	ctx := context.Background()
	end := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC).Unix()
	start := end - 30*day
	now := time.Unix(end, 0)
	st, err := Open(filepath.Join(b.TempDir(), "monitor.db"), Options{Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var batch []Row
	for _, r := range benchDeployment() {
		// Pair n with method n%10: each method and each pair once.
		if m, n := r.Method[len("method"):], r.Address[len("10.0.1."):len(r.Address)-len(":20880")]; m[0]-'0' == (n[len(n)-1]-'0'+9)%10 {
			r.Interval = 3600
			batch = append(batch, r)
		}
	}
	for h := start + hour; h <= end; h += hour {
		benchMinute(batch, h)
		for i := range batch {
			batch[i].Interval = 3600
		}
		if _, err := st.Insert(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	began := time.Now()
	if err := st.Retain(ctx); err != nil {
		b.Fatal(err)
	}
	rollup := time.Since(began)
	b.ResetTimer()
	for range b.N {
		benchPageQueries(b, st, "org.example.bench.Service07", start, end)
	}
	b.ReportMetric(rollup.Seconds(), "rollup-s")
	b.ReportMetric(float64(len(batch)), "rows/h")
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
