package console

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dubbo-lab/dubbo/console/catalog"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Providers registered at application level only (register-mode
// instance, dubbo-go's default) have no URL in the registry: what they
// serve is in the MetadataInfo of their instance's revision, which the
// console's consumer reads as application-level discovery does
// (Caller.InstanceProviders; kept per revision). The console lists the
// provider URLs it makes beside the interface-level ones, so that they
// have the same weight, enable and tag controls, and their versions and
// groups are the service's rows (a versioned service's methods and test
// calls need them).

// instanceMetadataWait bounds the reading of one instance's metadata for
// a page.
const instanceMetadataWait = 2 * time.Second

// serviceState is what the console knows of one interface: the registry's
// detail, and the providers its application-level instances serve. Rows
// are the version/group rows of both.
type serviceState struct {
	catalog.ServiceDetail
	appURLs []*url.URL
}

// serviceState reads the detail of iface and the providers of its
// applications' instances.
func (c *Console) serviceState(ctx context.Context, iface string) (serviceState, error) {
	d, err := c.service(iface)
	if err != nil {
		return serviceState{}, err
	}
	s := serviceState{ServiceDetail: d, appURLs: c.appProviderURLs(ctx, d)}
	s.Rows = mergeRows(d, s.appURLs)
	return s, nil
}

// appProviderURLs are the provider URLs of iface that the instances of
// the applications mapped to it serve, but for addresses that also
// registered at interface level (their URL carries every parameter, as
// APPLICATION_FIRST has it).
func (c *Console) appProviderURLs(ctx context.Context, d catalog.ServiceDetail) []*url.URL {
	if len(d.Apps) == 0 || c.call == nil {
		return nil
	}
	registered := map[string]bool{}
	for _, u := range d.ProviderURLs() {
		registered[u.Address()+"|"+u.Param(url.KeyVersion)+"|"+u.Param(url.KeyGroup)] = true
	}
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		out []*url.URL
	)
	for _, app := range d.Apps {
		for _, in := range c.cat.InstancesOf(app) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ictx, cancel := context.WithTimeout(ctx, instanceMetadataWait)
				defer cancel()
				urls, err := c.call.InstanceProviders(ictx, in)
				if err != nil {
					c.log.Debug("application-level providers of an instance not read", "app", app, "instance", in.ID, "err", err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for _, u := range urls {
					if u.ParamOr(url.KeyInterface, strings.TrimPrefix(u.Path(), "/")) == d.Interface &&
						!registered[u.Address()+"|"+u.Param(url.KeyVersion)+"|"+u.Param(url.KeyGroup)] {
						out = append(out, u)
					}
				}
			}()
		}
	}
	wg.Wait()
	slices.SortFunc(out, func(a, b *url.URL) int {
		return cmp.Or(strings.Compare(a.Address(), b.Address()), strings.Compare(a.Param(url.KeyVersion), b.Param(url.KeyVersion)),
			strings.Compare(a.Param(url.KeyGroup), b.Param(url.KeyGroup)))
	})
	return out
}

// mergeRows are the catalog's version/group rows of d with those of the
// application-level providers: their providers counted in, and rows of
// their own for versions and groups only they serve, which replace the
// catalog's rows of no provider and no consumer (the one that stands for
// an interface known only from the mapping, or of an interface folder
// that holds only the providers' subscriptions).
func mergeRows(d catalog.ServiceDetail, appURLs []*url.URL) []catalog.Service {
	if len(appURLs) == 0 {
		return d.Rows
	}
	rows := slices.DeleteFunc(slices.Clone(d.Rows), func(r catalog.Service) bool {
		return r.Consumers == 0 && (r.Registration == catalog.LevelApplication || r.Providers == 0)
	})
	for _, u := range appURLs {
		v, g := u.Param(url.KeyVersion), u.Param(url.KeyGroup)
		i := slices.IndexFunc(rows, func(r catalog.Service) bool { return r.Version == v && r.Group == g })
		if i < 0 {
			rows = append(rows, catalog.Service{Interface: d.Interface, Version: v, Group: g, Registration: catalog.LevelApplication,
				Applications: []string{}})
			i = len(rows) - 1
		}
		r := &rows[i]
		r.Providers++
		if r.Registration == catalog.LevelInterface {
			r.Registration = catalog.LevelBoth
		}
		if app := u.Param("application"); app != "" && !slices.Contains(r.Applications, app) {
			r.Applications = append(slices.Clone(r.Applications), app)
		}
	}
	slices.SortFunc(rows, func(a, b catalog.Service) int {
		return cmp.Or(strings.Compare(a.Version, b.Version), strings.Compare(a.Group, b.Group))
	})
	return rows
}
