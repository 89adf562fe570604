package router

import (
	"fmt"
	"strings"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Condition is one condition of configVersion v3.0 and before,
// "<when> => <then>": calls that match the when-side (checked against the
// consumer URL and the invocation) may only go to providers that match the
// then-side (checked against each provider URL). An empty or "true"
// when-side matches every call; an empty or "false" then-side blocks
// matching calls.
type Condition struct {
	rule string
	when expr // empty: every call
	then expr // nil: block
	// force keeps an empty result instead of falling back to all providers.
	force bool
}

// ParseCondition parses one "<when> => <then>" rule. force makes a rule that
// leaves no provider return the empty list rather than be ignored.
func ParseCondition(rule string, force bool) (*Condition, error) {
	c := &Condition{rule: rule, force: force}
	// Dubbo strips these prefixes: the side of each key is implied by the
	// side of the arrow.
	r := strings.NewReplacer("consumer.", "", "provider.", "").Replace(rule)
	r = strings.TrimSpace(r)
	whenRule, thenRule := "", r
	if i := strings.Index(r, "=>"); i >= 0 {
		whenRule, thenRule = strings.TrimSpace(r[:i]), strings.TrimSpace(r[i+2:])
	}
	var err error
	if whenRule != "true" {
		if c.when, err = parseExpr(whenRule); err != nil {
			return nil, fmt.Errorf("%w %q: when-side: %w", ErrInvalidRule, rule, err)
		}
	}
	if thenRule != "" && thenRule != "false" {
		if c.then, err = parseExpr(thenRule); err != nil {
			return nil, fmt.Errorf("%w %q: then-side: %w", ErrInvalidRule, rule, err)
		}
	}
	return c, nil
}

// String is the rule as written.
func (c *Condition) String() string { return c.rule }

// Route implements cluster.Router.
func (c *Condition) Route(ps []cluster.ProviderInvoker, consumer *url.URL, inv *rpc.Invocation) []cluster.ProviderInvoker {
	if len(ps) == 0 || !c.when.matchCall(consumer, inv) {
		return ps
	}
	if c.then == nil {
		return nil // the matching calls are blocked outright
	}
	out := c.then.filter(ps, consumer)
	if len(out) > 0 || c.force {
		return out
	}
	return ps
}
