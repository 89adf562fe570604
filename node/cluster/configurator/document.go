package configurator

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dubbo-lab/dubbo/node/url"
)

// Document is an override rule as the config center stores it under
// <key>.configurators: Java's ConfiguratorConfig, Dubbo Admin's OverrideDTO
// (0.5) and DynamicConfig (its Go successor). Fields it does not know are
// kept in Extra, so a rule read and written back loses nothing.
type Document struct {
	// ConfigVersion is "v3.0" (items' match count), "v2.7", "v3.1" or none.
	ConfigVersion string `yaml:"configVersion,omitempty" json:"configVersion,omitempty"`
	// Scope "service": Key is the service ("group/interface:version",
	// "interface:version:group" or Admin's "group*interface:version");
	// "application": Key is the application whose services it configures.
	Scope string `yaml:"scope" json:"scope"`
	Key   string `yaml:"key" json:"key"`
	// Enabled false turns every item off. Default true.
	Enabled bool           `yaml:"enabled" json:"enabled"`
	Configs []Item         `yaml:"configs" json:"configs"`
	Extra   map[string]any `yaml:",inline" json:"-"`
}

// Item is one item of a Document: Java's ConfigItem, Admin's
// OverrideConfig.
type Item struct {
	// Type is Admin's: "weight" or "balancing" for the items its pages
	// own, none (or "general") for dynamic configuration.
	Type string `yaml:"type,omitempty" json:"type,omitempty"`
	// Enabled false turns the item off. Default true.
	Enabled bool `yaml:"enabled" json:"enabled"`
	// Side is "provider" (Addresses are providers), "consumer" (Addresses
	// are consumers, ProviderAddresses narrow the providers) or none
	// (either).
	Side              string   `yaml:"side,omitempty" json:"side,omitempty"`
	Addresses         []string `yaml:"addresses,omitempty" json:"addresses,omitempty"`
	ProviderAddresses []string `yaml:"providerAddresses,omitempty" json:"providerAddresses,omitempty"`
	// Services narrow an application-scoped rule.
	Services []string `yaml:"services,omitempty" json:"services,omitempty"`
	// Applications, when set, must contain the application of the side
	// matched.
	Applications []string `yaml:"applications,omitempty" json:"applications,omitempty"`
	// Parameters are set on the URLs the item matches; values are written
	// as given (numbers stay numbers).
	Parameters map[string]any `yaml:"parameters" json:"parameters"`
	// Match narrows the item further (configVersion v3.0 only, as Java).
	Match *ConditionMatch `yaml:"match,omitempty" json:"match,omitempty"`
	Extra map[string]any  `yaml:",inline" json:"-"`
}

// UnmarshalYAML gives enabled its default, true.
func (d *Document) UnmarshalYAML(n *yaml.Node) error {
	type plain Document
	p := plain{Enabled: true}
	if err := n.Decode(&p); err != nil {
		return err
	}
	*d = Document(p)
	return nil
}

// UnmarshalYAML gives enabled its default, true.
func (it *Item) UnmarshalYAML(n *yaml.Node) error {
	type plain Item
	p := plain{Enabled: true}
	if err := n.Decode(&p); err != nil {
		return err
	}
	*it = Item(p)
	return nil
}

// ParseDocument reads an override rule and checks it the way the runtime
// will apply it. Errors wrap ErrInvalidRule.
func ParseDocument(data []byte) (*Document, error) {
	var d Document
	if err := yaml.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%w: YAML: %w", ErrInvalidRule, err)
	}
	if _, err := d.Rules(); err != nil {
		return nil, err
	}
	return &d, nil
}

// Parse reads an override rule in Dubbo's YAML into the overrides it
// applies (see Document.Rules).
func Parse(data []byte) (Rules, error) {
	var d Document
	if err := yaml.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%w: YAML: %w", ErrInvalidRule, err)
	}
	return d.Rules()
}

// matchCounts reports whether items' match is read: v3.0 rules only, as
// Java's AbstractConfigurator.
func (d *Document) matchCounts() bool { return strings.HasPrefix(d.ConfigVersion, "v3.0") }

// Rules are the overrides the document applies. A disabled rule (or
// item) yields none. Scope "service" takes the interface from key;
// scope "application" applies to the key application's services, narrowed
// by each item's services.
func (d *Document) Rules() (Rules, error) {
	if d.Key == "" {
		return nil, fmt.Errorf("%w: no 'key' (the interface for scope service, the application for scope application)", ErrInvalidRule)
	}
	if v := d.ConfigVersion; v != "" && !slices.ContainsFunc([]string{"v2.7", "v3.0", "v3.1"}, func(p string) bool { return strings.HasPrefix(v, p) }) {
		return nil, fmt.Errorf("%w %q: configVersion %q; use v3.0", ErrInvalidRule, d.Key, v)
	}
	if d.Scope != "service" && d.Scope != "application" {
		return nil, fmt.Errorf("%w %q: scope %q; use service or application", ErrInvalidRule, d.Key, d.Scope)
	}
	if len(d.Configs) == 0 {
		return nil, fmt.Errorf("%w %q: no 'configs' items", ErrInvalidRule, d.Key)
	}
	var out []*Override
	for i, it := range d.Configs {
		if it.Side != "" && it.Side != "provider" && it.Side != "consumer" {
			return nil, fmt.Errorf("%w %q: configs[%d]: side %q; use provider or consumer", ErrInvalidRule, d.Key, i, it.Side)
		}
		if len(it.Parameters) == 0 {
			return nil, fmt.Errorf("%w %q: configs[%d] has no parameters", ErrInvalidRule, d.Key, i)
		}
		if it.Match != nil {
			if err := it.Match.Compile(); err != nil {
				return nil, fmt.Errorf("%w %q: configs[%d].match: %w", ErrInvalidRule, d.Key, i, err)
			}
		}
		o := &Override{
			Side: it.Side, Addresses: it.Addresses, ProviderAddresses: it.ProviderAddresses,
			Applications: it.Applications, Parameters: make(map[string]string, len(it.Parameters)),
		}
		if d.matchCounts() {
			o.Match = it.Match
		}
		for k, v := range it.Parameters {
			if v == nil {
				return nil, fmt.Errorf("%w %q: configs[%d]: parameter %q has no value", ErrInvalidRule, d.Key, i, k)
			}
			o.Parameters[k] = fmt.Sprint(v)
		}
		if d.Scope == "service" {
			o.Service, o.Version, o.Group = url.ParseServiceKey(d.Key)
		} else {
			o.Services = it.Services
			// The application a rule is keyed by is the one it configures:
			// the providers' for provider-side rules, ours for consumer-side.
			if len(o.Applications) == 0 {
				o.Applications = []string{d.Key}
			}
		}
		if d.Enabled && it.Enabled {
			out = append(out, o)
		}
	}
	return NewRules(out...), nil
}

// Warnings lists what the document says that is not applied: items'
// match outside configVersion v3.0 rules (Java reads it only there) and
// fields Dubbo does not read.
func (d *Document) Warnings() []string {
	var w []string
	for _, k := range slices.Sorted(maps.Keys(d.Extra)) {
		w = append(w, fmt.Sprintf("%s is not a field Dubbo reads; it is kept but not applied", k))
	}
	for i, it := range d.Configs {
		if it.Match != nil && !d.matchCounts() {
			w = append(w, fmt.Sprintf("configs[%d].match is not applied: Java Dubbo 3.3 reads an item's match only in configVersion v3.0 rules; set configVersion: v3.0", i))
		}
		for _, k := range slices.Sorted(maps.Keys(it.Extra)) {
			if k != "__generate_by_cp" {
				w = append(w, fmt.Sprintf("configs[%d].%s is not a field Dubbo reads; it is kept but not applied", i, k))
			}
		}
	}
	return w
}
