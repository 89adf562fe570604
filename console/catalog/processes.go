package catalog

import (
	"maps"
	"slices"
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
