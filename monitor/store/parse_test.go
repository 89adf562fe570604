package store

import (
	"context"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func TestParseFilter(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  Filter
		err   string
	}{
		{"interface=org.example.Greeter", Filter{Interface: "org.example.Greeter"}, ""},
		{"interface=I&method=m&side=consumer&address=10.0.0.1%3A20880&from=100&to=200&limit=5",
			Filter{Interface: "I", Method: "m", Side: "consumer", Address: "10.0.0.1:20880", From: 100, To: 200, Limit: 5}, ""},
		{"interface=I&side=provider&to=200", Filter{Interface: "I", Side: "provider", To: 200}, ""},
		{"interface=I&version=1.0.0&group=", Filter{Interface: "I", Version: str("1.0.0"), Group: str("")}, ""},
		{"method=m", Filter{}, "interface is required"},
		{"interface=I&side=both", Filter{}, `side "both"`},
		{"interface=I&from=yesterday", Filter{}, `from="yesterday"`},
		{"interface=I&to=-5", Filter{}, `to="-5"`},
		{"interface=I&from=300&to=200", Filter{}, "from 300 is after to 200"},
		{"interface=I&from=99999999999999", Filter{}, "Unix seconds in 0.."},
		{"interface=I&limit=x", Filter{}, `limit="x"`},
	} {
		t.Run(tc.query, func(t *testing.T) {
			v, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseFilter(v)
			if tc.err != "" {
				if !errors.Is(err, ErrBadQuery) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v; want ErrBadQuery with %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestParseSeriesQuery(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  SeriesQuery
		err   string
	}{
		{"interface=I&from=100&to=200", SeriesQuery{Interface: "I", From: 100, To: 200, Step: 60}, ""},
		{"interface=I&method=m&side=provider&address=a&from=100&to=86500&step=3600",
			SeriesQuery{Interface: "I", Method: "m", Side: "provider", Address: "a", From: 100, To: 86500, Step: 3600}, ""},
		{"interface=I&group=gray&from=100&to=200", SeriesQuery{Interface: "I", Group: str("gray"), From: 100, To: 200, Step: 60}, ""},
		{"interface=I&from=100", SeriesQuery{}, "from and to are required"},
		{"interface=I&from=100&to=200&step=90", SeriesQuery{}, "step 90 s is not a positive multiple of 60"},
		{"interface=I&from=1&to=2592000&step=60", SeriesQuery{}, "more than 10000 buckets"},
		{"from=1&to=2", SeriesQuery{}, "interface is required"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			v, _ := url.ParseQuery(tc.query)
			got, err := ParseSeriesQuery(v)
			if tc.err != "" {
				if !errors.Is(err, ErrBadQuery) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v; want ErrBadQuery with %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestParseSummaryQuery(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  SummaryQuery
		err   string
	}{
		{"by=service&from=100&to=200", SummaryQuery{By: "service", From: 100, To: 200}, ""},
		{"by=method&interface=I&method=m&side=provider&version=1.0.0&group=&application=a&host=10.0.0.1&from=100&to=200",
			SummaryQuery{By: "method", Interface: "I", Method: "m", Side: "provider", Version: str("1.0.0"), Group: str(""),
				Application: "a", Host: "10.0.0.1", From: 100, To: 200}, ""},
		{"by=method&from=100&to=200", SummaryQuery{}, "needs an interface"},
		{"by=everything&from=100&to=200", SummaryQuery{}, `by "everything"`},
		{"by=edge&from=100", SummaryQuery{}, "from and to are required"},
		{"by=edge&from=x&to=1", SummaryQuery{}, `from="x"`},
	} {
		t.Run(tc.query, func(t *testing.T) {
			v, _ := url.ParseQuery(tc.query)
			got, err := ParseSummaryQuery(v)
			if tc.err != "" {
				if !errors.Is(err, ErrBadQuery) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v; want ErrBadQuery with %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// FuzzStatsQuery feeds query strings of GET /api/v1/stats (and the series
// and traffic parameters) through the parsers and, when they accept them,
// through Query, Series and Summary on a real store: a query is either
// refused with ErrBadQuery or answered, never anything else.
func FuzzStatsQuery(f *testing.F) {
	for _, s := range []string{
		"interface=org.example.Greeter",
		"interface=org.example.Greeter&method=sayHello&side=provider&from=1793491200&to=1793494800",
		"interface=org.example.Greeter&address=10.0.0.1%3A20880&from=1793491201&to=1793577600&step=3600",
		"interface=I&from=1&to=253402300799&step=253402300740",
		"interface=%27%3B+DROP+TABLE+raw%3B--&side=consumer",
		"interface=I&limit=3&from=0&to=0",
		"interface=I&from=100&to=50",
		"interface=I&step=-60&from=1&to=2",
		"by=edge&from=1793491200&to=1793494800&version=1.0.0&group=",
		"by=provider&interface=org.example.Greeter&host=10.0.0.9&from=1&to=253402300799",
		"by=method&interface=org.example.Greeter&host=10.0.0.1%3A20880&method=add&from=1793491201&to=1793491320",
	} {
		f.Add(s)
	}
	st := openTemp(f, newClock(t0+3600))
	mustInsert(f, st, twoMinutes())
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, query string) {
		v, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		if flt, err := ParseFilter(v); err != nil {
			if !errors.Is(err, ErrBadQuery) {
				t.Fatalf("ParseFilter(%q): %v is not ErrBadQuery", query, err)
			}
		} else if _, err := st.Query(ctx, flt); err != nil {
			t.Fatalf("Query(%+v) of an accepted filter: %v", flt, err)
		}
		if q, err := ParseSeriesQuery(v); err != nil {
			if !errors.Is(err, ErrBadQuery) {
				t.Fatalf("ParseSeriesQuery(%q): %v is not ErrBadQuery", query, err)
			}
		} else if bs, err := st.Series(ctx, q); err != nil || len(bs) == 0 || len(bs) > MaxBuckets {
			t.Fatalf("Series(%+v) of an accepted query: %d buckets, %v", q, len(bs), err)
		}
		if q, err := ParseSummaryQuery(v); err != nil {
			if !errors.Is(err, ErrBadQuery) {
				t.Fatalf("ParseSummaryQuery(%q): %v is not ErrBadQuery", query, err)
			}
		} else if s, err := st.Summary(ctx, q); err != nil || s.Rows == nil {
			t.Fatalf("Summary(%+v) of an accepted query: %+v, %v", q, s, err)
		}
	})
}

// FuzzInsertRow stores a row built from arbitrary text and numbers, as a
// reporter on the network might send: Validate refuses it, or Insert stores
// it once and Query returns it unchanged.
func FuzzInsertRow(f *testing.F) {
	f.Add("10.0.0.1:20880#1#1", "provider", "org.example.Greeter", "sayHello", "10.0.0.1:20880", "10.0.0.9", "", "1.0.0", int64(1793491260), int64(60), int64(10), int64(1), 2.5)
	f.Add("n\x00ode", "consumer", "I\u00e9\u4e16", "m", "", "", "g'; --", "v", int64(1), int64(3600), int64(0), int64(0), 0.0)
	f.Add("n", "provider", "I", "m", "a", "c", "", "", int64(-1), int64(60), int64(-5), int64(1), -1.0)
	st := openTemp(f, newClock(t0))
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, nodeID, side, iface, method, address, consumer, group, version string, tm, interval, success, failure int64, concurrent float64) {
		r := Row{Time: tm, Interval: interval, Side: side, Application: "app", Node: nodeID, Interface: iface, Group: group, Version: version,
			Method: method, Address: address, Consumer: consumer, Success: success, Failure: failure, Concurrent: concurrent}
		if err := r.Validate(); err != nil {
			if n, err2 := st.Insert(ctx, []Row{r}); n != 0 || !errors.Is(err2, ErrInvalidRow) {
				t.Fatalf("Insert of an invalid row (%v): %d, %v", err, n, err2)
			}
			return
		}
		if _, err := st.Insert(ctx, []Row{r}); err != nil {
			t.Fatalf("Insert(%+v): %v", r, err)
		}
		if n, err := st.Insert(ctx, []Row{r}); n != 0 || err != nil {
			t.Fatalf("second Insert(%+v): %d, %v", r, n, err)
		}
		rows, err := st.Query(ctx, Filter{Interface: iface, Method: method, Side: side, Address: address, From: tm, To: tm})
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range rows {
			if got.Node == nodeID && got.Consumer == consumer && got.Group == group && got.Version == version {
				return // the first insert of this key may have been an earlier input's
			}
		}
		t.Fatalf("row %+v not found in %+v", r, rows)
	})
}
