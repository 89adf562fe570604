package store

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const greeter = "org.example.Greeter"

// twoMinutes is what the little deployment reports for two minutes: both
// providers and the consumer calling both, two methods of Greeter, and one
// method of another service.
func twoMinutes() []Row {
	var rows []Row
	for i, t := range []int64{t0 + 60, t0 + 120} {
		k := int64(i + 1)
		rows = append(rows,
			report(prov1, cons1.addr, greeter, "sayHello", t, 10*k, 1),
			report(prov1, cons1.addr, greeter, "add", t, 20*k, 0),
			report(prov2, cons1.addr, greeter, "sayHello", t, 30*k, 2),
			report(cons1, prov1.addr, greeter, "sayHello", t, 10*k, 1),
			report(cons1, prov1.addr, greeter, "add", t, 20*k, 0),
			report(cons1, prov2.addr, greeter, "sayHello", t, 30*k, 2),
			report(prov1, cons1.addr, "org.example.Other", "sayHello", t, 5, 5),
		)
	}
	return rows
}

func TestQueryReturnsWhatWasStored(t *testing.T) {
	st := openTemp(t, newClock(t0+3600))
	all := twoMinutes()
	if n := mustInsert(t, st, all); n != len(all) {
		t.Fatalf("stored %d rows, want %d", n, len(all))
	}
	for _, tc := range []struct {
		name string
		f    Filter
		keep func(Row) bool
	}{
		{"interface", Filter{Interface: greeter}, func(r Row) bool { return r.Interface == greeter }},
		{"other interface", Filter{Interface: "org.example.Other"}, func(r Row) bool { return r.Interface == "org.example.Other" }},
		{"unknown interface", Filter{Interface: "org.example.Nobody"}, func(Row) bool { return false }},
		{"method", Filter{Interface: greeter, Method: "add"}, func(r Row) bool { return r.Interface == greeter && r.Method == "add" }},
		{"provider side", Filter{Interface: greeter, Side: SideProvider}, func(r Row) bool { return r.Interface == greeter && r.Side == SideProvider }},
		{"consumer side", Filter{Interface: greeter, Side: SideConsumer}, func(r Row) bool { return r.Interface == greeter && r.Side == SideConsumer }},
		{"address, both sides", Filter{Interface: greeter, Address: prov2.addr}, func(r Row) bool { return r.Interface == greeter && r.Address == prov2.addr }},
		{"from", Filter{Interface: greeter, From: t0 + 61}, func(r Row) bool { return r.Interface == greeter && r.Time >= t0+61 }},
		{"to", Filter{Interface: greeter, To: t0 + 60}, func(r Row) bool { return r.Interface == greeter && r.Time <= t0+60 }},
		{"from and to, inclusive", Filter{Interface: greeter, From: t0 + 60, To: t0 + 60}, func(r Row) bool { return r.Interface == greeter && r.Time == t0+60 }},
		{"everything", Filter{Interface: greeter, Method: "sayHello", Side: SideConsumer, Address: prov1.addr, From: t0 + 120, To: t0 + 120},
			func(r Row) bool {
				return r.Interface == greeter && r.Method == "sayHello" && r.Side == SideConsumer && r.Address == prov1.addr && r.Time == t0+120
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mustQuery(t, st, tc.f)
			if got == nil {
				t.Fatal("nil result; want an empty list, which encodes as []")
			}
			var want []Row
			for _, r := range all {
				if tc.keep(r) {
					want = append(want, r)
				}
			}
			if !slices.IsSortedFunc(got, func(a, b Row) int { return int(a.Time - b.Time) }) {
				t.Errorf("rows not oldest first")
			}
			byKey := func(a, b Row) int { return strings.Compare(rowKey(a), rowKey(b)) }
			slices.SortFunc(got, byKey)
			slices.SortFunc(want, byKey)
			if len(got) != len(want) {
				t.Fatalf("got %d rows, want %d", len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("row %d:\n got %+v\nwant %+v", i, got[i], want[i])
				}
			}
		})
	}
	if got := mustQuery(t, st, Filter{Interface: greeter, Limit: 3}); len(got) != 3 || got[2].Time != t0+60 {
		t.Errorf("limit 3: %d rows, the last at %d", len(got), got[len(got)-1].Time)
	}
}

func TestResentReportIsNotCountedTwice(t *testing.T) {
	ctx := context.Background()
	st := openTemp(t, newClock(t0+3600))
	first := []Row{
		report(prov1, cons1.addr, greeter, "sayHello", t0+60, 10, 1),
		report(prov1, cons1.addr, greeter, "add", t0+60, 20, 0),
	}
	mustInsert(t, st, first)

	// The node did not get the answer and sends the same report again,
	// then one with figures changed (a buggy reporter): the first stays.
	again := slices.Clone(first)
	changed := slices.Clone(first)
	changed[0].Success = 999
	for _, batch := range [][]Row{again, changed} {
		if n, err := st.Insert(ctx, batch); err != nil || n != 0 {
			t.Fatalf("resent: stored %d, %v; want 0", n, err)
		}
	}
	// A batch mixing a resent row, a new one, and a row given twice.
	next := report(prov1, cons1.addr, greeter, "sayHello", t0+120, 7, 0)
	mixed := []Row{first[1], next, next}
	if n := mustInsert(t, st, mixed); n != 1 {
		t.Fatalf("mixed batch: stored %d, want 1", n)
	}
	// Enough rows to span several INSERT statements, every other one resent.
	var big, bigNew []Row
	for i := range 3<<chunkBits + 5 {
		r := report(prov2, cons1.addr, greeter, "add", t0+180+int64(i)*60, int64(i), 1)
		if i%2 == 0 {
			mustInsert(t, st, []Row{r})
		} else {
			bigNew = append(bigNew, r)
		}
		big = append(big, r)
	}
	if n := mustInsert(t, st, big); n != len(bigNew) {
		t.Fatalf("big batch: stored %d, want %d", n, len(bigNew))
	}

	made := calls(first) + next.Calls() + calls(big)
	if got := calls(mustQuery(t, st, Filter{Interface: greeter})); got != made {
		t.Errorf("query: %d calls, made %d", got, made)
	}
	end := t0 + 180 + int64(len(big))*60
	if got := bucketCalls(mustSeries(t, st, SeriesQuery{Interface: greeter, From: t0, To: end})); got != made {
		t.Errorf("series: %d calls, made %d", got, made)
	}
	got := mustQuery(t, st, Filter{Interface: greeter, Method: "sayHello", To: t0 + 60})
	if len(got) != 1 || got[0].Success != 10 {
		t.Errorf("resent row with other figures replaced the first: %+v", got)
	}
	s := st.Stats()
	if want := int64(len(first) + 1 + len(big)); s.RowsStored != want {
		t.Errorf("Stats().RowsStored = %d, want %d", s.RowsStored, want)
	}
	if want := int64(2*len(first) + 2 + (len(big) - len(bigNew))); s.Duplicates != want {
		t.Errorf("Stats().Duplicates = %d, want %d", s.Duplicates, want)
	}
}

// TestSumsEqualCallsMade stores a random hour and a half of a deployment in
// random batches, some sent twice, and checks every way of reading it back
// against the calls made.
func TestSumsEqualCallsMade(t *testing.T) {
	st := openTemp(t, newClock(t0+2*3600))
	rng := rand.New(rand.NewPCG(1, 2))
	methods := []string{"sayHello", "add", "echoMap"}
	var made []Row
	for m := range int64(90) {
		tm := t0 + (m+1)*60
		for _, meth := range methods {
			for _, p := range []node{prov1, prov2} {
				s, f := rng.Int64N(50), rng.Int64N(3)
				made = append(made, report(p, cons1.addr, greeter, meth, tm, s, f), report(cons1, p.addr, greeter, meth, tm, s, f))
			}
		}
	}
	rest := slices.Clone(made)
	rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	var sent [][]Row
	for len(rest) > 0 {
		n := min(len(rest), 1+rng.IntN(200))
		batch := rest[:n]
		rest = rest[n:]
		mustInsert(t, st, batch)
		sent = append(sent, batch)
		if rng.IntN(4) == 0 { // an earlier batch sent again
			mustInsert(t, st, sent[rng.IntN(len(sent))])
		}
	}
	if got := st.Stats().RowsStored; got != int64(len(made)) {
		t.Fatalf("stored %d rows, made %d", got, len(made))
	}

	for _, q := range []SeriesQuery{
		{Interface: greeter},
		{Interface: greeter, Side: SideProvider},
		{Interface: greeter, Side: SideConsumer, Method: "add"},
		{Interface: greeter, Method: "echoMap"},
		{Interface: greeter, Address: prov1.addr},
		{Interface: greeter, Address: prov2.addr, Side: SideConsumer},
		{Interface: greeter, Address: prov2.addr, Method: "sayHello", Side: SideProvider},
	} {
		f := Filter{Interface: q.Interface, Method: q.Method, Side: q.Side, Address: q.Address}
		var want []Row
		for _, r := range made {
			if (f.Method == "" || r.Method == f.Method) && (f.Side == "" || r.Side == f.Side) && (f.Address == "" || r.Address == f.Address) {
				want = append(want, r)
			}
		}
		if got := calls(mustQuery(t, st, f)); got != calls(want) {
			t.Errorf("query %+v: %d calls, made %d", f, got, calls(want))
		}
		for _, step := range []int64{60, 300, 3600} {
			q.From, q.To, q.Step = t0+1, t0+90*60, step
			bs := mustSeries(t, st, q)
			// Expected buckets, computed from the rows made.
			exp := map[int64]*Bucket{}
			for _, r := range want {
				end := (r.Time + step - 1) / step * step
				b := exp[end]
				if b == nil {
					b = &Bucket{Time: end}
					exp[end] = b
				}
				b.Calls += r.Calls()
				b.Success += r.Success
				b.Failure += r.Failure
				b.Input += r.Input
				b.Output += r.Output
				b.ElapsedMs += r.ElapsedMs
				b.MaxElapsedMs = max(b.MaxElapsedMs, r.MaxElapsedMs)
				b.MaxConcurrent = max(b.MaxConcurrent, r.MaxConcurrent)
			}
			if wantN := int((t0+90*60+step-1)/step - (t0+1+step-1)/step + 1); len(bs) != wantN {
				t.Fatalf("series %+v: %d buckets, want %d", q, len(bs), wantN)
			}
			for _, b := range bs {
				w := Bucket{Time: b.Time}
				if e := exp[b.Time]; e != nil {
					w = *e
				}
				if b != w {
					t.Errorf("series %+v: bucket\n got %+v\nwant %+v", q, b, w)
				}
			}
		}
	}
}

func TestInsertRefusesInvalidRows(t *testing.T) {
	ctx := context.Background()
	st := openTemp(t, newClock(t0+3600))
	good := report(prov1, cons1.addr, greeter, "sayHello", t0+60, 1, 0)
	for _, tc := range []struct {
		name string
		edit func(*Row)
	}{
		{"no time", func(r *Row) { r.Time = 0 }},
		{"time past 9999", func(r *Row) { r.Time = math.MaxInt64 }},
		{"no interval", func(r *Row) { r.Interval = 0 }},
		{"interval over an hour", func(r *Row) { r.Interval = 3601 }},
		{"bad side", func(r *Row) { r.Side = "both" }},
		{"no node", func(r *Row) { r.Node = "" }},
		{"no interface", func(r *Row) { r.Interface = "" }},
		{"no method", func(r *Row) { r.Method = "" }},
		{"negative success", func(r *Row) { r.Success = -1 }},
		{"negative max output", func(r *Row) { r.MaxOutput = -1 }},
		{"NaN concurrency", func(r *Row) { r.Concurrent = math.NaN() }},
		{"infinite concurrency", func(r *Row) { r.Concurrent = math.Inf(1) }},
		{"huge node", func(r *Row) { r.Node = strings.Repeat("n", maxText+1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := good
			tc.edit(&bad)
			if err := bad.Validate(); !errors.Is(err, ErrInvalidRow) {
				t.Fatalf("Validate: %v, want ErrInvalidRow", err)
			}
			n, err := st.Insert(ctx, []Row{good, bad})
			if !errors.Is(err, ErrInvalidRow) || n != 0 || !strings.Contains(err.Error(), "row 1 of 2") {
				t.Fatalf("Insert: %d, %v; want 0 and ErrInvalidRow naming row 1", n, err)
			}
		})
	}
	if got := mustQuery(t, st, Filter{Interface: greeter}); len(got) != 0 {
		t.Fatalf("a refused batch stored %d rows", len(got))
	}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestRowJSONHasTheAPIFields(t *testing.T) {
	b, err := json.Marshal([]Row{report(prov1, cons1.addr, greeter, "sayHello", t0+60, 10, 2)})
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"time": float64(t0 + 60), "side": "provider", "application": "greeter-app", "address": prov1.addr,
		"success": 10.0, "failure": 2.0, "input": 1200.0, "output": 500.0, "elapsed_ms": 36.0,
		"max_elapsed_ms": float64(10 + (t0+60)%97), "max_concurrent": float64(1 + (t0+60)%13)}
	for k, v := range want {
		if got[0][k] != v {
			t.Errorf("%s = %v, want %v (in %s)", k, got[0][k], v, b)
		}
	}
	var back []Row
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back[0], report(prov1, cons1.addr, greeter, "sayHello", t0+60, 10, 2)) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}

func TestStatsCountInserts(t *testing.T) {
	st := openTemp(t, newClock(t0+3600))
	rows := twoMinutes()
	mustInsert(t, st, rows)
	mustInsert(t, st, rows[:3])
	s := st.Stats()
	if s.RowsStored != int64(len(rows)) || s.Duplicates != 3 || s.InsertBatches != 2 || s.LastInsertRows != 3 {
		t.Errorf("stats %+v", s)
	}
	if s.InsertTime <= 0 || s.LastInsertTime <= 0 || s.LastInsertTime > s.InsertTime || s.DBBytes <= 0 {
		t.Errorf("times and size: %+v", s)
	}
}
