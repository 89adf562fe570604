package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/stats/histogram"
)

var (
	prov3 = node{SideProvider, "greeter-gray", "10.0.0.3:20880#103#1700000000", "10.0.0.3:20880"}
	cons2 = node{SideConsumer, "batch-app", "10.0.0.8:0#202#1700000000", "10.0.0.8"}
	java  = node{SideConsumer, "java-app", "java-app@10.0.0.7", "10.0.0.7"}
)

// latencies is a histogram of n calls: 90% at about 1 ms, 10% at about
// 50 ms, or all at 5 ms when slow.
func latencies(n int64, slow bool) histogram.Sparse {
	var c histogram.Counts
	if slow {
		c[histogram.Of(5*time.Millisecond)] = n
		return c.Sparse()
	}
	c[histogram.Of(time.Millisecond)] = n - n/10
	c[histogram.Of(50*time.Millisecond)] = n / 10
	return c.Sparse()
}

// deployment is hours of a mixed deployment from t0, a row per minute
// per stream: Greeter 1.0.0 served by two providers to a consumer (two
// methods), Greeter 2.0.0 of group gray served by a third provider to
// another consumer, another service, and a Java consumer that sends no
// histogram.
func deployment(hours int64) []Row {
	var rows []Row
	with := func(r Row, version, group string, slow bool) Row {
		r.Version, r.Group = version, group
		r.Histogram = latencies(r.Calls(), slow)
		return r
	}
	for m := range hours * 60 {
		tm := t0 + (m+1)*60
		for _, meth := range []string{"sayHello", "add"} {
			for i, p := range []node{prov1, prov2} {
				s, f := 10+(m*7+int64(i))%23, m%3
				rows = append(rows, with(report(p, cons1.addr, greeter, meth, tm, s, f), "1.0.0", "", false),
					with(report(cons1, p.addr, greeter, meth, tm, s, f), "1.0.0", "", false))
			}
		}
		rows = append(rows, with(report(prov3, cons2.addr, greeter, "sayHello", tm, 5, 1), "2.0.0", "gray", true),
			with(report(cons2, prov3.addr, greeter, "sayHello", tm, 5, 1), "2.0.0", "gray", true),
			with(report(prov1, cons1.addr, "org.example.Other", "get", tm, 3+m%4, 0), "1.0.0", "", false),
			with(report(cons1, prov1.addr, "org.example.Other", "get", tm, 3+m%4, 0), "1.0.0", "", false))
		j := report(java, prov1.addr, greeter, "sayHello", tm, 4, 0) // Java: avg and max only
		rows = append(rows, j)
	}
	return rows
}

// expect computes what Summary must answer for q from the rows made,
// over the range (from, to] that it says it covered.
func expect(rows []Row, q SummaryQuery, from, to, seconds int64) []SummaryRow {
	type agg struct {
		r    SummaryRow
		apps map[string]bool
		h    histogram.Counts
	}
	groups := map[string]*agg{}
	var order []string
	provApps := map[[3]string]map[string]bool{}
	for _, r := range rows {
		if r.Time <= from || r.Time > to || q.Interface != "" && r.Interface != q.Interface || q.Method != "" && r.Method != q.Method ||
			q.Version != nil && r.Version != *q.Version || q.Group != nil && r.Group != *q.Group {
			continue
		}
		if q.By == ByEdge && r.Side == SideProvider {
			k := [3]string{r.Interface, r.Version, r.Group}
			if provApps[k] == nil {
				provApps[k] = map[string]bool{}
			}
			provApps[k][r.Application] = true
		}
		if q.Side != "" && r.Side != q.Side || q.By == ByEdge && r.Side != SideConsumer || q.Application != "" && r.Application != q.Application ||
			q.Host != "" && !hostIs(r.Address, q.Host) && !hostIs(r.Consumer, q.Host) {
			continue
		}
		var g SummaryRow
		switch q.By {
		case ByService:
			g = SummaryRow{Interface: r.Interface, Version: r.Version, Group: r.Group, Side: r.Side}
		case ByMethod:
			g = SummaryRow{Method: r.Method, Side: r.Side}
		case ByProvider:
			g = SummaryRow{Address: r.Address, Side: r.Side}
		case ByConsumer:
			g = SummaryRow{Consumer: r.Consumer, Side: r.Side}
		case ByApplication:
			g = SummaryRow{Application: r.Application, Side: r.Side}
		case ByEdge:
			g = SummaryRow{Application: r.Application, Interface: r.Interface, Version: r.Version, Group: r.Group}
		}
		key := fmt.Sprintf("%+v", g)
		a := groups[key]
		if a == nil {
			a = &agg{r: g, apps: map[string]bool{}}
			groups[key] = a
			order = append(order, key)
		}
		a.apps[r.Application] = true
		a.r.Success += r.Success
		a.r.Failure += r.Failure
		a.r.Input += r.Input
		a.r.Output += r.Output
		a.r.ElapsedMs += r.ElapsedMs
		a.r.MaxElapsedMs = max(a.r.MaxElapsedMs, r.MaxElapsedMs)
		a.r.MaxConcurrent = max(a.r.MaxConcurrent, r.MaxConcurrent)
		a.r.Last = max(a.r.Last, r.Time)
		if err := a.h.AddSparse(r.Histogram); err != nil {
			panic(err)
		}
	}
	var out []SummaryRow
	for _, k := range order {
		a := groups[k]
		r := a.r
		if len(a.apps) == 1 {
			for app := range a.apps {
				r.Application = app
			}
		}
		r.Calls = r.Success + r.Failure
		r.CallsPerSecond = float64(r.Calls) / float64(seconds)
		if r.Calls > 0 {
			r.ErrorRate = float64(r.Failure) / float64(r.Calls)
			r.AvgMs = float64(r.ElapsedMs) / float64(r.Calls)
		}
		r.Percentiles = percentilesOf(&a.h)
		if q.By == ByEdge {
			for app := range provApps[[3]string{r.Interface, r.Version, r.Group}] {
				r.ProviderApplications = append(r.ProviderApplications, app)
			}
			slices.Sort(r.ProviderApplications)
		}
		out = append(out, r)
	}
	return out
}

func hostIs(addr, host string) bool { return addr == host || strings.HasPrefix(addr, host+":") }

func summaryKey(r SummaryRow) string {
	return strings.Join([]string{r.Side, r.Interface, r.Version, r.Group, r.Method, r.Application, r.Address, r.Consumer}, "|")
}

func str(s string) *string { return &s }

// same compares two summaries' rows, in any order (Summary sorts by
// calls; ties in any order).
func sameRows(t *testing.T, name string, got, want []SummaryRow) {
	t.Helper()
	byKey := func(a, b SummaryRow) int { return cmp.Compare(summaryKey(a), summaryKey(b)) }
	if !slices.IsSortedFunc(got, func(a, b SummaryRow) int { return cmp.Compare(b.Calls, a.Calls) }) {
		t.Errorf("%s: rows not busiest first", name)
	}
	got, want = slices.Clone(got), slices.Clone(want)
	slices.SortFunc(got, byKey)
	slices.SortFunc(want, byKey)
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d:\n got %+v\nwant %+v", name, len(got), len(want), got, want)
	}
	for i := range got {
		if g, w := fmt.Sprintf("%+v", show(got[i])), fmt.Sprintf("%+v", show(want[i])); g != w {
			t.Errorf("%s: row\n got %s\nwant %s", name, g, w)
		}
	}
}

// show makes a row printable and comparable: percentiles as values,
// rates rounded.
func show(r SummaryRow) any {
	p := func(v *float64) string {
		if v == nil {
			return "null"
		}
		return fmt.Sprint(*v)
	}
	round := func(v float64) float64 { return math.Round(v*1e9) / 1e9 }
	type shown struct {
		SummaryRow
		P50, P90, P99 string
	}
	s := shown{r, p(r.P50Ms), p(r.P90Ms), p(r.P99Ms)}
	s.P50Ms, s.P90Ms, s.P99Ms = nil, nil, nil
	s.CallsPerSecond, s.ErrorRate, s.AvgMs = round(r.CallsPerSecond), round(r.ErrorRate), round(r.AvgMs)
	return s
}

// TestSummary stores three hours of the mixed deployment and checks every
// grouping and filter against the rows made: counts, rates, maxima, the
// application rule, edges, and percentiles equal to those of the merged
// histograms of the rows (Java's rows count in calls, not in them).
func TestSummary(t *testing.T) {
	st := openTemp(t, newClock(t0+3*3600))
	made := deployment(3)
	insertInBatches(t, st, made, 333)
	for _, tc := range []struct {
		name string
		q    SummaryQuery
	}{
		{"services, last 5 minutes", SummaryQuery{By: ByService, From: t0 + 3*3600 - 299, To: t0 + 3*3600}},
		{"services, consumer side, a minute", SummaryQuery{By: ByService, Side: SideConsumer, From: t0 + 61, To: t0 + 120}},
		{"services over hours and minutes", SummaryQuery{By: ByService, From: t0 + 1800 + 1, To: t0 + 2*3600 + 600}},
		{"methods of Greeter", SummaryQuery{By: ByMethod, Interface: greeter, From: t0 + 1, To: t0 + 3*3600}},
		{"methods of Greeter 1.0.0 on the provider side", SummaryQuery{By: ByMethod, Interface: greeter, Version: str("1.0.0"), Group: str(""), Side: SideProvider, From: t0 + 1, To: t0 + 3600}},
		{"methods of Greeter gray", SummaryQuery{By: ByMethod, Interface: greeter, Group: str("gray"), From: t0 + 1, To: t0 + 3600}},
		{"providers of Greeter", SummaryQuery{By: ByProvider, Interface: greeter, From: t0 + 1, To: t0 + 3*3600}},
		{"consumers of Greeter sayHello", SummaryQuery{By: ByConsumer, Interface: greeter, Method: "sayHello", From: t0 + 1, To: t0 + 2*3600}},
		{"applications", SummaryQuery{By: ByApplication, From: t0 + 1, To: t0 + 3*3600}},
		{"edges", SummaryQuery{By: ByEdge, From: t0 + 1, To: t0 + 3*3600}},
		{"edges of gray", SummaryQuery{By: ByEdge, Group: str("gray"), From: t0 + 1, To: t0 + 3*3600}},
		{"services of a machine, by IP", SummaryQuery{By: ByService, Host: "10.0.0.1", From: t0 + 1, To: t0 + 3*3600}},
		{"services of a consumer, by IP", SummaryQuery{By: ByService, Host: "10.0.0.8", From: t0 + 1, To: t0 + 3*3600}},
		{"services of a provider, by host:port", SummaryQuery{By: ByService, Host: prov2.addr, From: t0 + 1, To: t0 + 3*3600}},
		{"a host with no calls", SummaryQuery{By: ByService, Host: "10.0.0.10", From: t0 + 1, To: t0 + 3*3600}},
		{"one application's services", SummaryQuery{By: ByService, Application: "web-app", From: t0 + 1, To: t0 + 3*3600}},
		{"method and host: from the rows", SummaryQuery{By: ByMethod, Interface: greeter, Host: prov1.addr, From: t0 + 301, To: t0 + 3600 + 600}},
		{"an unknown interface", SummaryQuery{By: ByMethod, Interface: "org.example.Nobody", From: t0 + 1, To: t0 + 3*3600}},
		{"the future", SummaryQuery{By: ByService, From: t0 + 4*3600, To: t0 + 5*3600}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := st.Summary(context.Background(), tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if got.By != tc.q.By || got.From > tc.q.From-1 || got.To < tc.q.To || got.From%60 != 0 || got.To%60 != 0 || got.Rows == nil {
				t.Fatalf("covers (%d, %d] for (%d, %d]; rows %v", got.From, got.To, tc.q.From-1, tc.q.To, got.Rows)
			}
			if got.Seconds != min(got.To, ceilTo(tc.q.To, 60))-got.From {
				t.Errorf("seconds %d for (%d, %d]", got.Seconds, got.From, got.To)
			}
			sameRows(t, tc.name, got.Rows, expect(made, tc.q, got.From, got.To, got.Seconds))
		})
	}
}

// A known latency mix, 90% at 1 ms and 10% at 50 ms, gives p50 and p90 in
// the 1 ms bucket and p99 in the 50 ms one, from the rows, the series and
// the summary; and the same after the hour is folded and read from
// hourly rows and hourly sums. Java's rows (no histogram) have null
// percentiles but their counts, average and maximum.
func TestPercentilesBeforeAndAfterRollup(t *testing.T) {
	clk := newClock(t0 + 3600)
	st := openTemp(t, clk)
	made := deployment(2)
	insertInBatches(t, st, made, 500)
	v1 := str("1.0.0")
	in := func(name string, p *float64, d time.Duration) {
		t.Helper()
		lo, hi := histogram.Bounds(histogram.Of(d))
		if p == nil || *p*1000 < lo || *p*1000 >= hi {
			t.Errorf("%s = %v ms, want in [%v, %v) µs", name, p, lo, hi)
		}
	}
	check := func(stage string) {
		t.Helper()
		q := SummaryQuery{By: ByMethod, Interface: greeter, Version: v1, Side: SideProvider, From: t0 + 1, To: t0 + 3600}
		s, err := st.Summary(context.Background(), q)
		if err != nil || len(s.Rows) != 2 {
			t.Fatalf("%s: summary %+v, %v", stage, s, err)
		}
		for _, r := range s.Rows {
			in(stage+" summary "+r.Method+" p50", r.P50Ms, time.Millisecond)
			in(stage+" summary "+r.Method+" p90", r.P90Ms, time.Millisecond)
			in(stage+" summary "+r.Method+" p99", r.P99Ms, 50*time.Millisecond)
			if r.HistogramCalls != r.Calls {
				t.Errorf("%s: %d of %d calls in the histograms", stage, r.HistogramCalls, r.Calls)
			}
		}
		bs := mustSeries(t, st, SeriesQuery{Interface: greeter, Version: v1, Side: SideProvider, From: t0 + 1, To: t0 + 3600, Step: 3600})
		if len(bs) != 1 {
			t.Fatalf("%s: %d buckets", stage, len(bs))
		}
		in(stage+" series p99", bs[0].P99Ms, 50*time.Millisecond)
		in(stage+" series p50", bs[0].P50Ms, time.Millisecond)
		rows := mustQuery(t, st, Filter{Interface: greeter, Version: v1, Method: "add", Side: SideProvider, To: t0 + 3600})
		for _, r := range rows {
			in(stage+" row p50", r.P50Ms, time.Millisecond)
			if r.HistogramCalls != r.Calls() {
				t.Errorf("%s: row with %d calls, %d in its histogram", stage, r.Calls(), r.HistogramCalls)
			}
		}
		// Java's consumer: counts, average and maximum, no percentiles.
		j, err := st.Summary(context.Background(), SummaryQuery{By: ByApplication, Application: "java-app", From: t0 + 1, To: t0 + 3600})
		if err != nil || len(j.Rows) != 1 {
			t.Fatalf("%s: java summary %+v, %v", stage, j, err)
		}
		if r := j.Rows[0]; r.Calls != 4*60 || r.AvgMs != 3 || r.MaxElapsedMs == 0 || r.P50Ms != nil || r.P99Ms != nil || r.HistogramCalls != 0 {
			t.Errorf("%s: java's row %+v", stage, r)
		}
		// Greeter's consumers, Java's among ours: the percentiles are of
		// the calls that have a histogram.
		c, err := st.Summary(context.Background(), SummaryQuery{By: ByService, Interface: greeter, Version: v1, Side: SideConsumer, From: t0 + 1, To: t0 + 3600})
		if err != nil || len(c.Rows) != 1 || c.Rows[0].HistogramCalls != c.Rows[0].Calls-4*60 || c.Rows[0].P99Ms == nil {
			t.Errorf("%s: consumers of Greeter %+v, %v", stage, c, err)
		}
	}
	check("as reported")
	before, err := st.Summary(context.Background(), SummaryQuery{By: ByService, From: t0 + 1, To: t0 + 3600})
	if err != nil {
		t.Fatal(err)
	}
	clk.Set(t0 + 26*3600) // the first hour is older than 24 h: folded
	if err := st.Retain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st.Stats().RolledUp == 0 {
		t.Fatal("nothing rolled up")
	}
	check("rolled up")
	hourly := mustQuery(t, st, Filter{Interface: greeter, Version: v1, Method: "add", Side: SideProvider, To: t0 + 3600})
	if len(hourly) != 2 || hourly[0].Interval != 3600 || hourly[0].HistogramCalls != hourly[0].Calls() {
		t.Errorf("hourly rows %+v", hourly)
	}
	after, err := st.Summary(context.Background(), SummaryQuery{By: ByService, From: t0 + 1, To: t0 + 3600})
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "services of the hour before and after the rollup", after.Rows, before.Rows)
}

// Series and Query select one version and group; without, they add up
// every one.
func TestVersionAndGroupFilters(t *testing.T) {
	st := openTemp(t, newClock(t0+3600))
	made := deployment(1)
	mustInsert(t, st, made)
	for _, tc := range []struct {
		version, group *string
		keep           func(Row) bool
	}{
		{nil, nil, func(Row) bool { return true }},
		{str("1.0.0"), nil, func(r Row) bool { return r.Version == "1.0.0" }},
		{nil, str("gray"), func(r Row) bool { return r.Group == "gray" }},
		{str("2.0.0"), str(""), func(Row) bool { return false }},
		{str(""), nil, func(r Row) bool { return r.Version == "" }},
	} {
		var want int64
		for _, r := range made {
			if r.Interface == greeter && tc.keep(r) {
				want += r.Calls()
			}
		}
		name := fmt.Sprintf("version %v group %v", deref(tc.version), deref(tc.group))
		if got := calls(mustQuery(t, st, Filter{Interface: greeter, Version: tc.version, Group: tc.group})); got != want {
			t.Errorf("%s: query %d calls, want %d", name, got, want)
		}
		for _, q := range []SeriesQuery{{}, {Method: "sayHello"}, {Address: prov3.addr}, {Address: prov3.addr, Method: "sayHello"}} {
			q.Interface, q.Version, q.Group, q.From, q.To, q.Step = greeter, tc.version, tc.group, t0+1, t0+3600, 600
			var w int64
			for _, r := range made {
				if r.Interface == greeter && tc.keep(r) && (q.Method == "" || r.Method == q.Method) && (q.Address == "" || r.Address == q.Address) {
					w += r.Calls()
				}
			}
			if got := bucketCalls(mustSeries(t, st, q)); got != w {
				t.Errorf("%s: series %+v: %d calls, want %d", name, q, got, w)
			}
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "any"
	}
	return fmt.Sprintf("%q", *s)
}

// Long ranges are read from whole hours and days: a summary of two days
// widens to whole hours, of thirty days to whole days, and adds up what
// the rows of the range hold, hourly ones of folded hours included.
func TestSummaryOfLongRanges(t *testing.T) {
	clk := newClock(t0 + 50*3600)
	st := openTemp(t, clk)
	made := thirtyHours()
	insertInBatches(t, st, made, 1000)
	if err := st.Retain(context.Background()); err != nil { // hours before t0+26h folded
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name             string
		from, to         int64
		wantFrom, wantTo int64
	}{
		{"six hours", t0 + 1800 + 1, t0 + 6*3600 + 1800, t0 + 1800, t0 + 6*3600 + 1800},
		{"two days", t0 + 1800 + 1, t0 + 48*3600 - 1800, t0, t0 + 48*3600},
		{"thirty days", t0 + 1, t0 + 30*86400, t0, t0 + 30*86400},
	} {
		s, err := st.Summary(context.Background(), SummaryQuery{By: ByMethod, Interface: greeter, From: tc.from, To: tc.to})
		if err != nil {
			t.Fatal(err)
		}
		if s.From != tc.wantFrom || s.To != tc.wantTo {
			t.Errorf("%s: covers (%d, %d], want (%d, %d]", tc.name, s.From-t0, s.To-t0, tc.wantFrom-t0, tc.wantTo-t0)
		}
		var got int64
		for _, r := range s.Rows {
			got += r.Calls
		}
		// Folded hours count when they end in the range, as in Query.
		if want := calls(mustQuery(t, st, Filter{Interface: greeter, From: s.From + 1, To: s.To})); got != want {
			t.Errorf("%s: %d calls, the rows %d", tc.name, got, want)
		}
	}
}

// cover reads whole days, then whole hours, then minutes.
func TestCover(t *testing.T) {
	const h, d = 3600, 86400
	for _, tc := range []struct {
		first, last, within int64
		want                []piece
	}{
		{60, 60, d, []piece{{60, 60, 60}}},
		{60, h, d, []piece{{h, h, h}}},
		{60, h, 600, []piece{{60, 60, h}}},
		{1860, 3*h + 600, d, []piece{{60, 1860, h}, {h, 2 * h, 3 * h}, {60, 3*h + 60, 3*h + 600}}},
		{h + 60, 3 * d, d, []piece{{h, 2 * h, d}, {d, 2 * d, 3 * d}}},
		{60, 3 * d, 2 * h, []piece{{h, h, 3 * d}}},
		{60, 3 * d, 600, []piece{{60, 60, 3 * d}}},
		{120, 180, d, []piece{{60, 120, 180}}},
	} {
		if got := cover(tc.first, tc.last, tc.within); !slices.Equal(got, tc.want) {
			t.Errorf("cover(%d, %d, %d) = %v, want %v", tc.first, tc.last, tc.within, got, tc.want)
		}
	}
}

func TestSummaryRefusesBadQueries(t *testing.T) {
	st := openTemp(t, newClock(t0+3600))
	for _, tc := range []struct {
		q    SummaryQuery
		want string
	}{
		{SummaryQuery{From: 1, To: 2}, `by "" is not one of application, consumer, edge, method, provider, service`},
		{SummaryQuery{By: ByMethod, From: 1, To: 2}, "needs an interface"},
		{SummaryQuery{By: ByEdge, Side: SideProvider, From: 1, To: 2}, "edges are the consumers' reports"},
		{SummaryQuery{By: ByService, Side: "both", From: 1, To: 2}, "side"},
		{SummaryQuery{By: ByService}, "from and to are required"},
		{SummaryQuery{By: ByService, From: 3, To: 2}, "after"},
	} {
		_, err := st.Summary(context.Background(), tc.q)
		if !errors.Is(err, ErrBadQuery) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Summary(%+v) = %v, want ErrBadQuery with %q", tc.q, err, tc.want)
		}
	}
}
