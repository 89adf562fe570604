package store

import (
	"fmt"
	"net/url"
	"strconv"
)

// ParseFilter reads a Filter from the query of
// GET /api/v1/stats?interface=&method=&side=provider|consumer&address=&from=&to=&limit=
// (from and to in Unix seconds; all but interface optional). Its errors
// wrap ErrBadQuery and name the parameter.
func ParseFilter(v url.Values) (Filter, error) {
	f := Filter{Interface: v.Get("interface"), Method: v.Get("method"), Side: v.Get("side"), Address: v.Get("address")}
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
	q := SeriesQuery{Interface: v.Get("interface"), Method: v.Get("method"), Side: v.Get("side"), Address: v.Get("address")}
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
