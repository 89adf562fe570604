// Package configurator holds Dubbo's override rules ("dynamic
// configuration"): parameters that an operator sets on running providers
// without restarting anything, such as weight, timeout, retries,
// loadbalance or disabled=true.
//
// Rules come as YAML from the config center (<service key>.configurators or
// <application>.configurators, parsed by [Parse]) or as the old override://
// URLs under /dubbo/<iface>/configurators ([ParseURL], [ParseURLs]). Either
// way they become [Override]s, and a [Rules] list rewrites provider URLs as
// the consumer's directory sees them. The directory applies them to every
// provider URL whenever rules or providers change, so a provider with
// disabled=true drops out of routing and a new weight takes effect at once.
package configurator

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

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
	return matchAddress(o.Addresses, p) && matchAny(o.Applications, p.Param("application"))
}

func (o *Override) matchConsumer(p, c *url.URL) bool {
	if c == nil {
		return false
	}
	return matchAddress(o.Addresses, c) && matchAddress(o.ProviderAddresses, p) &&
		matchAny(o.Applications, c.Param("application"))
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

// ruleYAML is the override rule of the config center, configVersion v2.7
// or v3.0.
type ruleYAML struct {
	ConfigVersion string     `yaml:"configVersion"`
	Scope         string     `yaml:"scope"`
	Key           string     `yaml:"key"`
	Enabled       *bool      `yaml:"enabled"`
	Configs       []itemYAML `yaml:"configs"`
}

type itemYAML struct {
	Side              string         `yaml:"side"`
	Enabled           *bool          `yaml:"enabled"`
	Addresses         []string       `yaml:"addresses"`
	ProviderAddresses []string       `yaml:"providerAddresses"`
	Applications      []string       `yaml:"applications"`
	Services          []string       `yaml:"services"`
	Parameters        map[string]any `yaml:"parameters"`
}

// Parse reads an override rule in Dubbo's YAML. A disabled rule (or item)
// yields no overrides. Scope "service" takes the interface from key
// ("group/interface:version" is understood); scope "application" applies
// to the key application's services, narrowed by each item's services.
func Parse(data []byte) (Rules, error) {
	var y ruleYAML
	if err := yaml.Unmarshal(data, &y); err != nil {
		return nil, fmt.Errorf("%w: YAML: %w", ErrInvalidRule, err)
	}
	if y.Key == "" {
		return nil, fmt.Errorf("%w: no 'key' (the interface for scope service, the application for scope application)", ErrInvalidRule)
	}
	switch y.ConfigVersion {
	case "", "v2.7", "v3.0":
	default:
		return nil, fmt.Errorf("%w %q: configVersion %q; use v3.0", ErrInvalidRule, y.Key, y.ConfigVersion)
	}
	if y.Scope != "service" && y.Scope != "application" {
		return nil, fmt.Errorf("%w %q: scope %q; use service or application", ErrInvalidRule, y.Key, y.Scope)
	}
	if len(y.Configs) == 0 {
		return nil, fmt.Errorf("%w %q: no 'configs' items", ErrInvalidRule, y.Key)
	}
	if y.Enabled != nil && !*y.Enabled {
		return Rules{}, nil
	}
	var out []*Override
	for i, it := range y.Configs {
		if it.Enabled != nil && !*it.Enabled {
			continue
		}
		if it.Side != "" && it.Side != "provider" && it.Side != "consumer" {
			return nil, fmt.Errorf("%w %q: configs[%d]: side %q; use provider or consumer", ErrInvalidRule, y.Key, i, it.Side)
		}
		if len(it.Parameters) == 0 {
			return nil, fmt.Errorf("%w %q: configs[%d] has no parameters", ErrInvalidRule, y.Key, i)
		}
		o := &Override{
			Side: it.Side, Addresses: it.Addresses, ProviderAddresses: it.ProviderAddresses,
			Applications: it.Applications, Parameters: make(map[string]string, len(it.Parameters)),
		}
		for k, v := range it.Parameters {
			if v == nil {
				return nil, fmt.Errorf("%w %q: configs[%d]: parameter %q has no value", ErrInvalidRule, y.Key, i, k)
			}
			o.Parameters[k] = fmt.Sprint(v)
		}
		if y.Scope == "service" {
			o.Service, o.Version, o.Group = url.ParseServiceKey(y.Key)
		} else {
			o.Services = it.Services
			// The application a rule is keyed by is the one it configures:
			// the providers' for provider-side rules, ours for consumer-side.
			if len(o.Applications) == 0 {
				o.Applications = []string{y.Key}
			}
		}
		out = append(out, o)
	}
	return NewRules(out...), nil
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
