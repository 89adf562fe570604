package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/dubbo-lab/dubbo/node/stats/histogram"
)

// What a row of a Summary adds up: the values of SummaryQuery.By.
const (
	// ByService: per interface, version, group and side.
	ByService = "service"
	// ByMethod: per method and side, of one interface.
	ByMethod = "method"
	// ByProvider: per provider host:port and side (on the provider side
	// each provider's own count, on the consumer side its callers' view).
	ByProvider = "provider"
	// ByConsumer: per consumer host and side.
	ByConsumer = "consumer"
	// ByApplication: per reporting application and side.
	ByApplication = "application"
	// ByEdge: per calling application and the service it calls
	// (interface, version, group), from the consumers' reports, with the
	// applications that provide the service.
	ByEdge = "edge"
)

// groupings are the columns each By groups on, the interface first when
// it is one of them.
var groupings = map[string][]string{
	ByService:     {"interface", "version", "grp", "side"},
	ByMethod:      {"method", "side"},
	ByProvider:    {"address", "side"},
	ByConsumer:    {"consumer", "side"},
	ByApplication: {"application", "side"},
	ByEdge:        {"application", "interface", "version", "grp"},
}

// SummaryQuery asks Summary for the calls of a time range added up per
// group. Empty filters match everything.
type SummaryQuery struct {
	By        string // ByService, ByMethod, ...; required
	Interface string // "" = every interface (ByMethod needs one)
	Method    string
	Side      string // "" = both (each a row of its own), else SideProvider or SideConsumer
	// Version and Group select one version and group ("" is none); nil =
	// all of them.
	Version, Group *string
	Application    string // the reporting application
	// Host is an IP, or host:port: the calls it served or made (rows whose
	// provider or consumer it is).
	Host     string
	From, To int64 // Unix seconds, required; see Summary.From
}

// Summary is the calls of a time range added up per group.
type Summary struct {
	By string `json:"by"`
	// From and To are the range covered, (From, To] in Unix seconds: the
	// query's, widened to whole minutes (whole hours when it is longer
	// than 6 hours, whole days when longer than 7 days) so that it is
	// read from sums of whole spans.
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Seconds is the part of the range up to the query's To, what rates
	// are per: calls in the future are none.
	Seconds int64        `json:"seconds"`
	Rows    []SummaryRow `json:"rows"`
}

// SummaryRow is one group's calls. Fields the grouping does not name are
// empty, but Application, which names the reporting application when all
// of the group's rows have the same.
type SummaryRow struct {
	Side        string `json:"side"`
	Interface   string `json:"interface"`
	Version     string `json:"version"`
	Group       string `json:"group"`
	Method      string `json:"method"`
	Application string `json:"application"`
	Address     string `json:"address"`  // a provider's host:port
	Consumer    string `json:"consumer"` // a consumer's host
	// ProviderApplications are, for an edge, the applications whose
	// providers of the service reported calls in the range.
	ProviderApplications []string `json:"provider_applications,omitempty"`

	Calls          int64   `json:"calls"`
	Success        int64   `json:"success"`
	Failure        int64   `json:"failure"`
	CallsPerSecond float64 `json:"calls_per_second"`
	ErrorRate      float64 `json:"error_rate"` // failures / calls, 0..1
	Input          int64   `json:"input"`      // request bytes
	Output         int64   `json:"output"`     // response bytes
	ElapsedMs      int64   `json:"elapsed_ms"` // summed over the calls
	AvgMs          float64 `json:"avg_ms"`
	MaxElapsedMs   int64   `json:"max_elapsed_ms"`
	MaxConcurrent  int64   `json:"max_concurrent"` // the most calls in flight at one node
	Last           int64   `json:"last"`           // end of the newest interval reported
	Percentiles
}

func (q SummaryQuery) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadQuery, fmt.Sprintf(format, args...))
	}
	by := make([]string, 0, len(groupings))
	for k := range groupings {
		by = append(by, k)
	}
	slices.Sort(by)
	switch {
	case groupings[q.By] == nil:
		return bad("by %q is not one of %s", q.By, strings.Join(by, ", "))
	case q.By == ByMethod && q.Interface == "":
		return bad("by %s needs an interface", ByMethod)
	case q.By == ByEdge && q.Side == SideProvider:
		return bad("edges are the consumers' reports: side %s has none", SideProvider)
	case q.Side != "" && q.Side != SideProvider && q.Side != SideConsumer:
		return bad("side %q is neither %q nor %q", q.Side, SideProvider, SideConsumer)
	case q.From <= 0 || q.To <= 0 || q.From > maxTime || q.To > maxTime:
		return bad("from and to are required, Unix seconds in 1..%d", int64(maxTime))
	case q.From > q.To:
		return bad("from %d is after to %d", q.From, q.To)
	}
	return nil
}

// summaryUnit is the span a summary of a range of that many seconds
// widens to: minutes up to 6 hours, hours up to 7 days, days beyond, so
// that a long range reads few sums per group.
func summaryUnit(seconds int64) int64 {
	switch {
	case seconds <= 6*hour:
		return minute
	case seconds <= 7*day:
		return hour
	}
	return day
}

// Summary adds up the calls of the range per group (q.By), busiest
// first, with their percentiles. It reads the least detailed sums that
// have the columns it groups and filters by (sums.go): a day of every
// service is a few dozen sums per group.
func (s *Store) Summary(ctx context.Context, q SummaryQuery) (Summary, error) {
	if err := q.check(); err != nil {
		return Summary{}, err
	}
	unit := summaryUnit(q.To - q.From)
	first := ceilTo(ceilTo(q.From, minute), unit) - unit + minute // the first minute of the unit holding From
	last := ceilTo(q.To, unit)
	out := Summary{By: q.By, From: first - minute, To: last, Seconds: min(last, ceilTo(q.To, minute)) - (first - minute), Rows: []SummaryRow{}}
	sc := scope{side: q.Side, method: q.Method, version: q.Version, group: q.Group, application: q.Application, host: q.Host,
		from: first, to: last, within: day}
	if q.By == ByEdge {
		sc.side = SideConsumer
	}
	err := s.read(ctx, func(tx *sql.Tx) error {
		if q.Interface != "" {
			id, ok, err := ifaceOf(ctx, tx, q.Interface)
			if err != nil || !ok {
				return err
			}
			sc.iface = id
		}
		rows, err := s.summarize(ctx, tx, sc, groupings[q.By])
		if err != nil {
			return err
		}
		if q.By == ByEdge {
			if err := s.addProviderApps(ctx, tx, sc, rows); err != nil {
				return err
			}
		}
		out.Rows = append(out.Rows, rows...)
		return nil
	})
	if err != nil {
		return Summary{}, fmt.Errorf("summary by %s: %w", q.By, err)
	}
	for i := range out.Rows {
		r := &out.Rows[i]
		if out.Seconds > 0 {
			r.CallsPerSecond = float64(r.Calls) / float64(out.Seconds)
		}
		if r.Calls > 0 {
			r.ErrorRate = float64(r.Failure) / float64(r.Calls)
			r.AvgMs = float64(r.ElapsedMs) / float64(r.Calls)
		}
	}
	slices.SortStableFunc(out.Rows, func(a, b SummaryRow) int { return cmp.Compare(b.Calls, a.Calls) })
	return out, nil
}

// summarize adds up the rows in sc per the columns by: first per key of
// the source (an integer: a cheap sort), then the keys' totals per by.
func (s *Store) summarize(ctx context.Context, tx *sql.Tx, sc scope, by []string) ([]SummaryRow, error) {
	src := sourceFor(append(slices.Clone(by), sc.columns()...)...)
	var key []string // by's columns but the interface
	name, groupBy := "''", []string(nil)
	for _, c := range by {
		if c == "interface" {
			name = "(SELECT name FROM interfaces WHERE id = k.interface_id)"
			groupBy = append(groupBy, "k.interface_id")
			continue
		}
		key = append(key, c)
		groupBy = append(groupBy, "k."+c)
	}
	from, args := src.selectFrom(sc, src.expr("key_id"), src.partialSums(true))
	// Counts summed, maxima kept, histograms concatenated (that is their
	// sum); the application is the group's when every sum has it.
	q := fmt.Sprintf(`SELECT %s, %s, NOT MAX(x.several) AND MIN(x.app_min) = MAX(x.app_max), COALESCE(MIN(x.app_min), ''),
			SUM(x.success), SUM(x.failure), SUM(x.input), SUM(x.output), SUM(x.elapsed), MAX(x.max_elapsed), MAX(x.max_concurrent), MAX(x.last), %s
		FROM (%s) x JOIN %s k ON k.id = x.g GROUP BY %s`,
		name, strings.Join(prefixed("k.", key), ", "), concatHistograms("x.histogram"), from, src.keys(), strings.Join(groupBy, ", "))
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SummaryRow
	vals := make([]string, len(key))
	for rows.Next() {
		var r SummaryRow
		var oneApp bool
		var app string
		var hist []byte
		dst := []any{&r.Interface}
		for i := range vals {
			dst = append(dst, &vals[i])
		}
		dst = append(dst, &oneApp, &app, &r.Success, &r.Failure, &r.Input, &r.Output, &r.ElapsedMs, &r.MaxElapsedMs, &r.MaxConcurrent, &r.Last, &hist)
		if err := rows.Scan(dst...); err != nil {
			return nil, err
		}
		for i, c := range key {
			r.set(c, vals[i])
		}
		if oneApp {
			r.Application = app
		}
		var h histogram.Counts
		if err := h.AddSparse(histogram.Sparse(hist)); err != nil {
			return nil, err
		}
		r.Calls = r.Success + r.Failure
		r.Percentiles = percentilesOf(&h)
		out = append(out, r)
	}
	return out, rows.Err()
}

// set sets the field of a key column.
func (r *SummaryRow) set(col, v string) {
	switch col {
	case "side":
		r.Side = v
	case "method":
		r.Method = v
	case "version":
		r.Version = v
	case "grp":
		r.Group = v
	case "application":
		r.Application = v
	case "address":
		r.Address = v
	case "consumer":
		r.Consumer = v
	}
}

// addProviderApps gives each edge the applications that provide its
// service: those of the provider side's sums of it in the range.
func (s *Store) addProviderApps(ctx context.Context, tx *sql.Tx, sc scope, edges []SummaryRow) error {
	sc.side, sc.application, sc.host = SideProvider, "", ""
	src := sourceFor(append([]string{"interface", "version", "grp", "application"}, sc.columns()...)...)
	from, args := src.selectFrom(sc, src.expr("key_id"), "")
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT (SELECT name FROM interfaces WHERE id = k.interface_id), k.version, k.grp, k.application
		FROM (`+from+`) x JOIN `+src.keys()+` k ON k.id = x.g ORDER BY 4`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	apps := map[[3]string][]string{}
	for rows.Next() {
		var k [3]string
		var app string
		if err := rows.Scan(&k[0], &k[1], &k[2], &app); err != nil {
			return err
		}
		apps[k] = append(apps[k], app)
	}
	for i := range edges {
		e := &edges[i]
		e.ProviderApplications = apps[[3]string{e.Interface, e.Version, e.Group}]
	}
	return rows.Err()
}

func prefixed(p string, cols []string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = p + c
	}
	return out
}
