package store

import (
	"fmt"
	"slices"
	"strings"
)

// Beside the rows, Insert keeps their sums per span (a minute, an hour, a
// day) at six levels of detail (levels), each keyed by an id of sum_keys
// as rows are by a stream's. A read takes the least detailed level that
// has every column it filters and groups by (the rows themselves when
// none has), adds up its sums per key, and only then groups the keys'
// totals by their columns; it covers its time range with as few sums as
// it can: whole days, whole hours, and minutes at the edges (cover). So
// the last five minutes of every service are five sums per service and
// side, and a day of them a few dozen, whatever the number of nodes,
// methods and callers.
//
// A sum of span s ending at time E (a multiple of s) holds the rows whose
// interval ended in (E-s, E]. Sums are clustered by level, span and
// time: a batch writes at a few places, and a read of every interface is
// one range. Once their hour is older than the raw retention minute sums
// no longer answer (sum_rollup.rolled_through, retain.go), and go: a
// range that reaches into such an hour counts that hour's sum when the
// hour ends in the range, as Query counts hourly rows.

const (
	minute = 60
	day    = 86400
)

// spans are the sums' lengths, shortest first.
var spans = [...]int64{minute, hour, day}

// level is one detail of the sums: the columns of the rows they are
// keyed by.
type level struct {
	id int // sums.level and sum_keys.level
	// across interfaces: its sums add up every interface's rows
	// (interface_id 0); else each interface's apart.
	across bool
	cols   []string // its key columns besides the interface
}

// levels are the sums' levels, the least detailed first. Their ids and
// columns are the database's: migration 4 made them.
var levels = [...]level{
	{1, true, []string{"side", "address"}},                                // each provider process (the instances page)
	{2, true, []string{"side", "consumer"}},                               // each consumer host
	{3, false, []string{"side", "version", "grp"}},                        // each service (the lists)
	{4, false, []string{"side", "version", "grp", "method"}},              // its methods
	{5, false, []string{"side", "version", "grp", "application"}},         // its callers (the dependencies)
	{6, false, []string{"side", "version", "grp", "address", "consumer"}}, // its providers and consumers
}

// keyColumns are the text columns of sum_keys, and of streams: a level's
// key has empty strings in those it has not.
var keyColumns = [...]string{"side", "version", "grp", "method", "application", "address", "consumer"}

// levelIDs lists the levels' ids, for SQL.
func levelIDs() string {
	ids := make([]string, len(levels))
	for i, l := range levels {
		ids[i] = fmt.Sprint(l.id)
	}
	return strings.Join(ids, ", ")
}

// source is where a read adds up rows from: the sums of a level, or the
// rows themselves (raw and hourly, keyed by their streams).
type source struct {
	level *level // nil: the rows
}

// rowKeyColumns are the rows' key columns: all of them.
var rowKeyColumns = []string{"interface", "side", "method", "version", "grp", "application", "address", "consumer"}

// sourceFor is the least detailed source that has every column in cols
// ("interface" for a read of one interface, or per interface).
func sourceFor(cols ...string) source {
	for i := range levels {
		if src := (source{&levels[i]}); src.has(cols...) {
			return src
		}
	}
	return source{}
}

func (src source) has(cols ...string) bool {
	have := rowKeyColumns
	if l := src.level; l != nil {
		have = l.cols
		if !l.across {
			have = append([]string{"interface"}, have...)
		}
	}
	for _, c := range cols {
		if !slices.Contains(have, c) {
			return false
		}
	}
	return true
}

// keys is the table of the source's keys: its rows' key_id is an id of
// it, with the columns interface_id and keyColumns.
func (src source) keys() string {
	if src.level == nil {
		return "streams"
	}
	return "sum_keys"
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
	}{{sc.iface != 0, "interface"}, {sc.side != "", "side"}, {sc.method != "", "method"}, {sc.version != nil, "version"}, {sc.group != nil, "grp"},
		{sc.application != "", "application"}, {sc.address != "", "address"}, {sc.host != "", "address"}, {sc.host != "", "consumer"}} {
		if c.set {
			cols = append(cols, c.col)
		}
	}
	return cols
}

// keyConds are the conditions on the key columns of k (a row of
// src.keys()) that sc filters on, and their arguments.
func (sc scope) keyConds() ([]string, []any) {
	var conds []string
	var args []any
	eq := func(c string, v any) {
		conds = append(conds, "k."+c+" = ?")
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
		conds = append(conds, "(k.address = ? OR k.consumer = ? OR substr(k.address, 1, length(?) + 1) = ? OR substr(k.consumer, 1, length(?) + 1) = ?)")
		args = append(args, sc.host, sc.host, sc.host, sc.host+":", sc.host, sc.host+":")
	}
	return conds, args
}

// expr is the SQL of a column of src's rows in a member of selectFrom:
// key_id (an id of src.keys()), time, the figures (success, failure,
// input, output, elapsed, max_elapsed, max_concurrent), last (end of the
// newest interval), application (NULL: several) and histogram.
func (src source) expr(name string) string {
	if src.level == nil {
		switch name {
		case "key_id":
			return "t.stream_id"
		case "application":
			return "k.application"
		case "last":
			return "t.time"
		}
	}
	return "t." + name
}

// partialSums are the aggregates of the figures of src's rows (see
// expr) for a member of selectFrom, the application's with apps:
// several, app_min, app_max, success, failure, input, output, elapsed,
// max_elapsed, max_concurrent, last and histogram.
func (src source) partialSums(apps bool) string {
	c := src.expr
	var b strings.Builder
	if apps {
		fmt.Fprintf(&b, "MAX(%[1]s IS NULL) AS several, MIN(%[1]s) AS app_min, MAX(%[1]s) AS app_max, ", c("application"))
	}
	fmt.Fprintf(&b, "SUM(%s) AS success, SUM(%s) AS failure, SUM(%s) AS input, SUM(%s) AS output, SUM(%s) AS elapsed, "+
		"MAX(%s) AS max_elapsed, MAX(%s) AS max_concurrent, MAX(%s) AS last, %s AS histogram",
		c("success"), c("failure"), c("input"), c("output"), c("elapsed"), c("max_elapsed"), c("max_concurrent"), c("last"),
		concatHistograms(c("histogram")))
	return b.String()
}

// selectFrom is a UNION ALL of SELECTs, one per piece of sc's range and
// table, each adding up src's rows in sc per group (an SQL expression
// of their columns, see expr) into the aggregates aggs: columns g and
// those of aggs. Adding up in each member, not over the union, spares
// SQLite a copy of every row.
func (src source) selectFrom(sc scope, group, aggs string) (string, []any) {
	conds, condArgs := sc.keyConds()
	sel := "SELECT " + group + " AS g"
	if aggs != "" {
		sel += ", " + aggs
	}
	var parts []string
	var args []any
	add := func(q string, a ...any) {
		parts, args = append(parts, sel+q+" GROUP BY g"), append(args, a...)
	}
	for _, p := range cover(sc.from, sc.to, sc.within) {
		if src.level == nil {
			// Rows as reported, and hourly rows of folded hours, whose
			// interval (hour) ended in the piece's span.
			for _, tbl := range []string{"raw", "hourly"} {
				q, a := src.rows(sc, tbl, conds, condArgs, p.from-p.span, p.to)
				add(q, a...)
			}
			continue
		}
		q, a := src.sums(sc, conds, condArgs, p.span, p.from, p.to, false)
		add(q, a...)
		if lo, hi := ceilTo(p.from, hour), p.to/hour*hour; p.span == minute && lo <= hi {
			// Minutes of rolled-up hours: read the hour instead when it
			// ends in the piece.
			q, a := src.sums(sc, conds, condArgs, hour, lo, hi, true)
			add(q, a...)
		}
	}
	return strings.Join(parts, " UNION ALL "), args
}

// rows is the FROM and WHERE of a member of selectFrom reading the rows
// of tbl (raw or hourly) whose time is in (after, to].
func (src source) rows(sc scope, tbl string, conds []string, condArgs []any, after, to int64) (string, []any) {
	var b strings.Builder
	fmt.Fprintf(&b, " FROM %s t JOIN streams k ON k.id = t.stream_id WHERE ", tbl)
	var args []any
	if sc.iface != 0 {
		b.WriteString("t.interface_id = ?")
		args = append(args, sc.iface)
	} else {
		// One range of the key per interface, rather than a scan.
		b.WriteString("t.interface_id IN (SELECT id FROM interfaces)")
	}
	b.WriteString(" AND t.time > ? AND t.time <= ?")
	args = append(args, after, to)
	for _, c := range conds {
		b.WriteString(" AND " + c)
	}
	return b.String(), append(args, condArgs...)
}

// sums is the FROM and WHERE of a member of selectFrom reading src's sums
// of span ending in [from, to] that answer for their time: minutes after
// the rollup (sum_rollup.rolled_through), or with rolled the hours up to
// it.
func (src source) sums(sc scope, conds []string, condArgs []any, span, from, to int64, rolled bool) (string, []any) {
	l := src.level
	var b strings.Builder
	b.WriteString(" FROM sums t WHERE t.level = ? AND t.span = ?")
	args := []any{l.id, span}
	if sc.iface != 0 && !l.across {
		// One interface: a look per sum's time, not every interface's
		// sums of the range.
		b.WriteString(" AND t.time IN (WITH RECURSIVE x(v) AS (SELECT ? UNION ALL SELECT v + ? FROM x WHERE v < ?) SELECT v FROM x) AND t.interface_id = ?")
		args = append(args, from, span, to, sc.iface)
	} else {
		b.WriteString(" AND t.time BETWEEN ? AND ?")
		args = append(args, from, to)
	}
	switch {
	case rolled:
		b.WriteString(" AND t.time <= (SELECT rolled_through FROM sum_rollup)")
	case span == minute:
		b.WriteString(" AND t.time > (SELECT rolled_through FROM sum_rollup)")
	}
	if len(conds) > 0 {
		// The keys in scope, found once (SQLite evaluates an IN
		// subquery once) and looked up per sum (+: not a look per key).
		b.WriteString(" AND +t.key_id IN (SELECT id FROM sum_keys k WHERE k.level = ?")
		args = append(args, l.id)
		if sc.iface != 0 && !l.across {
			b.WriteString(" AND k.interface_id = ?")
			args = append(args, sc.iface)
		}
		for _, c := range conds {
			b.WriteString(" AND " + c)
		}
		b.WriteString(")")
		args = append(args, condArgs...)
	}
	return b.String(), args
}
