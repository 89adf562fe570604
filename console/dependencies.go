package console

import (
	"cmp"
	"context"
	"fmt"
	"html/template"
	"maps"
	neturl "net/url"
	"slices"
	"strings"

	"github.com/dubbo-lab/dubbo/console/depmap"
	"github.com/dubbo-lab/dubbo/monitor/store"
)

// Edge is one application's calls of one service (a version and group of
// an interface), and the applications that provide it.
type Edge struct {
	Caller    string `json:"caller"` // "" when its nodes name no application
	Interface string `json:"interface"`
	Version   string `json:"version"`
	Group     string `json:"group"`
	// Providers are the applications providing the service: in the
	// registry, and those whose providers reported calls of it.
	Providers []string `json:"providers"`
	// Registered says the caller has a consumer node of the service.
	Registered bool `json:"registered"`
	// Traffic is the calls the caller's nodes reported in the window; nil
	// when they reported none.
	Traffic *store.SummaryRow `json:"traffic"`
}

// Dependencies is who calls whom over a window: from the consumers'
// reports (the application of each, and the service it called) and the
// registry's consumer nodes.
type Dependencies struct {
	Window Window `json:"window"`
	// Application, when set, keeps the edges from it and to the services
	// it provides.
	Application string `json:"application,omitempty"`
	Edges       []Edge `json:"edges"`
	StatsError  string `json:"-"` // why the reports are missing
}

// dependencies reads who calls whom over w; with app, only the edges it
// is at one end of.
func (c *Console) dependencies(ctx context.Context, w Window, app string) Dependencies {
	reg := c.cat.Dependencies()
	type key struct{ caller, iface, version, group string }
	edges := map[key]*Edge{}
	for _, r := range reg.References {
		edges[key{r.Application, r.Interface, r.Version, r.Group}] = &Edge{Caller: r.Application, Interface: r.Interface,
			Version: r.Version, Group: r.Group, Registered: true, Providers: reg.ProvidersOf(r.Interface, r.Version, r.Group)}
	}
	out := Dependencies{Window: w, Application: app, Edges: []Edge{}}
	if c.opts.Stats != nil {
		s, err := c.opts.Stats.Summary(ctx, store.SummaryQuery{By: store.ByEdge, From: w.From, To: w.To})
		if err != nil {
			out.StatsError = err.Error()
		}
		for _, r := range s.Rows {
			k := key{r.Application, r.Interface, r.Version, r.Group}
			e := edges[k]
			if e == nil {
				e = &Edge{Caller: r.Application, Interface: r.Interface, Version: r.Version, Group: r.Group,
					Providers: reg.ProvidersOf(r.Interface, r.Version, r.Group)}
				edges[k] = e
			}
			e.Traffic = &r
			e.Providers = union(e.Providers, r.ProviderApplications)
		}
	}
	for _, e := range edges {
		if app == "" || e.Caller == app || slices.Contains(e.Providers, app) {
			out.Edges = append(out.Edges, *e)
		}
	}
	slices.SortFunc(out.Edges, func(a, b Edge) int {
		return cmp.Or(strings.Compare(a.Caller, b.Caller), strings.Compare(a.Interface, b.Interface),
			strings.Compare(a.Version, b.Version), strings.Compare(a.Group, b.Group))
	})
	return out
}

// union is a and b's strings, sorted, once each.
func union(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// mapLimit is the most services the map draws: past it the page shows the
// table, and the map of one application's edges.
const mapLimit = 60

// Services counts the services of the edges.
func (d Dependencies) Services() int {
	svcs := map[[3]string]bool{}
	for _, e := range d.Edges {
		svcs[[3]string{e.Interface, e.Version, e.Group}] = true
	}
	return len(svcs)
}

// Callers are the calling applications, sorted.
func (d Dependencies) Callers() []string {
	apps := map[string]bool{}
	for _, e := range d.Edges {
		apps[e.Caller] = true
	}
	return slices.Sorted(maps.Keys(apps))
}

// appName is an application as the map and table name it.
func appName(a string) string {
	if a == "" {
		return "(no application)"
	}
	return a
}

// serviceSub is a service's version and group as the map shows them.
func serviceSub(version, group string) string {
	var parts []string
	if version != "" {
		parts = append(parts, version)
	}
	if group != "" {
		parts = append(parts, "group "+group)
	}
	return strings.Join(parts, " · ")
}

// depMap draws d: the calling applications, the services they call and
// the applications providing them, each call labelled with its calls/s
// and error rate, red when calls failed; "" past mapLimit services.
func depMap(d Dependencies) template.HTML {
	if d.Services() > mapLimit {
		return ""
	}
	var callers, services, providers []depmap.Node
	seen := map[string]bool{}
	node := func(dst *[]depmap.Node, n depmap.Node) {
		if !seen[n.ID] {
			seen[n.ID] = true
			*dst = append(*dst, n)
		}
	}
	var edges []depmap.Edge
	for _, e := range d.Edges {
		cid, sid := "c:"+e.Caller, "s:"+e.Interface+":"+e.Version+":"+e.Group
		node(&callers, depmap.Node{ID: cid, Label: appName(e.Caller), Link: "/dependencies?" + neturl.Values{"application": {e.Caller}}.Encode()})
		node(&services, depmap.Node{ID: sid, Label: e.Interface, Sub: serviceSub(e.Version, e.Group), Class: "service",
			Link: "/services/" + neturl.PathEscape(e.Interface) + "?" + neturl.Values{"version": {e.Version}, "group": {e.Group}}.Encode()})
		edge := depmap.Edge{From: cid, To: sid, Title: appName(e.Caller) + " calls " + e.Interface + ": registered, no calls reported"}
		if t := e.Traffic; t != nil {
			edge.Label = fmt.Sprintf("%s/s · %s", rateText(t.CallsPerSecond), percentText(t.ErrorRate))
			edge.Title = fmt.Sprintf("%s calls %s: %d calls, %d failed", appName(e.Caller), e.Interface, t.Calls, t.Failure)
			if t.Failure > 0 {
				edge.Class = "bad"
			}
		} else {
			edge.Class = "idle"
		}
		edges = append(edges, edge)
		for _, p := range e.Providers {
			pid := "p:" + p
			node(&providers, depmap.Node{ID: pid, Label: appName(p), Link: "/dependencies?" + neturl.Values{"application": {p}}.Encode()})
			if !seen[sid+">"+pid] {
				seen[sid+">"+pid] = true
				edges = append(edges, depmap.Edge{From: sid, To: pid, Class: "provides", Title: appName(p) + " provides " + e.Interface})
			}
		}
	}
	return depmap.SVG(depmap.Map{Titles: []string{"calling applications", "services", "providing applications"},
		Layers: [][]depmap.Node{callers, services, providers}, Edges: edges})
}
