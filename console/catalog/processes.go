package catalog

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/dubbo-lab/dubbo/node/url"
)

// Process is one provider or consumer process as the registry shows it.
type Process struct {
	// Address is a provider's host:port, or a consumer's host (a consumer
	// node names no port: the consumers of one host are one row).
	Address      string   `json:"address"`
	Applications []string `json:"applications"`
	// Services are the interfaces it provides, or references.
	Services []string `json:"services"`
}

// Processes are the registry's processes, each list sorted by address.
type Processes struct {
	// Providers are the addresses of provider nodes (stale ones left out)
	// and of application instances, whose services are those the mapping
	// names for their application.
	Providers []Process `json:"providers"`
	// Consumers are the hosts of consumer nodes.
	Consumers []Process `json:"consumers"`
}

// Processes lists the provider and consumer processes the registry holds.
func (c *Catalog) Processes() Processes {
	c.mu.RLock()
	defer c.mu.RUnlock()
	prov, cons := processSet{}, processSet{}
	for iface, in := range c.state.ifaces {
		for _, u := range in.cats["providers"] {
			if !in.stale[u].Stale {
				prov.add(u.Address(), u.Param("application"), iface)
			}
		}
		for _, u := range in.cats["consumers"] {
			cons.add(u.Host(), u.Param("application"), iface)
		}
	}
	provides := map[string][]string{} // application -> the interfaces mapped to it
	for iface, apps := range c.state.mapping {
		for _, app := range apps {
			provides[app] = append(provides[app], iface)
		}
	}
	for app, insts := range c.state.apps {
		for _, in := range insts {
			if in.inst == nil {
				continue
			}
			prov.add(in.address(), app, "")
			for _, iface := range provides[app] {
				prov.add(in.address(), app, iface)
			}
		}
	}
	return Processes{Providers: prov.list(), Consumers: cons.list()}
}

// processSet gathers processes by address.
type processSet map[string]*struct{ apps, services map[string]bool }

func (s processSet) add(addr, app, iface string) {
	p := s[addr]
	if p == nil {
		p = &struct{ apps, services map[string]bool }{map[string]bool{}, map[string]bool{}}
		s[addr] = p
	}
	if app != "" {
		p.apps[app] = true
	}
	if iface != "" {
		p.services[iface] = true
	}
}

func (s processSet) list() []Process {
	out := make([]Process, 0, len(s))
	for _, addr := range slices.Sorted(maps.Keys(s)) {
		p := s[addr]
		out = append(out, Process{Address: addr, Applications: sortedKeys(p.apps), Services: sortedKeys(p.services)})
	}
	return out
}

// Reference is an application's consumer nodes of one service: a version
// and group of an interface.
type Reference struct {
	Application string `json:"application"`
	Interface   string `json:"interface"`
	Version     string `json:"version"`
	Group       string `json:"group"`
}

// Dependencies are who calls whom as the registry shows it.
type Dependencies struct {
	// References are the consumer nodes' applications and services, one
	// each, sorted.
	References []Reference
	byKey      map[string]map[string]bool // url.ColonSeparatedKey -> provider nodes' applications
	mapped     map[string][]string        // interface -> applications, by the mapping
}

// ProvidersOf are the applications that provide a service: those of its
// provider nodes of that version and group, and those the mapping names
// for its interface (application-level registration), sorted.
func (d Dependencies) ProvidersOf(iface, version, group string) []string {
	apps := maps.Clone(d.byKey[url.ColonSeparatedKey(iface, version, group)])
	if apps == nil {
		apps = map[string]bool{}
	}
	for _, a := range d.mapped[iface] {
		apps[a] = true
	}
	return sortedKeys(apps)
}

// Dependencies reads who calls whom from the consumer and provider nodes
// and the mapping.
func (c *Catalog) Dependencies() Dependencies {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d := Dependencies{References: []Reference{}, byKey: map[string]map[string]bool{}, mapped: map[string][]string{}}
	refs := map[Reference]bool{}
	for iface, in := range c.state.ifaces {
		for _, u := range in.cats["consumers"] {
			refs[Reference{Application: u.Param("application"), Interface: iface, Version: u.Param(url.KeyVersion), Group: u.Param(url.KeyGroup)}] = true
		}
		for _, u := range in.cats["providers"] {
			if a := u.Param("application"); a != "" && !in.stale[u].Stale {
				k := url.ColonSeparatedKey(iface, u.Param(url.KeyVersion), u.Param(url.KeyGroup))
				if d.byKey[k] == nil {
					d.byKey[k] = map[string]bool{}
				}
				d.byKey[k][a] = true
			}
		}
	}
	for iface, apps := range c.state.mapping {
		d.mapped[iface] = slices.Clone(apps)
	}
	for r := range refs {
		d.References = append(d.References, r)
	}
	slices.SortFunc(d.References, func(a, b Reference) int {
		return cmp.Or(strings.Compare(a.Application, b.Application), strings.Compare(a.Interface, b.Interface),
			strings.Compare(a.Version, b.Version), strings.Compare(a.Group, b.Group))
	})
	return d
}
