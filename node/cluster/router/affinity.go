package router

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// AffinityRule is an affinity rule document (configVersion v3.1), stored
// under <interface>:<version>:<group>.affinity-router (scope service) or
// <provider application>.affinity-router (scope application): calls prefer
// the providers whose value of a parameter is the consumer's own, as
// dubbo-go 3.3's affinity router applies it. dubbo-go reads the parameter
// and ratio under affinityAware, Dubbo Admin's Go successor writes them
// under affinity; both are read, and Fields it does not know are kept in
// Extra.
type AffinityRule struct {
	ConfigVersion string `yaml:"configVersion,omitempty" json:"configVersion,omitempty"`
	Scope         string `yaml:"scope,omitempty" json:"scope,omitempty"`
	Key           string `yaml:"key,omitempty" json:"key,omitempty"`
	// Enabled false turns the rule off. Default true (dubbo-go reads an
	// absent enabled as false; Dubbo's other rules, and Admin, as true).
	Enabled bool `yaml:"enabled" json:"enabled"`
	// Runtime is read for compatibility. Default true.
	Runtime       bool           `yaml:"runtime" json:"runtime"`
	AffinityAware *AffinityAware `yaml:"affinityAware,omitempty" json:"affinityAware,omitempty"`
	// Affinity is Admin's spelling of AffinityAware; AffinityAware wins.
	Affinity *AffinityAware `yaml:"affinity,omitempty" json:"affinity,omitempty"`
	Extra    map[string]any `yaml:",inline" json:"-"`
}

// AffinityAware names the parameter (Key) whose value a provider must
// share with the consumer, and the share of providers (Ratio, 0 to 100
// percent) that must then remain for the rule to apply; below it every
// provider stays.
type AffinityAware struct {
	Key   string         `yaml:"key" json:"key"`
	Ratio int            `yaml:"ratio,omitempty" json:"ratio,omitempty"`
	Extra map[string]any `yaml:",inline" json:"-"`
}

// UnmarshalYAML gives the fields their defaults (enabled and runtime
// true).
func (r *AffinityRule) UnmarshalYAML(n *yaml.Node) error {
	type plain AffinityRule
	p := plain{Enabled: true, Runtime: true}
	if err := n.Decode(&p); err != nil {
		return err
	}
	*r = AffinityRule(p)
	return nil
}

// Aware is the rule's parameter and ratio, from either spelling; nil when
// the rule has none.
func (r *AffinityRule) Aware() *AffinityAware {
	if r.AffinityAware != nil {
		return r.AffinityAware
	}
	return r.Affinity
}

// ParseAffinityRule reads an affinity rule document and checks it. Errors
// wrap ErrInvalidRule.
func ParseAffinityRule(data []byte) (*AffinityRule, error) {
	var r AffinityRule
	if err := yaml.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%w: affinity rule YAML: %w", ErrInvalidRule, err)
	}
	if _, err := NewAffinityRouter(&r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Warnings lists what the rule says that is not applied.
func (r *AffinityRule) Warnings() []string {
	w := unknownFields(nil, "", r.Extra)
	if a := r.Aware(); a != nil {
		w = unknownFields(w, "affinityAware.", a.Extra)
	}
	if r.AffinityAware != nil && r.Affinity != nil {
		w = append(w, "affinity is not applied: affinityAware is given too, and wins")
	}
	return w
}

// AffinityRouter keeps, for every call, the providers whose value of the
// rule's parameter equals the consumer's (dubbo-go: the condition
// "key=$key" on providers), when they are at least the rule's ratio of the
// providers it is given; otherwise it keeps them all.
type AffinityRouter struct {
	key      string // the parameter; "" routes nothing
	same     expr   // key = $key
	ratio    int
	warnings []string
}

// NewAffinityRouter makes the router of rule. Errors wrap ErrInvalidRule.
func NewAffinityRouter(rule *AffinityRule) (*AffinityRouter, error) {
	switch rule.Scope {
	case "", "service", "application":
	default:
		return nil, fmt.Errorf("%w: affinity rule %q: scope %q; use service or application", ErrInvalidRule, rule.Key, rule.Scope)
	}
	a := rule.Aware()
	if a == nil {
		return nil, fmt.Errorf("%w: affinity rule %q has no affinityAware; write affinityAware: {key: <parameter>, ratio: <0-100>}", ErrInvalidRule, rule.Key)
	}
	if a.Ratio < 0 || a.Ratio > 100 {
		return nil, fmt.Errorf("%w: affinity rule %q: ratio %d; use 0 to 100 (percent of the providers)", ErrInvalidRule, rule.Key, a.Ratio)
	}
	r := &AffinityRouter{ratio: a.Ratio, warnings: rule.Warnings()}
	key := strings.TrimSpace(a.Key)
	if !rule.Enabled || key == "" {
		return r, nil
	}
	same, err := parseExpr(key + "=$" + key)
	if err != nil {
		return nil, fmt.Errorf("%w: affinity rule %q: key %q: %w", ErrInvalidRule, rule.Key, key, err)
	}
	r.key, r.same = key, same
	return r, nil
}

// Warnings lists what the rule says that is not applied.
func (r *AffinityRouter) Warnings() []string { return r.warnings }

// Route implements cluster.Router.
func (r *AffinityRouter) Route(ps []cluster.ProviderInvoker, consumer *url.URL, _ *rpc.Invocation) []cluster.ProviderInvoker {
	if r.key == "" || len(ps) == 0 {
		return ps
	}
	out := r.same.filter(ps, consumer)
	// len/all >= ratio/100, in integers.
	if len(out)*100 >= r.ratio*len(ps) {
		return out
	}
	return ps
}
