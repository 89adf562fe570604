package console

import (
	"context"
	"html/template"
	"math"
	neturl "net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/dubbo-lab/dubbo/console/chart"
	"github.com/dubbo-lab/dubbo/monitor/store"
)

// trafficSel is what a service page's traffic is read for: ?range= or
// ?from=&to= (windowOf), ?side= (consumer, the default, or provider) and
// ?version= and ?group= (absent: every version, or group).
type trafficSel struct {
	Window         Window
	Side           string
	Version, Group *string
}

func (c *Console) trafficSelOf(ec echo.Context) (trafficSel, error) {
	w, err := windowOf(c.opts.Now(), c.rawRetention(), ec.QueryParam("range"), ec.QueryParam("from"), ec.QueryParam("to"))
	if err != nil {
		return trafficSel{}, err
	}
	s := trafficSel{Window: w, Side: ec.QueryParam("side"), Version: optional(ec, "version"), Group: optional(ec, "group")}
	switch s.Side {
	case "":
		s.Side = store.SideConsumer
	case store.SideConsumer, store.SideProvider:
	default:
		return trafficSel{}, badRequest("side %q is neither %s nor %s", s.Side, store.SideConsumer, store.SideProvider)
	}
	return s, nil
}

// ServiceTraffic is a service's calls over a window on one side, of one
// version and group or all: the charts' buckets, and the calls per
// method, per provider and per consumer.
type ServiceTraffic struct {
	Window
	Side    string         `json:"side"`
	Version *string        `json:"version"` // null: every version
	Group   *string        `json:"group"`   // null: every group
	Buckets []store.Bucket `json:"buckets"`
	Calls   int64          `json:"calls"`
	// Failures are failed calls.
	Failures int64 `json:"failures"`
	// Methods are the calls per method, the busiest first.
	Methods []store.SummaryRow `json:"methods"`
	// Providers are the calls per provider (host:port): on the provider
	// side what each served, on the consumer side what its callers saw.
	// Consumers are the calls per consumer (host).
	Providers []Share `json:"providers"`
	Consumers []Share `json:"consumers"`
	Error     string  `json:"error,omitempty"`
}

// Share is one provider's or consumer's calls, and their part of all.
type Share struct {
	store.SummaryRow
	Share float64 `json:"share"` // 0..1
}

// serviceTraffic reads iface's calls as sel asks.
func (c *Console) serviceTraffic(ctx context.Context, iface string, sel trafficSel) ServiceTraffic {
	w := sel.Window
	t := ServiceTraffic{Window: w, Side: sel.Side, Version: sel.Version, Group: sel.Group, Buckets: []store.Bucket{},
		Methods: []store.SummaryRow{}, Providers: []Share{}, Consumers: []Share{}}
	if c.opts.Stats == nil {
		t.Error = errNoStats.msg
		return t
	}
	bs, err := c.opts.Stats.Series(ctx, store.SeriesQuery{Interface: iface, Side: sel.Side, Version: sel.Version, Group: sel.Group,
		From: w.From, To: w.To, Step: w.Step})
	if err != nil {
		t.Error = err.Error()
		return t
	}
	t.Buckets = bs
	for _, b := range bs {
		t.Calls += b.Calls
		t.Failures += b.Failure
	}
	sum := func(by string) ([]store.SummaryRow, error) {
		s, err := c.opts.Stats.Summary(ctx, store.SummaryQuery{By: by, Interface: iface, Side: sel.Side, Version: sel.Version, Group: sel.Group,
			From: w.From, To: w.To})
		return s.Rows, err
	}
	if t.Methods, err = sum(store.ByMethod); err != nil {
		t.Error = err.Error()
		return t
	}
	for _, s := range []struct {
		by  string
		dst *[]Share
	}{{store.ByProvider, &t.Providers}, {store.ByConsumer, &t.Consumers}} {
		rows, err := sum(s.by)
		if err != nil {
			t.Error = err.Error()
			return t
		}
		*s.dst = shares(rows)
	}
	return t
}

// shares gives each row its part of all rows' calls.
func shares(rows []store.SummaryRow) []Share {
	var total int64
	for _, r := range rows {
		total += r.Calls
	}
	out := make([]Share, len(rows))
	for i, r := range rows {
		out[i] = Share{SummaryRow: r}
		if total > 0 {
			out[i].Share = float64(r.Calls) / float64(total)
		}
	}
	return out
}

// link is the service page (a query string) with the selection changed
// by change.
func (t ServiceTraffic) link(change func(q neturl.Values)) string {
	q := neturl.Values{"side": {t.Side}}
	if t.Range == customRange {
		q.Set("from", strconv.FormatInt(t.From, 10))
		q.Set("to", strconv.FormatInt(t.To, 10))
	} else {
		q.Set("range", t.Range)
	}
	if t.Version != nil {
		q.Set("version", *t.Version)
	}
	if t.Group != nil {
		q.Set("group", *t.Group)
	}
	change(q)
	return "?" + q.Encode()
}

// RangeLink shows the preset range name.
func (t ServiceTraffic) RangeLink(name string) string {
	return t.link(func(q neturl.Values) { q.Del("from"); q.Del("to"); q.Set("range", name) })
}

// SideLink shows the side's reports.
func (t ServiceTraffic) SideLink(side string) string {
	return t.link(func(q neturl.Values) { q.Set("side", side) })
}

// VersionLink shows one version and group.
func (t ServiceTraffic) VersionLink(version, group string) string {
	return t.link(func(q neturl.Values) { q.Set("version", version); q.Set("group", group) })
}

// AllVersionsLink shows every version and group.
func (t ServiceTraffic) AllVersionsLink() string {
	return t.link(func(q neturl.Values) { q.Del("version"); q.Del("group") })
}

// Chosen says whether the traffic is of one version and group.
func (t ServiceTraffic) Chosen(version, group string) bool {
	return t.Version != nil && *t.Version == version && t.Group != nil && *t.Group == group
}

// Charts are a service's traffic drawn: calls/s, failures/s, success
// rate, latency (p50, p99, average, max) and concurrency.
type Charts struct {
	Calls, Fail, Success, Time, Concurrency template.HTML
}

func charts(t ServiceTraffic) Charts {
	bs := t.Buckets
	n := len(bs)
	times := make([]int64, n)
	series := func() []float64 { return make([]float64, n) }
	calls, fails, ok, p50, p99, avg, peak, conc := series(), series(), series(), series(), series(), series(), series(), series()
	nan := math.NaN()
	for i, b := range bs {
		times[i] = b.Time
		calls[i] = float64(b.Calls) / float64(t.Step)
		fails[i] = float64(b.Failure) / float64(t.Step)
		ok[i], p50[i], p99[i], avg[i], peak[i], conc[i] = nan, nan, nan, nan, nan, nan
		if b.Calls == 0 {
			continue
		}
		ok[i] = 100 * float64(b.Success) / float64(b.Calls)
		avg[i] = float64(b.ElapsedMs) / float64(b.Calls)
		peak[i] = float64(b.MaxElapsedMs)
		conc[i] = float64(b.MaxConcurrent)
		if b.P50Ms != nil {
			p50[i], p99[i] = *b.P50Ms, *b.P99Ms
		}
	}
	return Charts{
		Calls: chart.SVG(chart.Chart{Title: "Calls", Unit: "per second", Times: times,
			Series: []chart.Series{{Name: "calls/s", Class: "s0", Values: calls}}}),
		Fail: chart.SVG(chart.Chart{Title: "Failures", Unit: "per second", Times: times,
			Series: []chart.Series{{Name: "failures/s", Class: "s2", Values: fails}}}),
		Success: chart.SVG(chart.Chart{Title: "Success rate", Unit: "%", Times: times,
			Series: []chart.Series{{Name: "success %", Class: "s3", Values: ok}}}),
		Time: chart.SVG(chart.Chart{Title: "Latency", Unit: "ms", Times: times,
			Series: []chart.Series{{Name: "p50", Class: "s0", Values: p50}, {Name: "p99", Class: "s1", Values: p99},
				{Name: "avg", Class: "s3", Values: avg}, {Name: "max", Class: "s2", Values: peak}}}),
		Concurrency: chart.SVG(chart.Chart{Title: "Concurrency", Unit: "most calls in flight at one node", Times: times,
			Series: []chart.Series{{Name: "max", Class: "s0", Values: conc}}}),
	}
}
