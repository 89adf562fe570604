package router

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Condition rule versions: v3.1 conditions are from/to objects with
// weighted destinations, earlier ones "<when> => <then>" strings.
const (
	ConfigVersion30 = "v3.0"
	ConfigVersion31 = "v3.1"
)

// ConditionRule is a condition rule document as the config center stores
// it under <key>.condition-router, written by Dubbo Admin (0.5: v3.0
// strings; 0.6 and its Go successor: v3.1 from/to objects) or by hand.
// Fields it does not know are kept in Extra, so a rule read and written
// back loses nothing. ParseConditionRule reads and checks one;
// NewConditionRouter makes its router.
type ConditionRule struct {
	// ConfigVersion decides the form of Conditions: "v3.1" (from/to), or
	// "v3.0", "v2.7" or none (strings). Later versions are refused.
	ConfigVersion string `yaml:"configVersion,omitempty" json:"configVersion,omitempty"`
	// Scope is "service" (Key = interface:version:group) or "application"
	// (Key = the consumer's application name).
	Scope string `yaml:"scope,omitempty" json:"scope,omitempty"`
	Key   string `yaml:"key,omitempty" json:"key,omitempty"`
	// Enabled false turns the rule off. Default true.
	Enabled bool `yaml:"enabled" json:"enabled"`
	// Force returns an empty list rather than ignoring a condition that
	// leaves no provider. Default false.
	Force bool `yaml:"force" json:"force"`
	// Runtime is read for compatibility; every call is routed anyway.
	// Default true.
	Runtime bool `yaml:"runtime" json:"runtime"`
	// Priority and Dynamic are read and kept; Java Dubbo orders nothing
	// by them, nor does this runtime.
	Priority   int             `yaml:"priority,omitempty" json:"priority,omitempty"`
	Dynamic    bool            `yaml:"dynamic,omitempty" json:"dynamic,omitempty"`
	Conditions []ConditionItem `yaml:"conditions" json:"conditions"`
	Extra      map[string]any  `yaml:",inline" json:"-"`
}

// ConditionItem is one condition: Rule in v3.0 and before, From and To in
// v3.1.
type ConditionItem struct {
	// Rule is "<when> => <then>" (v3.0).
	Rule string `yaml:"-" json:"rule,omitempty"`
	// From selects the calls (v3.1); none selects every call.
	From *ConditionFrom `yaml:"from,omitempty" json:"from,omitempty"`
	// To are the weighted destinations (v3.1); none blocks the calls From
	// selects.
	To    []ConditionTo  `yaml:"to,omitempty" json:"to,omitempty"`
	Extra map[string]any `yaml:",inline" json:"-"`
}

// ConditionFrom selects calls: Match is a when-side, tested on the
// consumer URL and the invocation ("method=sayHello & region=$region").
type ConditionFrom struct {
	Match string         `yaml:"match" json:"match"`
	Extra map[string]any `yaml:",inline" json:"-"`
}

// ConditionTo is one destination: the providers Match selects (a
// then-side, tested on provider URLs; blank selects all), drawn with
// Weight (default DefaultDestinationWeight).
type ConditionTo struct {
	Match  string         `yaml:"match" json:"match"`
	Weight int            `yaml:"weight,omitempty" json:"weight,omitempty"`
	Extra  map[string]any `yaml:",inline" json:"-"`
}

// UnmarshalYAML gives the fields Dubbo's defaults (enabled and runtime
// true).
func (r *ConditionRule) UnmarshalYAML(n *yaml.Node) error {
	type plain ConditionRule
	p := plain{Enabled: true, Runtime: true}
	if err := n.Decode(&p); err != nil {
		return err
	}
	*r = ConditionRule(p)
	return nil
}

// UnmarshalYAML reads a string (v3.0) or a from/to mapping (v3.1).
func (c *ConditionItem) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*c = ConditionItem{Rule: n.Value}
		return nil
	}
	type plain ConditionItem
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*c = ConditionItem(p)
	return nil
}

// MarshalYAML writes a v3.0 condition as its string.
func (c ConditionItem) MarshalYAML() (any, error) {
	if c.Rule != "" || (c.From == nil && c.To == nil && len(c.Extra) == 0) {
		return c.Rule, nil
	}
	type plain ConditionItem
	return plain(c), nil
}

// IsV31 reports whether the rule is of the from/to form.
func (r *ConditionRule) IsV31() bool {
	return strings.HasPrefix(strings.ToLower(r.ConfigVersion), ConfigVersion31)
}

// ParseConditionRule reads a condition rule document and checks it the
// way the runtime will apply it. Errors wrap ErrInvalidRule.
func ParseConditionRule(data []byte) (*ConditionRule, error) {
	var r ConditionRule
	if err := yaml.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%w: condition rule YAML: %w", ErrInvalidRule, err)
	}
	if _, err := NewConditionRouter(&r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Warnings lists what the rule says that is not applied: fields Dubbo
// does not read, and the fields of the v3.1 design (a condition's
// priority, force, ratio, trafficDisable) that neither Java Dubbo 3.3 nor
// dubbo-go 3.3 applies. They are kept in the document.
func (r *ConditionRule) Warnings() []string {
	var w []string
	w = unknownFields(w, "", r.Extra, "valid")
	for i, c := range r.Conditions {
		at := fmt.Sprintf("conditions[%d].", i)
		for _, k := range slices.Sorted(maps.Keys(c.Extra)) {
			switch k {
			case "priority", "force", "ratio", "trafficDisable":
				w = append(w, fmt.Sprintf("%s%s is not applied: Java Dubbo 3.3 and dubbo-go 3.3 do not read it "+
					"(conditions run in the order written, the rule's force applies to each, and a condition without 'to' blocks the calls it selects)", at, k))
			default:
				w = unknownFields(w, at, map[string]any{k: nil})
			}
		}
		if c.From != nil {
			w = unknownFields(w, at+"from.", c.From.Extra)
		}
		for j, t := range c.To {
			w = unknownFields(w, fmt.Sprintf("%sto[%d].", at, j), t.Extra)
		}
	}
	return w
}

// unknownFields adds a warning for each key of extra but the ones Dubbo
// reads without our model naming them (known).
func unknownFields(w []string, at string, extra map[string]any, known ...string) []string {
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if !slices.Contains(known, k) {
			w = append(w, fmt.Sprintf("%s%s is not a field Dubbo reads; it is kept but not applied", at, k))
		}
	}
	return w
}

// ConditionRouter applies a condition rule: its conditions run in order,
// each on what the previous one left (a condition that does not select
// the call passes the list on).
type ConditionRouter struct {
	key      string
	enabled  bool
	v30      []*Condition
	v31      []*multiDest
	warnings []string
	rnd      func(n int) int // the draw among v3.1 destinations
}

// NewConditionRouter makes the router of rule. Errors wrap ErrInvalidRule.
func NewConditionRouter(rule *ConditionRule) (*ConditionRouter, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: condition rule %q: %s", ErrInvalidRule, rule.Key, fmt.Sprintf(format, args...))
	}
	switch rule.Scope {
	case "", "service", "application":
	default:
		return nil, fail("scope %q; use service or application", rule.Scope)
	}
	v31 := rule.IsV31()
	if !v31 && strings.Compare(strings.ToLower(rule.ConfigVersion), ConfigVersion31) > 0 {
		return nil, fail("configVersion %s; use v3.1 (from/to conditions) or v3.0 (strings)", rule.ConfigVersion)
	}
	if len(rule.Conditions) == 0 {
		return nil, fail("no conditions; add a 'conditions:' list of \"<when> => <then>\" strings (v3.0) or {from, to} objects (v3.1)")
	}
	r := &ConditionRouter{key: rule.Key, enabled: rule.Enabled, warnings: rule.Warnings(), rnd: randInt}
	for i, c := range rule.Conditions {
		isString := c.Rule != "" || (c.From == nil && c.To == nil && len(c.Extra) == 0)
		switch {
		case v31 && isString:
			return nil, fail("conditions[%d] is a string, but configVersion %s conditions are {from: {match: ...}, to: [{match: ..., weight: ...}]}; "+
				"for \"<when> => <then>\" strings set configVersion: v3.0", i, rule.ConfigVersion)
		case v31:
			m, err := newMultiDest(c, rule.Force)
			if err != nil {
				return nil, fail("conditions[%d]: %v", i, err)
			}
			r.v31 = append(r.v31, m)
		case !isString:
			return nil, fail("conditions[%d] is a {from, to} object, which needs configVersion: v3.1", i)
		default:
			cond, err := ParseCondition(c.Rule, rule.Force)
			if err != nil {
				return nil, fmt.Errorf("condition rule %q: %w", rule.Key, err)
			}
			r.v30 = append(r.v30, cond)
		}
	}
	return r, nil
}

// ParseConditionURL parses the old form written by 2.6/2.7 admin tools:
// condition://0.0.0.0/<iface>?rule=<escaped rule>&force=..&enabled=..
// (or route://...?router=condition&rule=...).
func ParseConditionURL(u *url.URL) (*ConditionRouter, error) {
	kind := u.Protocol()
	if kind == "route" {
		kind = u.ParamOr("router", "condition")
	}
	if kind != "condition" {
		return nil, fmt.Errorf("%w: %s: not a condition router (router %q)", ErrInvalidRule, u, kind)
	}
	rule := u.ParamUnescaped("rule")
	if strings.TrimSpace(rule) == "" {
		return nil, fmt.Errorf("%w: %s: empty 'rule' parameter", ErrInvalidRule, u)
	}
	c, err := ParseCondition(rule, u.BoolParam("force", false))
	if err != nil {
		return nil, err
	}
	return &ConditionRouter{key: u.ParamOr(url.KeyInterface, u.Path()), enabled: u.BoolParam("enabled", true),
		v30: []*Condition{c}, rnd: randInt}, nil
}

// Warnings lists what the rule says that is not applied (see
// ConditionRule.Warnings).
func (r *ConditionRouter) Warnings() []string { return r.warnings }

// Route implements cluster.Router.
func (r *ConditionRouter) Route(ps []cluster.ProviderInvoker, consumer *url.URL, inv *rpc.Invocation) []cluster.ProviderInvoker {
	if !r.enabled {
		return ps
	}
	for _, c := range r.v30 {
		if len(ps) == 0 {
			return ps
		}
		ps = c.Route(ps, consumer, inv)
	}
	for _, c := range r.v31 {
		if len(ps) == 0 {
			return ps
		}
		ps = c.route(ps, consumer, inv, r.rnd)
	}
	return ps
}

func (r *ConditionRouter) String() string {
	conds := make([]string, len(r.v30))
	for i, c := range r.v30 {
		conds[i] = c.String()
	}
	if len(r.v31) > 0 {
		conds = append(conds, strconv.Itoa(len(r.v31))+" from/to condition(s)")
	}
	return r.key + " conditions " + strconv.Quote(strings.Join(conds, "; "))
}
