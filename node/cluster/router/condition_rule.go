package router

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// ConditionRule is a condition route as stored in the config center: a list
// of conditions that run in order, each filtering what the previous one
// left (a condition whose when-side does not match passes the list on).
type ConditionRule struct {
	ConfigVersion string
	// Scope is "service" (Key = interface:version:group) or "application"
	// (Key = the consumer's application name).
	Scope, Key string
	// Force returns an empty list rather than ignoring a condition that
	// leaves no provider. Default false.
	Force bool
	// Runtime is parsed for compatibility; every call is routed anyway.
	// Default true.
	Runtime bool
	// Enabled false turns the rule off. Default true.
	Enabled  bool
	Priority int
	Dynamic  bool

	conditions []*Condition
}

// conditionRuleYAML has pointers where Dubbo's defaults differ from Go's
// zero values.
type conditionRuleYAML struct {
	ConfigVersion string   `yaml:"configVersion"`
	Scope         string   `yaml:"scope"`
	Key           string   `yaml:"key"`
	Force         *bool    `yaml:"force"`
	Runtime       *bool    `yaml:"runtime"`
	Enabled       *bool    `yaml:"enabled"`
	Priority      int      `yaml:"priority"`
	Dynamic       bool     `yaml:"dynamic"`
	Conditions    []string `yaml:"conditions"`
}

// ParseConditionRule parses a condition route in Dubbo's v2.7/v3.0 YAML.
// The multi-destination format of configVersion v3.1 is not supported.
func ParseConditionRule(data []byte) (*ConditionRule, error) {
	// The version decides the shape of "conditions", so read it first.
	var head struct {
		ConfigVersion string `yaml:"configVersion"`
	}
	if err := yaml.Unmarshal(data, &head); err == nil && strings.HasPrefix(head.ConfigVersion, "v3.1") {
		return nil, fmt.Errorf("%w: condition rule: configVersion %s (multi-destination conditions) is not supported; use v3.0",
			ErrInvalidRule, head.ConfigVersion)
	}
	var y conditionRuleYAML
	if err := yaml.Unmarshal(data, &y); err != nil {
		return nil, fmt.Errorf("%w: condition rule YAML: %w", ErrInvalidRule, err)
	}
	if len(y.Conditions) == 0 {
		return nil, fmt.Errorf("%w: condition rule %q has no conditions; add a 'conditions:' list of \"<when> => <then>\" strings",
			ErrInvalidRule, y.Key)
	}
	switch y.Scope {
	case "", "service", "application":
	default:
		return nil, fmt.Errorf("%w: condition rule %q: scope %q; use service or application", ErrInvalidRule, y.Key, y.Scope)
	}
	r := &ConditionRule{
		ConfigVersion: y.ConfigVersion, Scope: y.Scope, Key: y.Key,
		Force: deref(y.Force, false), Runtime: deref(y.Runtime, true), Enabled: deref(y.Enabled, true),
		Priority: y.Priority, Dynamic: y.Dynamic,
	}
	for _, s := range y.Conditions {
		c, err := ParseCondition(s, r.Force)
		if err != nil {
			return nil, fmt.Errorf("condition rule %q: %w", y.Key, err)
		}
		r.conditions = append(r.conditions, c)
	}
	return r, nil
}

// ParseConditionURL parses the old form written by 2.6/2.7 admin tools:
// condition://0.0.0.0/<iface>?rule=<escaped rule>&force=..&enabled=..
// (or route://...?router=condition&rule=...).
func ParseConditionURL(u *url.URL) (*ConditionRule, error) {
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
	r := &ConditionRule{
		Scope: "service", Key: u.ParamOr(url.KeyInterface, u.Path()),
		Force: u.BoolParam("force", false), Runtime: u.BoolParam("runtime", false),
		Enabled: u.BoolParam("enabled", true), Priority: u.IntParam("priority", 0),
		Dynamic: u.BoolParam("dynamic", false),
	}
	c, err := ParseCondition(rule, r.Force)
	if err != nil {
		return nil, err
	}
	r.conditions = []*Condition{c}
	return r, nil
}

// Conditions lists the rule's conditions as written.
func (r *ConditionRule) Conditions() []string {
	out := make([]string, len(r.conditions))
	for i, c := range r.conditions {
		out[i] = c.String()
	}
	return out
}

// Route implements cluster.Router.
func (r *ConditionRule) Route(ps []cluster.ProviderInvoker, consumer *url.URL, inv *rpc.Invocation) []cluster.ProviderInvoker {
	if !r.Enabled {
		return ps
	}
	for _, c := range r.conditions {
		if len(ps) == 0 {
			break
		}
		ps = c.Route(ps, consumer, inv)
	}
	return ps
}

func (r *ConditionRule) String() string {
	return r.Key + " conditions " + strconv.Quote(strings.Join(r.Conditions(), "; "))
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
