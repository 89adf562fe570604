// Package configurator holds Dubbo's override rules ("dynamic
// configuration"): parameters that an operator sets on running providers
// without restarting anything, such as weight, timeout, retries,
// loadbalance or disabled=true.
//
// Rules come as YAML from the config center (<service key>.configurators or
// <application>.configurators: a [Document], read by [ParseDocument] or
// straight to rules by [Parse]) or as the old override:// URLs under
// /dubbo/<iface>/configurators ([ParseURL], [ParseURLs]). Either way they
// become [Override]s, and a [Rules] list rewrites provider URLs as the
// consumer's directory sees them. The directory applies them to every
// provider URL whenever rules or providers change, so a provider with
// disabled=true drops out of routing and a new weight takes effect at once.
// [Rules.ConfigureConsumer] applies the consumer-side ones to the
// reference's own URL, where settings that need no provider (mock) are
// read. An item's match ([ConditionMatch]) narrows it further by address,
// service, application and parameters, as Java Dubbo 3.3 applies it.
package configurator

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dubbo-lab/dubbo/node/url"
)

// ErrInvalidRule is the category of every parse error.
var ErrInvalidRule = errors.New("invalid override rule")

// anyHost in addresses or as an override URL's host means every instance.
const anyHost = "0.0.0.0"

// Override sets Parameters on the URLs it matches.
type Override struct {
	// Side is "provider" (match providers by Addresses), "consumer" (match
	// this consumer by Addresses and the providers by ProviderAddresses), or
	// "" for either.
	Side string
	// Addresses are hosts or host:port; "0.0.0.0" or none matches all.
	Addresses []string
	// ProviderAddresses narrow a consumer-side rule to these providers.
	ProviderAddresses []string
	// Applications, when set, must contain the application of the matched
	// side ("*" matches any).
	Applications []string
	// Service, when set, is the interface the rule is for; Services lists
	// several (application-scoped rules). "*" or none matches any.
	Service  string
	Services []string
	// Group and Version, when set, must equal the provider's.
	Group, Version string
	// Parameters are set on matching URLs.
	Parameters map[string]string
	// OnlyIfAbsent keeps values the URL already has (the old absent:// form).
	OnlyIfAbsent bool
	// Match, when set, must hold too (ConditionMatch).
	Match *ConditionMatch
}

// Rules apply overrides in order: those for every host first, then those
// naming a host, so that the more specific rule wins. The zero value applies
// nothing.
type Rules []*Override

// NewRules orders overrides for Configure.
func NewRules(overrides ...*Override) Rules {
	r := slices.Clone(overrides)
	slices.SortStableFunc(r, func(a, b *Override) int { return a.specificity() - b.specificity() })
	return r
}

func (o *Override) specificity() int {
	for _, a := range o.Addresses {
		if a != anyHost && a != "*" {
			return 1
		}
	}
	return 0
}

// Configure returns provider as the consumer should see it after the rules:
// a modified clone, or provider itself when no rule matches.
func (r Rules) Configure(provider, consumer *url.URL) *url.URL {
	out := provider
	for _, o := range r {
		if !o.Matches(provider, consumer) {
			continue
		}
		if out == provider {
			out = provider.Clone()
		}
		o.apply(out)
	}
	return out
}

func (o *Override) apply(u *url.URL) {
	for k, v := range o.Parameters {
		if o.OnlyIfAbsent && u.HasParam(k) {
			continue
		}
		u.SetParam(k, v)
	}
}

// Matches reports whether the override applies to provider as seen by
// consumer (which may be nil when only provider-side rules matter).
func (o *Override) Matches(provider, consumer *url.URL) bool {
	iface := provider.ParamOr(url.KeyInterface, provider.Path())
	if !matchAny(o.serviceList(), iface) ||
		(o.Group != "" && o.Group != provider.Param(url.KeyGroup)) ||
		(o.Version != "" && o.Version != provider.Param(url.KeyVersion)) {
		return false
	}
	switch o.Side {
	case "provider":
		return o.matchProvider(provider)
	case "consumer":
		return o.matchConsumer(provider, consumer)
	}
	return o.matchProvider(provider) || o.matchConsumer(provider, consumer)
}

func (o *Override) serviceList() []string {
	if o.Service != "" {
		return append([]string{o.Service}, o.Services...)
	}
	return o.Services
}

func (o *Override) matchProvider(p *url.URL) bool {
	return matchAddress(o.Addresses, p) && matchAny(o.Applications, p.Param("application")) &&
		(o.Match == nil || o.Match.Matches(p.Address(), p, paramsOf(p)))
}

// matchConsumer matches a consumer-side override on the consumer's view of
// provider p: Java applies it to the provider URL merged with the
// consumer's parameters (the consumer's win), with the consumer's host as
// the address.
func (o *Override) matchConsumer(p, c *url.URL) bool {
	if c == nil {
		return false
	}
	return matchAddress(o.Addresses, c) && matchAddress(o.ProviderAddresses, p) &&
		matchAny(o.Applications, c.Param("application")) &&
		(o.Match == nil || o.Match.Matches(c.Host(), p, func(k string) (string, bool) {
			if c.HasParam(k) {
				return c.Param(k), true
			}
			return p.Param(k), p.HasParam(k)
		}))
}

// ConfigureConsumer returns the consumer URL c as the overrides for its
// service and host make it, or c itself when none matches: the settings
// of the whole reference, as Java's RegistryDirectory overrides its
// consumer URL. Consumer-side overrides apply, and those of no side (the
// old override:// URLs, such as Dubbo Admin 2.6's mock), but not those
// narrowed to some providers.
func (r Rules) ConfigureConsumer(c *url.URL) *url.URL {
	out := c
	iface := c.ParamOr(url.KeyInterface, c.Path())
	for _, o := range r {
		if o.Side == "provider" || len(o.ProviderAddresses) > 0 || !matchAny(o.serviceList(), iface) ||
			(o.Group != "" && o.Group != c.Param(url.KeyGroup)) ||
			(o.Version != "" && o.Version != c.Param(url.KeyVersion)) ||
			!matchAddress(o.Addresses, c) || !matchAny(o.Applications, c.Param("application")) ||
			(o.Match != nil && !o.Match.Matches(c.Host(), c, paramsOf(c))) {
			continue
		}
		if out == c {
			out = c.Clone()
		}
		o.apply(out)
	}
	return out
}

func paramsOf(u *url.URL) func(string) (string, bool) {
	return func(k string) (string, bool) { return u.Param(k), u.HasParam(k) }
}

// matchAddress: no addresses, 0.0.0.0, the host, or host:port.
func matchAddress(addresses []string, u *url.URL) bool {
	if len(addresses) == 0 {
		return true
	}
	for _, a := range addresses {
		a = strings.TrimSpace(a)
		if a == anyHost || a == "*" || a == u.Host() || a == u.Address() ||
			(strings.HasPrefix(a, anyHost+":") && strings.TrimPrefix(a, anyHost+":") == fmt.Sprint(u.Port())) {
			return true
		}
	}
	return false
}

func matchAny(list []string, v string) bool {
	return len(list) == 0 || slices.Contains(list, "*") || slices.Contains(list, v)
}

// Disabled reports whether a (configured) provider URL is switched off:
// disabled=true, or enabled=false when disabled is absent, as Dubbo decides.
func Disabled(u *url.URL) bool {
	if u.HasParam("disabled") {
		return u.BoolParam("disabled", false)
	}
	return !u.BoolParam("enabled", true)
}

// conditionKeys select URLs in an old override URL; they are not
// parameters to set.
var conditionKeys = []string{"category", "check", "dynamic", "enabled", "group", "version", "application",
	"side", "configVersion", "compatible_config", "interface", "providerAddresses", "timestamp", "pid"}

// ParseURL reads an old override://host[:port]/interface?param=value URL
// (or absent://..., which only fills parameters the provider lacks).
// Host 0.0.0.0 applies to every provider.
func ParseURL(u *url.URL) (*Override, error) {
	switch u.Protocol() {
	case "override", "absent":
	default:
		return nil, fmt.Errorf("%w: %s: protocol %q, want override://", ErrInvalidRule, u, u.Protocol())
	}
	o := &Override{
		Side:         u.Param("side"),
		Service:      u.ParamOr(url.KeyInterface, u.Path()),
		Group:        u.Param(url.KeyGroup),
		Version:      u.Param(url.KeyVersion),
		OnlyIfAbsent: u.Protocol() == "absent",
		Parameters:   maps.Clone(u.WithoutParams(conditionKeys...).Params()),
	}
	if o.Service == "*" {
		o.Service = ""
	}
	if app := u.Param("application"); app != "" && app != "*" {
		o.Applications = []string{app}
	}
	if u.Host() != "" && u.Host() != anyHost {
		o.Addresses = []string{u.Address()}
	} else if u.Port() != 0 {
		o.Addresses = []string{u.Address()}
	}
	if pa := u.Param("providerAddresses"); pa != "" {
		o.ProviderAddresses = strings.Split(pa, ",")
	}
	if !u.BoolParam("enabled", true) {
		o.Parameters = nil // a disabled override changes nothing
	}
	return o, nil
}

// ParseURLs reads the configurators category of a registry: empty:// entries
// (the registry's way of saying "none") are skipped, and so are disabled
// ones. The first bad URL fails the whole list so the caller keeps its
// previous rules.
func ParseURLs(urls []*url.URL) (Rules, error) {
	var out []*Override
	for _, u := range urls {
		if u.Protocol() == "empty" {
			continue
		}
		o, err := ParseURL(u)
		if err != nil {
			return nil, err
		}
		if len(o.Parameters) > 0 {
			out = append(out, o)
		}
	}
	return NewRules(out...), nil
}
