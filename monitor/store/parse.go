package store

import (
	"fmt"
	"net/url"
	"strconv"
)

// ParseFilter reads a Filter from the query of
// GET /api/v1/stats?interface=&method=&side=provider|consumer&address=&version=&group=&from=&to=&limit=
// (from and to in Unix seconds; all but interface optional; version= and
// group= present but empty select none). Its errors wrap ErrBadQuery and
// name the parameter.
func ParseFilter(v url.Values) (Filter, error) {
	f := Filter{Interface: v.Get("interface"), Method: v.Get("method"), Side: v.Get("side"), Address: v.Get("address"),
		Version: optional(v, "version"), Group: optional(v, "group")}
	var limit int64
	for _, p := range []struct {
		name string
		dst  *int64
	}{{"from", &f.From}, {"to", &f.To}, {"limit", &limit}} {
		if err := parseInt(v, p.name, p.dst); err != nil {
			return Filter{}, err
		}
	}
	if limit > 1<<31 {
		limit = 1 << 31
	}
	f.Limit = int(limit)
	if err := f.check(); err != nil {
		return Filter{}, err
	}
	return f, nil
}

// ParseSeriesQuery reads a SeriesQuery from the same parameters as
// ParseFilter, with step (seconds) instead of limit; from and to are
// required.
func ParseSeriesQuery(v url.Values) (SeriesQuery, error) {
	q := SeriesQuery{Interface: v.Get("interface"), Method: v.Get("method"), Side: v.Get("side"), Address: v.Get("address"),
		Version: optional(v, "version"), Group: optional(v, "group")}
	for _, p := range []struct {
		name string
		dst  *int64
	}{{"from", &q.From}, {"to", &q.To}, {"step", &q.Step}} {
		if err := parseInt(v, p.name, p.dst); err != nil {
			return SeriesQuery{}, err
		}
	}
	q, err := q.check()
	if err != nil {
		return SeriesQuery{}, err
	}
	return q, nil
}

// ParseSummaryQuery reads a SummaryQuery from the query of
// GET /api/v1/traffic?by=&interface=&method=&side=&version=&group=&application=&host=&from=&to=
// (by, from and to required; from and to in Unix seconds).
func ParseSummaryQuery(v url.Values) (SummaryQuery, error) {
	q := SummaryQuery{By: v.Get("by"), Interface: v.Get("interface"), Method: v.Get("method"), Side: v.Get("side"),
		Version: optional(v, "version"), Group: optional(v, "group"), Application: v.Get("application"), Host: v.Get("host")}
	for _, p := range []struct {
		name string
		dst  *int64
	}{{"from", &q.From}, {"to", &q.To}} {
		if err := parseInt(v, p.name, p.dst); err != nil {
			return SummaryQuery{}, err
		}
	}
	if err := q.check(); err != nil {
		return SummaryQuery{}, err
	}
	return q, nil
}

// optional is the parameter's value when it is present, even empty
// (version= is "no version"); nil when absent (any).
func optional(v url.Values, name string) *string {
	if !v.Has(name) {
		return nil
	}
	s := v.Get(name)
	return &s
}

func parseInt(v url.Values, name string, dst *int64) error {
	s := v.Get(name)
	if s == "" {
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("%w: %s=%q is not a non-negative integer", ErrBadQuery, name, s)
	}
	*dst = n
	return nil
}
