package directory

import (
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Options configures a Dynamic directory.
type Options struct {
	// Consumer is this reference's consumer URL: the when-side of condition
	// rules, the call settings laid over providers, the target of
	// consumer-side overrides. Required.
	Consumer *url.URL
	// Connect makes the invoker of a new provider. Required. A provider that
	// fails to connect is logged and left out until the next Update.
	Connect func(provider *url.URL) (cluster.ProviderInvoker, error)
	// Release is called with the invoker of each provider that left, and of
	// all providers on Close, to close its connections. Optional.
	Release func(cluster.ProviderInvoker)
	// Logger reports providers that failed to connect. Default slog.Default().
	Logger *slog.Logger
}

// Dynamic is the directory of a service found in a registry. Update, the
// setters and Close may be called from the registry's watch loop while List
// serves calls: List reads an immutable snapshot, rebuilt on every change.
type Dynamic struct {
	opts Options

	// update serialises changes; connecting happens under it but outside mu.
	update sync.Mutex
	mu     sync.Mutex
	// entries by provider URL without the volatile keys, so a re-registration
	// that only changes timestamp or pid keeps its connection.
	entries       map[string]*entry
	configurators []configSlot
	configGen     uint64 // bumped by every change of configurators
	closed        bool
	// keys of the URLs of the last Update: a registry notifies the same
	// URL objects again (never changed), so an update computes the keys
	// of new ones only, not of the whole list.
	keys map[*url.URL]string

	router   atomic.Pointer[routerBox]
	view     atomic.Pointer[[]cluster.ProviderInvoker]
	consumer atomic.Pointer[url.URL] // Options.Consumer under the configurators
}

type entry struct {
	raw *url.URL
	inv cluster.ProviderInvoker
	// view is the consumer's view of raw under the configurators of
	// generation gen (nil: disabled); viewOf nil: not computed yet. A
	// rebuild recomputes only what changed.
	view   cluster.ProviderInvoker
	viewOf *url.URL
	gen    uint64
}

type configSlot struct {
	name  string
	order int
	c     Configurator
}

// routerBox lets a nil Router be stored atomically.
type routerBox struct{ r cluster.Router }

// NewDynamic makes an empty directory.
func NewDynamic(opts Options) (*Dynamic, error) {
	if opts.Consumer == nil || opts.Connect == nil {
		return nil, errors.New("directory.NewDynamic: Options.Consumer and Options.Connect are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	d := &Dynamic{opts: opts, entries: make(map[string]*entry)}
	d.view.Store(&[]cluster.ProviderInvoker{})
	d.consumer.Store(opts.Consumer)
	return d, nil
}

func identityKey(u *url.URL) string {
	return u.WithoutParams(url.KeyTimestamp, url.KeyPID).String()
}

// Update replaces the provider set with providers (the full set, as a
// registry notification carries it; empty:// entries are ignored, so a list
// of only those empties the directory).
func (d *Dynamic) Update(providers []*url.URL) {
	d.update.Lock()
	defer d.update.Unlock()

	wanted := make(map[string]*url.URL, len(providers))
	keys := make(map[*url.URL]string, len(providers))
	for _, u := range providers {
		if u.Protocol() != "empty" {
			k, ok := d.keys[u]
			if !ok {
				k = identityKey(u)
			}
			keys[u] = k
			wanted[k] = u
		}
	}
	d.keys = keys // only Update, serialised by d.update, uses it
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	var fresh []string
	for k := range wanted {
		if d.entries[k] == nil {
			fresh = append(fresh, k)
		}
	}
	d.mu.Unlock()

	connected := make(map[string]cluster.ProviderInvoker, len(fresh))
	for _, k := range fresh {
		inv, err := d.opts.Connect(wanted[k])
		if err != nil {
			d.opts.Logger.Warn("directory: cannot connect to provider; leaving it out until the next update",
				"provider", wanted[k].String(), "error", err)
			continue
		}
		connected[k] = inv
	}

	d.mu.Lock()
	var removed []cluster.ProviderInvoker
	if d.closed {
		// Closed while connecting: nothing will ever release these otherwise.
		for _, inv := range connected {
			removed = append(removed, inv)
		}
	} else {
		for k, e := range d.entries {
			if u, ok := wanted[k]; ok {
				e.raw = u // timestamp and pid may have changed
				continue
			}
			removed = append(removed, e.inv)
			delete(d.entries, k)
		}
		for k, inv := range connected {
			d.entries[k] = &entry{raw: wanted[k], inv: inv}
		}
		d.rebuild()
	}
	d.mu.Unlock()
	d.release(removed)
}

// SetRouter sets the router applied on every List (usually a router.Chain);
// nil routes nothing.
func (d *Dynamic) SetRouter(r cluster.Router) { d.router.Store(&routerBox{r}) }

// SetConfigurator installs override rules under name, applied in ascending
// order (later ones win); nil removes them. Providers are rewritten at once.
func (d *Dynamic) SetConfigurator(name string, order int, c Configurator) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cs := slices.DeleteFunc(slices.Clone(d.configurators), func(s configSlot) bool { return s.name == name })
	if c != nil {
		cs = append(cs, configSlot{name, order, c})
		slices.SortStableFunc(cs, func(a, b configSlot) int { return a.order - b.order })
	}
	d.configurators = cs
	d.configGen++
	consumer := d.opts.Consumer
	for _, s := range cs {
		if cc, ok := s.c.(ConsumerConfigurator); ok {
			consumer = cc.ConfigureConsumer(consumer)
		}
	}
	d.consumer.Store(consumer)
	d.rebuild()
}

// ConsumerURL is the reference's consumer URL under the consumer-side
// override rules: where settings of the whole reference that need no
// provider (mock) are read, as Java reads them from its directory's
// consumer URL. It must not be modified.
func (d *Dynamic) ConsumerURL() *url.URL { return d.consumer.Load() }

// rebuild recomputes the snapshot List reads; d.mu is held.
func (d *Dynamic) rebuild() {
	cs := make([]Configurator, len(d.configurators))
	for i, s := range d.configurators {
		cs[i] = s.c
	}
	view := make([]cluster.ProviderInvoker, 0, len(d.entries))
	for _, e := range d.entries {
		if e.viewOf != e.raw || e.gen != d.configGen {
			e.view = effective(e.inv, e.raw, d.opts.Consumer, cs)
			e.viewOf, e.gen = e.raw, d.configGen
		}
		if e.view != nil {
			view = append(view, e.view)
		}
	}
	// A stable order keeps round robin and "available" predictable.
	sortByAddress(view)
	d.view.Store(&view)
}

// List implements cluster.Directory: the enabled, available providers left
// by the router.
func (d *Dynamic) List(inv *rpc.Invocation) []cluster.ProviderInvoker {
	var r cluster.Router
	if b := d.router.Load(); b != nil {
		r = b.r
	}
	return list(*d.view.Load(), r, d.opts.Consumer, inv)
}

// Providers lists every enabled provider with its effective URL, available
// or not, before routing: what a console or a test inspects.
func (d *Dynamic) Providers() []cluster.ProviderInvoker {
	return slices.Clone(*d.view.Load())
}

// Close releases every provider; later Updates are ignored.
func (d *Dynamic) Close() {
	d.update.Lock()
	defer d.update.Unlock()
	d.mu.Lock()
	d.closed = true
	removed := make([]cluster.ProviderInvoker, 0, len(d.entries))
	for k, e := range d.entries {
		removed = append(removed, e.inv)
		delete(d.entries, k)
	}
	d.rebuild()
	d.mu.Unlock()
	d.release(removed)
}

func (d *Dynamic) release(invs []cluster.ProviderInvoker) {
	if d.opts.Release == nil {
		return
	}
	for _, inv := range invs {
		d.opts.Release(inv)
	}
}
