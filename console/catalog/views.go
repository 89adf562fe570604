package catalog

import (
	"cmp"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/cluster/configurator"
	"github.com/dubbo-lab/dubbo/node/registry/metadata"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Registration levels of a service.
const (
	LevelInterface   = "interface"   // /dubbo/<interface>/providers
	LevelApplication = "application" // /dubbo/mapping/<interface> and /services/<app>
	LevelBoth        = "both"
)

// Service is one row of the services list: an interface with one version
// and group, as its providers and consumers registered it.
type Service struct {
	Interface string `json:"interface"`
	Version   string `json:"version"`
	Group     string `json:"group"`
	Providers int    `json:"providers"`
	Consumers int    `json:"consumers"`
	// Applications provide the service (from provider URLs and the mapping).
	Applications []string `json:"applications"`
	// Registration is LevelInterface, LevelApplication or LevelBoth.
	Registration string `json:"registration"`
}

type gv struct{ version, group string }

func gvOf(u *url.URL) gv { return gv{u.Param(url.KeyVersion), u.Param(url.KeyGroup)} }

// Services lists every service, sorted by interface, version and group.
// Interface-level rows come from provider and consumer URLs; an interface
// known only from the mapping (application-level registration, dubbo-go's
// default) gets one row whose providers are its applications' instances.
// The rows' Applications are shared with other callers: read them only.
func (c *Catalog) Services() []Service {
	c.mu.RLock()
	defer c.mu.RUnlock()
	// Pages ask far more often than the registry changes.
	c.memo.Lock()
	defer c.memo.Unlock()
	if c.memo.services == nil || c.memo.version != c.state.version {
		c.memo.services, c.memo.version = c.services(), c.state.version
	}
	return slices.Clone(c.memo.services)
}

// services is Services. Call with mu held.
func (c *Catalog) services() []Service {
	out := make([]Service, 0, len(c.state.ifaces)+len(c.state.mapping))
	for iface, n := range c.state.ifaces {
		out = c.appendRows(out, iface, n)
	}
	for iface, apps := range c.state.mapping {
		if n := c.state.ifaces[iface]; n != nil && len(n.cats["providers"]) > 0 {
			continue
		}
		if c.instanceCount(apps) == 0 && c.state.ifaces[iface] != nil {
			continue // consumers only; already listed
		}
		if c.state.ifaces[iface] != nil {
			// Consumers registered at interface level, providers at
			// application level: fold them into one row.
			i := slices.IndexFunc(out, func(s Service) bool { return s.Interface == iface })
			if i >= 0 {
				out[i].Providers = c.instanceCount(apps)
				out[i].Applications = apps
				out[i].Registration = LevelApplication
				continue
			}
		}
		out = append(out, Service{Interface: iface, Providers: c.instanceCount(apps),
			Applications: apps, Registration: LevelApplication})
	}
	slices.SortFunc(out, func(a, b Service) int {
		return cmp.Or(strings.Compare(a.Interface, b.Interface), strings.Compare(a.Version, b.Version), strings.Compare(a.Group, b.Group))
	})
	return out
}

// appendRows adds the rows of one interface folder. Call with mu held.
func (c *Catalog) appendRows(out []Service, iface string, n *ifaceNode) []Service {
	rows := map[gv]*Service{}
	row := func(k gv) *Service {
		if r := rows[k]; r != nil {
			return r
		}
		r := &Service{Interface: iface, Version: k.version, Group: k.group, Registration: LevelInterface}
		rows[k] = r
		return r
	}
	for _, u := range n.cats["providers"] {
		if n.stale[u].Stale {
			continue // listed in the service's providers, marked; not counted
		}
		r := row(gvOf(u))
		r.Providers++
		if app := u.Param("application"); app != "" && !slices.Contains(r.Applications, app) {
			r.Applications = append(r.Applications, app)
		}
	}
	for _, u := range n.cats["consumers"] {
		row(gvOf(u)).Consumers++
	}
	if len(rows) == 0 {
		row(gv{})
	}
	apps := c.state.mapping[iface]
	for _, r := range rows {
		if r.Providers > 0 && c.instanceCount(apps) > 0 {
			r.Registration = LevelBoth
		}
		slices.Sort(r.Applications)
		out = append(out, *r)
	}
	return out
}

func (c *Catalog) instanceCount(apps []string) int {
	n := 0
	for _, a := range apps {
		n += len(c.state.apps[a])
	}
	return n
}

// Provider is one registered provider of a service.
type Provider struct {
	Address     string            `json:"address"` // host:port
	URL         string            `json:"url"`
	Application string            `json:"application"`
	Version     string            `json:"version"`
	Group       string            `json:"group"`
	Weight      int               `json:"weight"`
	Enabled     bool              `json:"enabled"`
	Params      map[string]string `json:"params"`
	Methods     []string          `json:"methods"`
	// Staleness is set on a node left by a session that is gone; the
	// service's provider counts leave such nodes out.
	Staleness
}

// Instance is one application instance (/services/<app>/<id>).
type Instance struct {
	Application string            `json:"application"`
	ID          string            `json:"id"`
	Address     string            `json:"address"` // host:port
	Revision    string            `json:"revision"`
	Metadata    map[string]string `json:"metadata"`
	Registered  int64             `json:"registered"` // Unix milliseconds
	// Raw is the node's data when it is not a Curator instance we can read.
	Raw string `json:"raw,omitempty"`
}

// ServiceDetail is everything the registry says about one interface.
type ServiceDetail struct {
	Interface string `json:"interface"`
	// Providers and Consumers are the interface-level URLs, every version
	// and group.
	Providers []Provider `json:"providers"`
	Consumers []Consumer `json:"consumers"`
	Instances []Instance `json:"instances"` // of the applications the mapping names
	Apps      []string   `json:"applications"`
	Routers   []string   `json:"routers"`       // old-style route URLs
	Overrides []string   `json:"configurators"` // old-style override URLs
	Rows      []Service  `json:"services"`      // the version/group rows
	provURLs  []*url.URL // as registered, for the console's rule logic
}

// Consumer is one registered consumer.
type Consumer struct {
	Address     string            `json:"address"` // host
	URL         string            `json:"url"`
	Application string            `json:"application"`
	Version     string            `json:"version"`
	Group       string            `json:"group"`
	Params      map[string]string `json:"params"`
}

// ProviderURLs are the registered provider URLs.
func (d ServiceDetail) ProviderURLs() []*url.URL { return d.provURLs }

// Service returns what the registry holds about iface; ok is false when it
// knows nothing of it.
func (c *Catalog) Service(iface string) (ServiceDetail, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := c.state.ifaces[iface]
	apps, mapped := c.state.mapping[iface]
	if n == nil && !mapped {
		return ServiceDetail{}, false
	}
	d := ServiceDetail{Interface: iface, Apps: slices.Clone(apps),
		Providers: []Provider{}, Consumers: []Consumer{}, Instances: []Instance{}, Routers: []string{}, Overrides: []string{}}
	if n != nil {
		d.Rows = c.appendRows(nil, iface, n)
		for _, u := range n.cats["providers"] {
			d.provURLs = append(d.provURLs, u)
			p := ProviderOf(u)
			p.Staleness = n.stale[u]
			d.Providers = append(d.Providers, p)
		}
		for _, u := range n.cats["consumers"] {
			d.Consumers = append(d.Consumers, Consumer{Address: u.Host(), URL: u.Redacted(), Application: u.Param("application"),
				Version: u.Param(url.KeyVersion), Group: u.Param(url.KeyGroup), Params: RedactParams(u.Params())})
		}
		for _, u := range n.cats["routers"] {
			if u.Protocol() != "empty" {
				d.Routers = append(d.Routers, u.Redacted())
			}
		}
		for _, u := range n.cats["configurators"] {
			if u.Protocol() != "empty" {
				d.Overrides = append(d.Overrides, u.Redacted())
			}
		}
	}
	for _, app := range apps {
		d.Instances = append(d.Instances, sortedInstances(app, c.state.apps[app])...)
	}
	if len(d.Rows) == 0 {
		d.Rows = []Service{{Interface: iface, Providers: len(d.Instances), Applications: d.Apps, Registration: LevelApplication}}
	}
	return d, true
}

// ProviderOf describes a provider URL. Its Staleness, a fact of the
// node rather than of the URL, is left zero.
func ProviderOf(u *url.URL) Provider {
	p := Provider{
		Address: u.Address(), URL: u.Redacted(), Application: u.Param("application"),
		Version: u.Param(url.KeyVersion), Group: u.Param(url.KeyGroup),
		Weight: u.IntParam(cluster.KeyWeight, cluster.DefaultWeight), Enabled: !configurator.Disabled(u), Params: RedactParams(u.Params()),
	}
	if m := u.Param("methods"); m != "" {
		p.Methods = strings.Split(m, ",")
	}
	return p
}

// Application is one application: its instances (application-level
// registration) and the interfaces it provides and references.
type Application struct {
	Name      string     `json:"name"`
	Instances []Instance `json:"instances"`
	// Services are the interfaces it provides: those the mapping names it
	// for, and those of its provider nodes.
	Services []string `json:"services"`
	// References are the interfaces its consumer nodes reference.
	References []string `json:"references"`
}

// Applications lists every application the registry names, sorted: those
// with instances under /services, and those named by the application
// parameter of provider and consumer nodes.
func (c *Catalog) Applications() []Application {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.applications()
}

// applications is Applications. Call with mu held.
func (c *Catalog) applications() []Application {
	provides, references, names := c.appsOf()
	out := make([]Application, 0, len(names))
	for _, name := range slices.Sorted(maps.Keys(names)) {
		out = append(out, Application{Name: name, Instances: sortedInstances(name, c.state.apps[name]),
			Services: sortedKeys(provides[name]), References: sortedKeys(references[name])})
	}
	return out
}

// appsOf reads the interfaces each application provides and references,
// and the names of all applications. Call with mu held.
func (c *Catalog) appsOf() (provides, references map[string]map[string]bool, names map[string]bool) {
	provides, references = map[string]map[string]bool{}, map[string]map[string]bool{}
	add := func(m map[string]map[string]bool, app, iface string) {
		if m[app] == nil {
			m[app] = map[string]bool{}
		}
		m[app][iface] = true
	}
	for iface, apps := range c.state.mapping {
		for _, a := range apps {
			add(provides, a, iface)
		}
	}
	for iface, in := range c.state.ifaces {
		for _, u := range in.cats["providers"] {
			if a := u.Param("application"); a != "" && !in.stale[u].Stale {
				add(provides, a, iface)
			}
		}
		for _, u := range in.cats["consumers"] {
			if a := u.Param("application"); a != "" {
				add(references, a, iface)
			}
		}
	}
	names = map[string]bool{}
	for _, m := range []map[string]map[string]bool{provides, references} {
		for a := range m {
			names[a] = true
		}
	}
	for a := range c.state.apps {
		names[a] = true
	}
	return provides, references, names
}

// sortedKeys are m's keys, sorted; empty, not nil, when there are none.
func sortedKeys(m map[string]bool) []string {
	return append([]string{}, slices.Sorted(maps.Keys(m))...)
}

// Application returns one application; ok is false when the registry
// does not name it.
func (c *Catalog) Application(name string) (Application, bool) {
	for _, a := range c.Applications() {
		if a.Name == name {
			return a, true
		}
	}
	return Application{}, false
}

func sortedInstances(app string, m map[string]*appInstance) []Instance {
	out := make([]Instance, 0, len(m))
	for _, id := range slices.Sorted(maps.Keys(m)) {
		ai := m[id]
		in := Instance{Application: app, ID: id}
		if ai.inst == nil {
			in.Raw = RedactText(ai.raw)
		} else {
			in.Address = ai.address()
			in.Revision = ai.inst.Revision()
			in.Registered = ai.inst.RegistrationTimeUTC
			if ai.inst.Payload != nil {
				in.Metadata = RedactParams(ai.inst.Payload.Metadata)
			}
		}
		out = append(out, in)
	}
	return out
}

// InstancesOf are the instances of app as registered (those whose node
// parses), sorted by id: what application-level discovery reads. They
// are shared: read them only.
func (c *Catalog) InstancesOf(app string) []*metadata.Instance {
	c.mu.RLock()
	defer c.mu.RUnlock()
	m := c.state.apps[app]
	out := make([]*metadata.Instance, 0, len(m))
	for _, id := range slices.Sorted(maps.Keys(m)) {
		if in := m[id].inst; in != nil {
			out = append(out, in)
		}
	}
	return out
}

// address is the instance's host:port.
func (ai *appInstance) address() string {
	return net.JoinHostPort(ai.inst.Address, strconv.Itoa(ai.inst.Port))
}

// Rule is one config-center document.
type Rule struct {
	Key     string `json:"key"` // e.g. org.example.Greeter:1.0.0:.condition-router
	Content string `json:"content"`
}

// Rules lists the config-center documents, sorted by key.
func (c *Catalog) Rules() []Rule {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Rule, 0, len(c.state.rules))
	for _, k := range slices.Sorted(maps.Keys(c.state.rules)) {
		out = append(out, Rule{Key: k, Content: c.state.rules[k]})
	}
	return out
}

// RuleContent returns one document as the catalog last read it.
func (c *Catalog) RuleContent(key string) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.state.rules[key]
	return s, ok
}

// Counts are the overview's figures. Services and Applications count
// what Services and Applications list.
type Counts struct {
	Services     int `json:"services"` // distinct interfaces
	Applications int `json:"applications"`
	Providers    int `json:"providers"` // provider nodes, stale ones left out
	Consumers    int `json:"consumers"` // consumer nodes
	Instances    int `json:"instances"` // application instances
}

// Counts counts what the registry holds.
func (c *Catalog) Counts() Counts {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var n Counts
	// Services lists a row for every interface folder and every mapped
	// interface.
	ifaces := map[string]bool{}
	for iface := range c.state.ifaces {
		ifaces[iface] = true
	}
	for iface := range c.state.mapping {
		ifaces[iface] = true
	}
	_, _, apps := c.appsOf()
	n.Services, n.Applications = len(ifaces), len(apps)
	for _, in := range c.state.ifaces {
		n.Providers += len(in.cats["providers"]) - len(in.stale)
		n.Consumers += len(in.cats["consumers"])
	}
	for _, insts := range c.state.apps {
		n.Instances += len(insts)
	}
	return n
}
