package store

import (
	"fmt"
	"strings"
)

// Beside the rows, Insert keeps their sums per span (a minute, an hour, a
// day) in three tables of increasing detail (sumTables). A read takes the
// first source that has every column it filters and groups by (the rows
// themselves when no table has), and covers its time range with as few
// sums as it can: whole days, whole hours, and minutes at the edges
// (cover). So a day of every service is a few hundred sums per group to
// add up, whatever the number of nodes and intervals.
//
// A sum of span s ending at time E (a multiple of s) holds the rows whose
// interval ended in (E-s, E]. Minute sums go with the rows when their hour
// is folded (retain.go); a range that reaches into a folded hour then
// counts that hour's sum when the hour ends in the range, as Query counts
// hourly rows.

const (
	minute = 60
	day    = 86400
)

// spans are the sums' lengths, shortest first.
var spans = [...]int64{minute, hour, day}

// source is where a read adds up rows from: a sum table, or the rows
// themselves (raw and hourly, with their streams).
type source struct {
	table string   // "" = the rows
	cols  []string // its text columns besides the interface: the sums' key
}

// sumTables are the sum tables, the least detailed first.
var sumTables = []source{
	{"service_sums", []string{"side", "version", "grp", "application"}},
	{"method_sums", []string{"side", "method", "version", "grp", "application"}},
	{"peer_sums", []string{"side", "version", "grp", "application", "address", "consumer"}},
}

// rowSource is the rows, for what no sum table has (a method and an
// address together).
var rowSource = source{cols: []string{"side", "method", "version", "grp", "application", "address", "consumer"}}

// sourceFor is the first source that has every column in cols.
func sourceFor(cols ...string) source {
	for _, t := range sumTables {
		if t.has(cols...) {
			return t
		}
	}
	return rowSource
}

func (s source) has(cols ...string) bool {
	for _, c := range cols {
		found := false
		for _, have := range s.cols {
			found = found || have == c
		}
		if !found {
			return false
		}
	}
	return true
}

// column is the value of a key column of r.
func column(r *Row, name string) string {
	switch name {
	case "side":
		return r.Side
	case "method":
		return r.Method
	case "version":
		return r.Version
	case "grp":
		return r.Group
	case "application":
		return r.Application
	case "address":
		return r.Address
	case "consumer":
		return r.Consumer
	}
	panic("store: no column " + name)
}

// piece is part of a time range read from sums of one span: those ending
// in [from, to].
type piece struct{ span, from, to int64 }

// cover splits the minutes ending in [first, last] (multiples of a
// minute) into pieces of the longest spans that fit whole, using only the
// spans that divide within (so that each sum lies in one bucket of that
// length).
func cover(first, last, within int64) []piece {
	var out []piece
	var split func(first, last int64, n int)
	split = func(first, last int64, n int) {
		if first > last {
			return
		}
		s := spans[n]
		if s == minute {
			out = append(out, piece{minute, first, last})
			return
		}
		if within%s != 0 {
			split(first, last, n-1)
			return
		}
		// Sums of span s that lie wholly in the range: those ending in
		// [lo, hi].
		lo, hi := ceilTo(first-minute+s, s), last/s*s
		if lo > hi {
			split(first, last, n-1)
			return
		}
		split(first, lo-s, n-1)
		out = append(out, piece{s, lo, hi})
		split(hi+minute, last, n-1)
	}
	split(first, last, len(spans)-1)
	return out
}

// scope is what a read filters on; empty fields match everything.
type scope struct {
	iface          int64 // 0 = every interface
	side, method   string
	version, group *string
	application    string
	address        string // the provider's host:port
	host           string // an IP or host:port, of the provider or of the consumer
	// The minutes ending in [from, to], read from sums whose spans divide
	// within.
	from, to, within int64
}

// columns are the key columns the scope filters on.
func (sc scope) columns() []string {
	var cols []string
	for _, c := range []struct {
		set bool
		col string
	}{{sc.side != "", "side"}, {sc.method != "", "method"}, {sc.version != nil, "version"}, {sc.group != nil, "grp"},
		{sc.application != "", "application"}, {sc.address != "", "address"}, {sc.host != "", "address"}, {sc.host != "", "consumer"}} {
		if c.set {
			cols = append(cols, c.col)
		}
	}
	return cols
}

// selectFrom is a SELECT of src's rows in scope, one UNION ALL member
// per piece of the range, with the columns interface_id, time, src's
// text columns, success, failure, input, output, elapsed, max_elapsed,
// max_concurrent, last and histogram.
func (src source) selectFrom(sc scope) (string, []any) {
	var parts []string
	var args []any
	for _, p := range cover(sc.from, sc.to, sc.within) {
		if src.table == "" {
			// Rows as reported, and hourly rows of folded hours, whose
			// interval (hour) ended in the piece's span.
			for _, tbl := range []string{"raw", "hourly"} {
				q, a := src.member(sc, tbl+" t JOIN streams s ON s.id = t.stream_id", "s.", "t.time > ? AND t.time <= ?", p.from-p.span, p.to)
				parts, args = append(parts, q), append(args, a...)
			}
			continue
		}
		q, a := src.member(sc, src.table+" t", "t.", "t.span = ? AND t.time BETWEEN ? AND ?", p.span, p.from, p.to)
		parts, args = append(parts, q), append(args, a...)
		if p.span == minute {
			// Minute sums go when their hour is folded: read the hour
			// instead when it ends in the piece.
			q, a := src.member(sc, src.table+" t JOIN interfaces i ON i.id = t.interface_id", "t.",
				"t.span = ? AND t.time BETWEEN ? AND ? AND t.time <= i.rolled_through", hour, p.from, p.to)
			parts, args = append(parts, q), append(args, a...)
		}
	}
	return strings.Join(parts, " UNION ALL "), args
}

// member is one SELECT of selectFrom: from `from`, whose key columns have
// the prefix col, with the time condition cond and its arguments.
func (src source) member(sc scope, from, col, cond string, condArgs ...any) (string, []any) {
	var b strings.Builder
	b.WriteString("SELECT t.interface_id AS interface_id, t.time AS time")
	for _, c := range src.cols {
		fmt.Fprintf(&b, ", %s%s AS %s", col, c, c)
	}
	b.WriteString(", t.success AS success, t.failure AS failure, t.input AS input, t.output AS output, t.elapsed AS elapsed," +
		" t.max_elapsed AS max_elapsed, t.max_concurrent AS max_concurrent")
	if src.table == "" {
		b.WriteString(", t.time AS last")
	} else {
		b.WriteString(", t.last AS last")
	}
	b.WriteString(", t.histogram AS histogram FROM " + from + " WHERE ")
	var args []any
	if sc.iface != 0 {
		b.WriteString("t.interface_id = ?")
		args = append(args, sc.iface)
	} else {
		// One range of the key per interface, rather than a scan.
		b.WriteString("t.interface_id IN (SELECT id FROM interfaces)")
	}
	b.WriteString(" AND " + cond)
	args = append(args, condArgs...)
	eq := func(c string, v any) {
		fmt.Fprintf(&b, " AND %s%s = ?", col, c)
		args = append(args, v)
	}
	if sc.side != "" {
		eq("side", sc.side)
	}
	if sc.method != "" {
		eq("method", sc.method)
	}
	if sc.version != nil {
		eq("version", *sc.version)
	}
	if sc.group != nil {
		eq("grp", *sc.group)
	}
	if sc.application != "" {
		eq("application", sc.application)
	}
	if sc.address != "" {
		eq("address", sc.address)
	}
	if sc.host != "" {
		// The host, or host:port, of the provider or of the consumer.
		fmt.Fprintf(&b, " AND (%[1]saddress = ? OR %[1]sconsumer = ? OR substr(%[1]saddress, 1, length(?) + 1) = ? OR substr(%[1]sconsumer, 1, length(?) + 1) = ?)", col)
		args = append(args, sc.host, sc.host, sc.host, sc.host+":", sc.host, sc.host+":")
	}
	return b.String(), args
}
