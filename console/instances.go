package console

import (
	"context"
	"slices"
	"strings"

	"github.com/dubbo-lab/dubbo/console/catalog"
	"github.com/dubbo-lab/dubbo/monitor/store"
)

// InstanceRow is one provider or consumer process, as the registry shows
// it, as its reports to the monitor show it, or both.
type InstanceRow struct {
	Side string `json:"side"` // provider or consumer
	// Address is a provider's host:port, or a consumer's host (its
	// consumer nodes and reports name no port).
	Address      string   `json:"address"`
	Applications []string `json:"applications"`
	// Services are the interfaces the registry says it provides or
	// references.
	Services   []string `json:"services"`
	Registered bool     `json:"registered"` // the registry has it
	// Traffic is what it reported over the window: the calls a provider
	// served, or a consumer made; nil when it reported none.
	Traffic *store.SummaryRow `json:"traffic"`
}

// InstanceList is the instances page: every process, the providers
// first, each side by address.
type InstanceList struct {
	Window     Window        `json:"window"`
	Instances  []InstanceRow `json:"instances"`
	StatsError string        `json:"-"` // why the reports are missing
}

// instances lists the registry's processes (catalog.Processes) with what
// each reported over the last five complete minutes, and the processes
// only the monitor knows (a dubbo call, a bench, a node of a registry the
// console does not read); with q, those whose address, an application or
// a service contains it (case-insensitive).
func (c *Console) instances(ctx context.Context, q string) InstanceList {
	w := recent(c.opts.Now())
	out := InstanceList{Window: w, Instances: []InstanceRow{}}
	ps := c.cat.Processes()
	for _, side := range []struct {
		name  string
		by    string
		procs []catalog.Process
		addr  func(store.SummaryRow) string
	}{
		{store.SideProvider, store.ByProvider, ps.Providers, func(r store.SummaryRow) string { return r.Address }},
		{store.SideConsumer, store.ByConsumer, ps.Consumers, func(r store.SummaryRow) string { return r.Consumer }},
	} {
		rows := map[string]*InstanceRow{}
		for _, p := range side.procs {
			rows[p.Address] = &InstanceRow{Side: side.name, Address: p.Address, Applications: p.Applications, Services: p.Services, Registered: true}
		}
		if c.opts.Stats != nil && out.StatsError == "" {
			s, err := c.opts.Stats.Summary(ctx, store.SummaryQuery{By: side.by, Side: side.name, From: w.From, To: w.To})
			if err != nil {
				out.StatsError = err.Error()
			}
			for _, r := range s.Rows {
				addr := side.addr(r)
				in := rows[addr]
				if in == nil {
					in = &InstanceRow{Side: side.name, Address: addr, Applications: []string{}, Services: []string{}}
					if r.Application != "" {
						in.Applications = []string{r.Application}
					}
					rows[addr] = in
				}
				in.Traffic = &r
			}
		}
		start := len(out.Instances)
		for _, in := range rows {
			if in.matches(strings.ToLower(strings.TrimSpace(q))) {
				out.Instances = append(out.Instances, *in)
			}
		}
		slices.SortFunc(out.Instances[start:], func(a, b InstanceRow) int { return strings.Compare(a.Address, b.Address) })
	}
	return out
}

// matches says whether the row's address, an application or a service
// contains q (lower case); every row matches "".
func (in *InstanceRow) matches(q string) bool {
	has := func(s string) bool { return strings.Contains(strings.ToLower(s), q) }
	return q == "" || has(in.Address) || slices.ContainsFunc(in.Applications, has) || slices.ContainsFunc(in.Services, has)
}

// maxRows bounds the rows a page's table shows (the API answers all): a
// browser table of 10,000 processes or edges helps nobody; the search,
// or an application, narrows it.
const maxRows = 1000
