// Package directory lists the providers of one referenced service for the
// cluster invoker (it implements cluster.Directory).
//
// [Static] is a fixed list, for direct "url = dubbo://host:port" references
// and tests. [Dynamic] follows the registry: every [Dynamic.Update] carries
// the full provider set (an empty set means none are left); it keeps the
// invokers of providers that stay, connects new ones and releases removed
// ones through callbacks.
//
// Both hand out providers whose URL is what the consumer should use: the
// provider's URL, overlaid with the consumer's call settings ([Merge]), then
// rewritten by the override rules ([Configurator], from package
// configurator). Providers that the rules disable, or that report
// !Available(), are left out; the router (package router) then filters the
// rest for each call.
package directory

import (
	"slices"
	"strings"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/cluster/configurator"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Configurator rewrites a provider URL as consumer should see it, returning
// a new URL or provider itself; configurator.Rules implements it.
type Configurator interface {
	Configure(provider, consumer *url.URL) *url.URL
}

// ConsumerConfigurator is a Configurator that also rewrites the consumer
// URL itself with its consumer-side rules; configurator.Rules implements
// it.
type ConsumerConfigurator interface {
	ConfigureConsumer(consumer *url.URL) *url.URL
}

// consumerSettings are the keys a consumer's own value overrides the
// provider's for, plain or per method ("sayHello.timeout"), as Dubbo merges
// the reference's parameters into each provider URL.
var consumerSettings = []string{
	"timeout", "retries", "loadbalance", "cluster", "forks", "hash.nodes", "hash.arguments",
	"actives", "sticky", "async", "mock",
}

// Merge returns provider with the consumer's call settings laid over it
// (provider itself when the consumer sets none).
func Merge(provider, consumer *url.URL) *url.URL {
	if consumer == nil {
		return provider
	}
	out := provider
	for k, v := range consumer.Params() {
		if v == "" || !isSetting(k) || provider.Param(k) == v {
			continue
		}
		if out == provider {
			out = provider.Clone()
		}
		out.SetParam(k, v)
	}
	return out
}

func isSetting(k string) bool {
	for _, s := range consumerSettings {
		if k == s || strings.HasSuffix(k, "."+s) {
			return true
		}
	}
	return false
}

// configured is a provider invoker seen through its effective URL.
type configured struct {
	cluster.ProviderInvoker
	url *url.URL
}

func (c *configured) URL() *url.URL { return c.url }

// Unwrap returns the provider's own invoker, for what it does beyond
// cluster.ProviderInvoker (opening a stream).
func (c *configured) Unwrap() cluster.ProviderInvoker { return c.ProviderInvoker }

// effective is the consumer's view of one provider, or nil when disabled.
func effective(inv cluster.ProviderInvoker, raw, consumer *url.URL, cs []Configurator) cluster.ProviderInvoker {
	u := Merge(raw, consumer)
	for _, c := range cs {
		u = c.Configure(u, consumer)
	}
	if configurator.Disabled(u) {
		return nil
	}
	return &configured{ProviderInvoker: inv, url: u}
}

// list filters out unavailable providers, then routes.
func list(all []cluster.ProviderInvoker, r cluster.Router, consumer *url.URL, inv *rpc.Invocation) []cluster.ProviderInvoker {
	ps := make([]cluster.ProviderInvoker, 0, len(all))
	for _, p := range all {
		if p.Available() {
			ps = append(ps, p)
		}
	}
	if r != nil && len(ps) > 0 {
		ps = r.Route(ps, consumer, inv)
	}
	return ps
}

// Static is a fixed list of providers.
type Static struct {
	consumer  *url.URL
	router    cluster.Router
	providers []cluster.ProviderInvoker
}

// NewStatic lists providers for consumer (nil for none), routed by router
// (nil for none).
func NewStatic(consumer *url.URL, router cluster.Router, providers ...cluster.ProviderInvoker) *Static {
	s := &Static{consumer: consumer, router: router}
	for _, p := range providers {
		if e := effective(p, p.URL(), consumer, nil); e != nil {
			s.providers = append(s.providers, e)
		}
	}
	return s
}

// List implements cluster.Directory.
func (s *Static) List(inv *rpc.Invocation) []cluster.ProviderInvoker {
	return list(s.providers, s.router, s.consumer, inv)
}

func sortByAddress(ps []cluster.ProviderInvoker) {
	// Each address is printed once, not once per comparison.
	type keyed struct {
		addr string
		p    cluster.ProviderInvoker
	}
	ks := make([]keyed, len(ps))
	for i, p := range ps {
		ks[i] = keyed{p.URL().Address(), p}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return strings.Compare(a.addr, b.addr) })
	for i := range ks {
		ps[i] = ks[i].p
	}
}
