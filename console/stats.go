package console

import (
	"cmp"
	"context"
	"net"
	neturl "net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/dubbo-lab/dubbo/console/catalog"
	"github.com/dubbo-lab/dubbo/monitor/store"
)

// What the lists read from the monitor's store: every service's calls
// over a window, added up by store.Summary.

// serviceID names a service's version and group.
type serviceID struct{ iface, version, group string }

// serviceCalls are the calls of every service over a window, one row per
// service: its consumers' view where consumers reported calls (it counts
// the calls that found no provider), else its providers'.
type serviceCalls struct {
	seconds int64 // what rates are per
	rows    map[serviceID]store.SummaryRow
	ifaces  map[string][]serviceID // the rows of each interface
}

// serviceCalls reads the calls of every service over w; with a host (an
// IP or host:port) only those it served or made.
func (c *Console) serviceCalls(ctx context.Context, w Window, host string) (serviceCalls, error) {
	s, err := c.opts.Stats.Summary(ctx, store.SummaryQuery{By: store.ByService, Host: host, From: w.From, To: w.To})
	if err != nil {
		return serviceCalls{}, err
	}
	return callsOf(s), nil
}

// callsOf picks each service's row of a summary by service.
func callsOf(s store.Summary) serviceCalls {
	out := serviceCalls{seconds: s.Seconds, rows: map[serviceID]store.SummaryRow{}, ifaces: map[string][]serviceID{}}
	for _, r := range s.Rows {
		id := serviceID{r.Interface, r.Version, r.Group}
		have, ok := out.rows[id]
		if !ok {
			out.ifaces[id.iface] = append(out.ifaces[id.iface], id)
		}
		if !ok || rank(r) > rank(have) {
			out.rows[id] = r
		}
	}
	return out
}

// rank orders a service's rows: the consumers' with calls first, then
// any with calls.
func rank(r store.SummaryRow) int {
	switch {
	case r.Calls == 0:
		return 0
	case r.Side == store.SideConsumer:
		return 2
	}
	return 1
}

// of is the row of a service of the registry's list; only says it is its
// interface's only row there. A service registered at application level
// only names no version: it takes its interface's row when the reports
// have only one.
func (sc serviceCalls) of(s catalog.Service, only bool) *store.SummaryRow {
	if r, ok := sc.rows[serviceID{s.Interface, s.Version, s.Group}]; ok {
		return &r
	}
	if ids := sc.ifaces[s.Interface]; only && s.Registration == catalog.LevelApplication && len(ids) == 1 {
		r := sc.rows[ids[0]]
		return &r
	}
	return nil
}

// rawRetention is how long the store keeps rows as reported; 0 without
// one.
func (c *Console) rawRetention() time.Duration {
	if c.opts.Stats == nil {
		return 0
	}
	return c.opts.Stats.RawRetention()
}

// recentCache keeps the last reading of recentCalls.
type recentCache struct {
	mu   sync.Mutex
	w    Window
	read time.Time
	sc   serviceCalls
}

// recentCalls are every service's calls of the last five complete
// minutes. The overview and the services list read them on each refresh
// of each open page, while they change only as the window moves (once a
// minute) and as late reports come in: one reading serves for a refresh
// interval (Options.Refresh).
func (c *Console) recentCalls(ctx context.Context) (Window, serviceCalls, error) {
	now := c.opts.Now()
	w := recent(now)
	c.recent.mu.Lock()
	if c.recent.w == w && now.Sub(c.recent.read) < c.opts.Refresh {
		sc := c.recent.sc
		c.recent.mu.Unlock()
		return w, sc, nil
	}
	c.recent.mu.Unlock()
	sc, err := c.serviceCalls(ctx, w, "")
	if err != nil {
		return w, sc, err
	}
	c.recent.mu.Lock()
	c.recent.w, c.recent.read, c.recent.sc = w, now, sc
	c.recent.mu.Unlock()
	return w, sc, nil
}

// Traffic is the calls of every service over a window, each counted once
// (serviceCalls).
type Traffic struct {
	Window
	CallsPerSecond float64 `json:"calls_per_second"`
	ErrorRate      float64 `json:"error_rate"` // failures / calls, 0..1
	Calls          int64   `json:"calls"`
	Failures       int64   `json:"failures"`
	Error          string  `json:"error,omitempty"`
}

func (sc serviceCalls) total(w Window) Traffic {
	t := Traffic{Window: w}
	for _, r := range sc.rows {
		t.Calls += r.Calls
		t.Failures += r.Failure
	}
	if sc.seconds > 0 {
		t.CallsPerSecond = float64(t.Calls) / float64(sc.seconds)
	}
	if t.Calls > 0 {
		t.ErrorRate = float64(t.Failures) / float64(t.Calls)
	}
	return t
}

// ServiceRow is a row of the services list: a service as the registry
// shows it, with its calls over the last five complete minutes.
type ServiceRow struct {
	catalog.Service
	// Traffic is nil when no calls were reported (or there are no
	// statistics).
	Traffic *store.SummaryRow `json:"traffic"`
}

// withCalls pairs the registry's services with their calls.
func withCalls(svcs []catalog.Service, sc serviceCalls) []ServiceRow {
	out := make([]ServiceRow, len(svcs))
	for i, s := range svcs {
		only := (i == 0 || svcs[i-1].Interface != s.Interface) && (i+1 == len(svcs) || svcs[i+1].Interface != s.Interface)
		out[i] = ServiceRow{Service: s, Traffic: sc.of(s, only)}
	}
	return out
}

// Orders of the services list (?sort=): by name, or the busiest, the most
// failing or the slowest first.
const (
	SortName   = "name"
	SortCalls  = "calls"
	SortErrors = "errors"
	SortP99    = "p99"
)

// sortKeys are the orders' keys, a row without calls last in each.
var sortKeys = map[string]func(a, b ServiceRow) int{
	SortName: func(a, b ServiceRow) int { return 0 }, // the registry's order
	SortCalls: func(a, b ServiceRow) int {
		return byTraffic(a, b, func(r *store.SummaryRow) float64 { return r.CallsPerSecond })
	},
	SortErrors: func(a, b ServiceRow) int {
		return cmp.Or(byTraffic(a, b, func(r *store.SummaryRow) float64 { return r.ErrorRate }),
			byTraffic(a, b, func(r *store.SummaryRow) float64 { return float64(r.Failure) }))
	},
	SortP99: func(a, b ServiceRow) int {
		return byTraffic(a, b, func(r *store.SummaryRow) float64 {
			if r.P99Ms == nil {
				return -1
			}
			return *r.P99Ms
		})
	},
}

// byTraffic orders rows by a figure of their traffic, highest first.
func byTraffic(a, b ServiceRow, f func(*store.SummaryRow) float64) int {
	switch {
	case a.Traffic == nil && b.Traffic == nil:
		return 0
	case a.Traffic == nil:
		return 1
	case b.Traffic == nil:
		return -1
	}
	return cmp.Compare(f(b.Traffic), f(a.Traffic))
}

func checkSort(s string) (string, error) {
	if s == "" {
		return SortName, nil
	}
	if sortKeys[s] == nil {
		return "", badRequest("sort %q is not one of %s, %s, %s, %s", s, SortName, SortCalls, SortErrors, SortP99)
	}
	return s, nil
}

// busiest are the services of rows with calls, at most n: those with
// failures first, the highest error rate on top, then the others by
// calls/s.
func busiest(rows []ServiceRow, n int) []ServiceRow {
	var out []ServiceRow
	for _, r := range rows {
		if r.Traffic != nil && r.Traffic.Calls > 0 {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b ServiceRow) int {
		return cmp.Or(cmp.Compare(b.Traffic.ErrorRate, a.Traffic.ErrorRate), sortKeys[SortCalls](a, b))
	})
	return out[:min(n, len(out))]
}

// hostQuery reports whether q names a machine, an IP, or a process,
// host:port: a search for the services it serves or calls.
func hostQuery(q string) bool {
	if net.ParseIP(q) != nil {
		return true
	}
	h, p, err := net.SplitHostPort(q)
	if err != nil || h == "" {
		return false
	}
	_, err = strconv.ParseUint(p, 10, 16)
	return err == nil
}

// registeredAt lists the interfaces the registry's processes at host (an
// IP, or host:port) provide or reference. A consumer node names its host
// only: it is found by an IP.
func (c *Console) registeredAt(host string) map[string]bool {
	out := map[string]bool{}
	ps := c.cat.Processes()
	for _, p := range ps.Providers {
		if h, _, err := net.SplitHostPort(p.Address); p.Address == host || (err == nil && h == host) {
			for _, s := range p.Services {
				out[s] = true
			}
		}
	}
	for _, p := range ps.Consumers {
		if p.Address == host {
			for _, s := range p.Services {
				out[s] = true
			}
		}
	}
	return out
}

// Link is the service's page, showing its version and group (those of
// its calls, for a service registered at application level).
func (r ServiceRow) Link() string {
	v, g := r.Version, r.Group
	if r.Traffic != nil {
		v, g = r.Traffic.Version, r.Traffic.Group
	}
	return "/services/" + neturl.PathEscape(r.Interface) + "?" + neturl.Values{"version": {v}, "group": {g}}.Encode()
}
