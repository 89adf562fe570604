package console

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dubbo-lab/dubbo/console/catalog"
	"github.com/dubbo-lab/dubbo/console/rules"
	"github.com/dubbo-lab/dubbo/node/cluster/configurator"
	"github.com/dubbo-lab/dubbo/node/registry/zookeeper"
	"github.com/dubbo-lab/dubbo/node/url"
)

// The functions here are what both the pages and the API call.

// Overview is the front page's figures.
type Overview struct {
	catalog.Counts
	Rules    int            `json:"rules"` // what the rules page lists
	Registry catalog.Health `json:"registry"`
	// Traffic is the calls of the last five complete minutes; nil
	// without statistics.
	Traffic *Traffic `json:"traffic"`
	// Busiest are the services with the most calls in that window, at
	// most ten: those with failures first, the highest error rate on
	// top (see busiest).
	Busiest []ServiceRow `json:"busiest"`
}

// overviewTop is how many services the overview ranks.
const overviewTop = 10

func (c *Console) overview(ctx context.Context) Overview {
	o := Overview{Counts: c.cat.Counts(), Rules: c.ruleCount(), Registry: c.cat.Health(), Busiest: []ServiceRow{}}
	if c.opts.Stats == nil {
		return o
	}
	w, sc, err := c.recentCalls(ctx)
	if err != nil {
		o.Traffic = &Traffic{Window: w, Error: err.Error()}
		return o
	}
	t := sc.total(w)
	o.Traffic = &t
	o.Busiest = busiest(withCalls(c.cat.Services(), sc), overviewTop)
	return o
}

// ServiceList is the services list: the registry's services with their
// calls over the last five complete minutes.
type ServiceList struct {
	Window   Window       `json:"window"`
	Services []ServiceRow `json:"services"`
	// StatsError says why the calls are missing; "" when they are not
	// (or there are no statistics).
	StatsError string `json:"-"`
}

// services lists the services q finds, in the order sort names (checkSort).
// q is a case-insensitive part of an interface or application name, or a
// machine (an IP) or process (host:port): the services it serves or calls,
// in the registry (its provider and consumer nodes, its application's
// instances) or in the monitor's reports of the window.
func (c *Console) services(ctx context.Context, q, sort string) (ServiceList, error) {
	sort, err := checkSort(sort)
	if err != nil {
		return ServiceList{}, err
	}
	w := recent(c.opts.Now())
	var sc serviceCalls
	out := ServiceList{Window: w}
	if c.opts.Stats != nil {
		if w, sc, err = c.recentCalls(ctx); err != nil {
			out.StatsError = err.Error()
		}
		out.Window = w
	}
	svcs := c.cat.Services()
	rows := withCalls(svcs, sc)
	if q = strings.TrimSpace(q); q != "" {
		if rows, err = c.findServices(ctx, w, q, svcs, rows); err != nil {
			out.StatsError = err.Error()
		}
	}
	slices.SortStableFunc(rows, sortKeys[sort])
	out.Services = rows
	return out, nil
}

// findServices keeps the rows (of svcs) q finds (services).
func (c *Console) findServices(ctx context.Context, w Window, q string, svcs []catalog.Service, rows []ServiceRow) ([]ServiceRow, error) {
	lq := strings.ToLower(q)
	var reg map[string]bool
	var at []ServiceRow // the rows with the host's calls alone
	var err error
	if hostQuery(q) {
		reg = c.registeredAt(q)
		if c.opts.Stats != nil {
			var sc serviceCalls
			sc, err = c.serviceCalls(ctx, w, q)
			at = withCalls(svcs, sc)
		}
	}
	out := rows[:0:0]
	for i, r := range rows {
		if strings.Contains(strings.ToLower(r.Interface), lq) || reg[r.Interface] || (at != nil && at[i].Traffic != nil) ||
			slices.ContainsFunc(r.Applications, func(a string) bool { return strings.Contains(strings.ToLower(a), lq) }) {
			out = append(out, r)
		}
	}
	return out, err
}

// ProviderView is a provider as the console shows it: the registered URL
// with the override rules in force applied, or a provider a rule took out
// of service (it withdraws its URL; Withdrawn is then true).
type ProviderView struct {
	Address     string `json:"address"`
	URL         string `json:"url"`
	Weight      int    `json:"weight"`
	Enabled     bool   `json:"enabled"`
	Application string `json:"application"`
	Version     string `json:"version"`
	Group       string `json:"group"`
	Withdrawn   bool   `json:"withdrawn,omitempty"`
	// Registration is catalog.LevelInterface (a URL in the registry) or
	// catalog.LevelApplication (from its instance's metadata).
	Registration string            `json:"registration"`
	Params       map[string]string `json:"params"`
	catalog.Staleness
}

// ServiceView is everything the service page shows of one interface, and
// GET /api/v1/services/{interface}'s answer.
type ServiceView struct {
	Interface string `json:"interface"`
	// Rows are the version/group rows.
	Rows      []catalog.Service  `json:"services"`
	Providers []ProviderView     `json:"providers"`
	Consumers []catalog.Consumer `json:"consumers"`
	// Instances are those of the applications the mapping names (Apps).
	Instances []catalog.Instance `json:"instances"`
	Apps      []string           `json:"applications"`
	Routers   []string           `json:"routers"`       // old-style route URLs
	Overrides []string           `json:"configurators"` // old-style override URLs
	Methods   []MethodView       `json:"methods"`
	Rules     []RuleView         `json:"rules"`
	Traffic   ServiceTraffic     `json:"traffic"`
}

// serviceView gathers what the service page shows of iface, its traffic
// as sel selects. Methods that cannot be read are left out (the page says
// no definition was published).
func (c *Console) serviceView(ctx context.Context, iface string, sel trafficSel) (ServiceView, error) {
	d, err := c.serviceState(ctx, iface)
	if err != nil {
		return ServiceView{}, err
	}
	ps := c.providersOf(d, nil, nil)
	ms, err := c.methodsOf(ctx, d, nil, nil)
	if err != nil {
		c.log.Debug("methods not read", "interface", d.Interface, "err", err)
		ms = []MethodView{}
	}
	return ServiceView{Interface: d.Interface, Rows: d.Rows, Providers: ps, Consumers: d.Consumers,
		Instances: d.Instances, Apps: d.Apps, Routers: d.Routers, Overrides: d.Overrides,
		Methods: ms, Rules: c.serviceRules(d.ServiceDetail), Traffic: c.serviceTraffic(ctx, d.Interface, sel)}, nil
}

func (c *Console) service(iface string) (catalog.ServiceDetail, error) {
	d, ok := c.cat.Service(iface)
	if !ok {
		return d, notFound("service %s is not in the registry", iface)
	}
	return d, nil
}

// providers lists the providers of iface (version and group filter when
// not nil), with the override rules of the config center applied.
func (c *Console) providers(ctx context.Context, iface string, version, group *string) ([]ProviderView, error) {
	d, err := c.serviceState(ctx, iface)
	if err != nil {
		return nil, err
	}
	return c.providersOf(d, version, group), nil
}

// providersOf lists the providers of d: interface-level ones, then
// application-level ones.
func (c *Console) providersOf(d serviceState, version, group *string) []ProviderView {
	iface := d.Interface
	match := func(v, g string) bool { return (version == nil || *version == v) && (group == nil || *group == g) }
	old, _ := configurator.ParseURLs(urlsOf(d.Overrides))
	out := []ProviderView{}
	seen := map[string]bool{}
	add := func(u *url.URL, level string, st catalog.Staleness) {
		v, g := u.Param(url.KeyVersion), u.Param(url.KeyGroup)
		if !match(v, g) {
			return
		}
		rs := slices.Clone(old)
		rs = append(rs, c.overrides(url.ColonSeparatedKey(iface, v, g))...)
		rs = append(rs, c.overrides(u.Param("application"))...)
		eff := configurator.NewRules(rs...).Configure(u, nil)
		p := catalog.ProviderOf(eff)
		seen[url.ColonSeparatedKey(iface, v, g)+"|"+p.Address] = true
		out = append(out, ProviderView{Address: p.Address, URL: p.URL, Weight: p.Weight, Enabled: p.Enabled,
			Application: p.Application, Version: v, Group: g, Registration: level, Params: p.Params, Staleness: st})
	}
	for i, u := range d.ProviderURLs() {
		add(u, catalog.LevelInterface, d.Providers[i].Staleness)
	}
	for _, u := range d.appURLs {
		add(u, catalog.LevelApplication, catalog.Staleness{})
	}
	// Providers that a rule disabled withdraw their URL: list them from
	// the rules, so that they can be enabled again.
	for _, r := range c.cat.Rules() {
		kind, key, ok := rules.Split(r.Key)
		if !ok || kind != rules.KindOverride || !strings.HasPrefix(key, iface+":") {
			continue
		}
		parts := strings.SplitN(key, ":", 3)
		if len(parts) != 3 || !match(parts[1], parts[2]) {
			continue
		}
		for _, addr := range rules.DisabledAddresses([]byte(r.Content)) {
			if seen[key+"|"+addr] || strings.HasPrefix(addr, "0.0.0.0") {
				continue
			}
			seen[key+"|"+addr] = true
			out = append(out, ProviderView{Address: addr, Enabled: false, Withdrawn: true, Version: parts[1], Group: parts[2]})
		}
	}
	return out
}

func urlsOf(ss []string) []*url.URL {
	var out []*url.URL
	for _, s := range ss {
		if u, err := url.Parse(s); err == nil {
			out = append(out, u)
		}
	}
	return out
}

// overrides parses the override document of key, nil when there is none
// or it does not parse (the runtime ignores it then too).
func (c *Console) overrides(key string) configurator.Rules {
	doc, ok := c.cat.RuleContent(rules.ConfigKey(rules.KindOverride, key))
	if !ok {
		return nil
	}
	rs, err := configurator.Parse([]byte(doc))
	if err != nil {
		return nil
	}
	return rs
}

// RuleView is one rule document.
type RuleView struct {
	Kind  string `json:"kind"`
	Key   string `json:"key"`
	Scope string `json:"scope"`
	// Service is the interface a service-scoped rule is for; "" for an
	// application's.
	Service string `json:"service,omitempty"`
	Enabled bool   `json:"enabled"`
	Path    string `json:"path"`
	Content string `json:"content"`
	// Warnings say what the rule says that the runtime does not apply
	// (rules.Warnings).
	Warnings []string `json:"warnings"`
}

// RuleFilter selects rules: of a kind, and whose service (interface) or
// application contains the text given, case aside; "" selects all.
type RuleFilter struct {
	Kind        string `json:"kind"`
	Service     string `json:"service"`
	Application string `json:"application"`
}

// keeps reports whether the filter selects the rule of kind at key.
func (f RuleFilter) keeps(kind, key string) bool {
	if f.Kind != "" && f.Kind != kind {
		return false
	}
	svc, app := ruleTarget(kind, key)
	return containsFold(svc, f.Service) && containsFold(app, f.Application)
}

// ruleTarget is the interface a rule is for, or the application it is
// keyed by.
func ruleTarget(kind, key string) (service, application string) {
	if ruleScope(kind, key) == rules.ScopeService {
		return interfaceOfKey(key), ""
	}
	return "", key
}

func ruleScope(kind, key string) string {
	if kind == rules.KindTag || kind == rules.KindScript {
		return rules.ScopeApplication
	}
	return rules.ScopeOf(key)
}

// containsFold reports whether s contains sub, case aside; "" is in every
// string, and nothing else is in "".
func containsFold(s, sub string) bool {
	return sub == "" || strings.Contains(strings.ToLower(s), strings.ToLower(strings.TrimSpace(sub)))
}

// ruleCount counts the rule documents.
func (c *Console) ruleCount() int {
	n := 0
	for _, r := range c.cat.Rules() {
		if _, _, ok := rules.Split(r.Key); ok {
			n++
		}
	}
	return n
}

func (c *Console) ruleViews(keep func(kind, key string) bool) []RuleView {
	out := []RuleView{}
	for _, r := range c.cat.Rules() {
		kind, key, ok := rules.Split(r.Key)
		if !ok || (keep != nil && !keep(kind, key)) {
			continue
		}
		svc, _ := ruleTarget(kind, key)
		out = append(out, RuleView{Kind: kind, Key: key, Scope: ruleScope(kind, key), Service: svc,
			Enabled: rules.Enabled([]byte(r.Content)), Path: rulePath(kind, key), Content: r.Content,
			Warnings: nonNil(rules.Warnings(kind, []byte(r.Content)))})
	}
	return out
}

// rulePath is where a rule is stored in the registry.
func rulePath(kind, key string) string { return configRoot + rules.ConfigKey(kind, key) }

// configRoot is the config center's folder of rules (Dubbo's default
// group).
const configRoot = "/dubbo/config/dubbo/"

// serviceRules lists the rules that apply to iface: its service-scoped
// rules of every version and group, and the application-scoped ones of
// its provider and consumer applications.
func (c *Console) serviceRules(d catalog.ServiceDetail) []RuleView {
	apps := map[string]bool{}
	for _, p := range d.Providers {
		apps[p.Application] = true
	}
	for _, a := range d.Apps {
		apps[a] = true
	}
	for _, cs := range d.Consumers {
		apps[cs.Application] = true
	}
	return c.ruleViews(func(kind, key string) bool {
		return strings.HasPrefix(key, d.Interface+":") || apps[key]
	})
}

func (c *Console) getRule(ctx context.Context, kind, key string) (string, error) {
	if err := rules.CheckKey(kind, key); err != nil {
		return "", err
	}
	doc, ok, err := c.rules.GetConfig(ctx, rules.ConfigKey(kind, key))
	if err != nil {
		return "", err
	}
	if !ok {
		return "", notFound("no %s rule %s (stored at %s)", kind, key, rulePath(kind, key))
	}
	return doc, nil
}

// waitRule waits until the catalog holds content for key (or no document
// when exists is false), so that the page shown after a change shows it.
func (c *Console) waitRule(key, content string, exists bool) {
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		got, ok := c.cat.RuleContent(key)
		if ok == exists && (!exists || got == content) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// providerKey finds the service key of the provider at addr: its
// registered URL's version and group, else those given.
func (c *Console) providerKey(ctx context.Context, iface, addr string, version, group *string) (string, error) {
	ps, err := c.providers(ctx, iface, version, group)
	if err != nil {
		return "", err
	}
	for _, p := range ps {
		if p.Address == addr {
			return url.ColonSeparatedKey(iface, p.Version, p.Group), nil
		}
	}
	return "", notFound("service %s has no provider at %s", iface, addr)
}

// setWeight writes the weight of one provider as Admin's weight page does.
func (c *Console) setWeight(ctx context.Context, iface, addr string, version, group *string, weight int) error {
	key, err := c.providerKey(ctx, iface, addr, version, group)
	if err != nil {
		return err
	}
	doc, _, err := c.rules.GetConfig(ctx, rules.ConfigKey(rules.KindOverride, key))
	if err != nil {
		return err
	}
	out, err := rules.SetWeight([]byte(doc), key, addr, weight)
	if err != nil {
		return err
	}
	_, err = c.putRule(ctx, rules.KindOverride, key, out, fmt.Sprintf("weight %d for %s", weight, addr))
	return err
}

// setEnabled takes one provider out of service, or puts it back.
func (c *Console) setEnabled(ctx context.Context, iface, addr string, version, group *string, on bool) error {
	key, err := c.providerKey(ctx, iface, addr, version, group)
	if err != nil {
		return err
	}
	ck := rules.ConfigKey(rules.KindOverride, key)
	doc, _, err := c.rules.GetConfig(ctx, ck)
	if err != nil {
		return err
	}
	out, empty, err := rules.SetDisabled([]byte(doc), key, addr, !on)
	if err != nil {
		return err
	}
	action := "disable " + addr
	if on {
		action = "enable " + addr
	}
	if empty {
		if doc == "" {
			return nil
		}
		return c.deleteRule(ctx, rules.KindOverride, key, action)
	}
	_, err = c.putRule(ctx, rules.KindOverride, key, out, action)
	return err
}

// MethodView is one method with its Java signature.
type MethodView struct {
	Name           string   `json:"name"`
	ParameterTypes []string `json:"parameterTypes"`
	ReturnType     string   `json:"returnType"`
	Signature      string   `json:"signature"`
	Version        string   `json:"version"`
	Group          string   `json:"group"`
	// Typed says the parameter types are known (from a service
	// definition); without them a test call lets the gateway find them.
	Typed bool `json:"-"`
}

// methods reads the methods of each version/group of iface from the
// service definitions its providers published; a service without one
// lists the method names of its provider URLs, without types.
func (c *Console) methods(ctx context.Context, iface string, version, group *string) ([]MethodView, error) {
	d, err := c.serviceState(ctx, iface)
	if err != nil {
		return nil, err
	}
	return c.methodsOf(ctx, d, version, group)
}

// methodsOf is methods of d.
func (c *Console) methodsOf(ctx context.Context, d serviceState, version, group *string) ([]MethodView, error) {
	iface := d.Interface
	out := []MethodView{}
	for _, row := range d.Rows {
		if (version != nil && *version != row.Version) || (group != nil && *group != row.Group) {
			continue
		}
		def, err := c.rules.GetServiceDefinition(ctx, iface, row.Version, row.Group)
		if err == nil {
			for _, m := range def.Methods {
				ret := m.ReturnType
				if ret == "" {
					ret = "void"
				}
				out = append(out, MethodView{Name: m.Name, ParameterTypes: nonNil(m.ParameterTypes), ReturnType: ret,
					Signature: ret + " " + m.Name + "(" + strings.Join(m.ParameterTypes, ", ") + ")", Version: row.Version, Group: row.Group,
					Typed: true})
			}
			continue
		}
		if !errors.Is(err, zookeeper.ErrNoDefinition) {
			return nil, err
		}
		names := map[string]bool{}
		for _, u := range append(slices.Clone(d.ProviderURLs()), d.appURLs...) {
			if u.Param(url.KeyVersion) == row.Version && u.Param(url.KeyGroup) == row.Group {
				for _, m := range strings.Split(u.Param("methods"), ",") {
					if m != "" {
						names[m] = true
					}
				}
			}
		}
		for _, m := range slices.Sorted(func(yield func(string) bool) {
			for n := range names {
				if !yield(n) {
					return
				}
			}
		}) {
			out = append(out, MethodView{Name: m, Signature: m + "(?)", Version: row.Version, Group: row.Group})
		}
	}
	slices.SortStableFunc(out, func(a, b MethodView) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// appAddresses are the addresses of the providers of application app, of
// every service it provides.
func (c *Console) appAddresses(ctx context.Context, app string) []string {
	a, ok := c.cat.Application(app)
	if !ok {
		return nil
	}
	var out []string
	for _, iface := range a.Services {
		ps, err := c.providers(ctx, iface, nil, nil)
		if err != nil {
			continue
		}
		for _, p := range ps {
			if p.Application == app && !slices.Contains(out, p.Address) {
				out = append(out, p.Address)
			}
		}
	}
	return out
}
