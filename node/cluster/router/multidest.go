package router

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// DefaultDestinationWeight is the weight of a destination ("to" item) that
// gives none, or zero or less: Java's DefaultRouteConditionSubSetWeight.
const DefaultDestinationWeight = 100

// multiDest is one condition of configVersion v3.1, as Java Dubbo 3.3's
// MultiDestConditionRouter applies it: calls that match from go to one of
// the destinations (the providers matching a to), drawn at random by
// weight among those that match at least one provider. A condition without
// destinations blocks the calls it matches, whatever force says. When no
// destination matches any provider, force returns the empty list, else the
// condition is ignored.
type multiDest struct {
	from  expr
	to    []destination
	force bool
}

type destination struct {
	match  expr
	weight int
}

func newMultiDest(c ConditionItem, force bool) (*multiDest, error) {
	from := ""
	if c.From != nil {
		from = strings.TrimSpace(c.From.Match)
	}
	if (from == "" || from == "true") && len(c.To) == 0 {
		// Java would block every call; dubbo-go skips the condition. Both
		// are more likely a slip than what was meant.
		return nil, fmt.Errorf("a condition with neither from.match nor to would block every call; " +
			"write {from: {match: <when>}, to: [{match: <then>, weight: 100}]}, or a from without to to block the calls it matches")
	}
	m := &multiDest{force: force}
	var err error
	if from != "true" {
		if m.from, err = parseExpr(from); err != nil {
			return nil, fmt.Errorf("from %q: %w", from, err)
		}
	}
	for i, t := range c.To {
		d := destination{weight: t.Weight}
		if d.weight <= 0 {
			d.weight = DefaultDestinationWeight
		}
		// As Java: a blank or "false" match is an empty test, which every
		// provider passes.
		if t.Match != "false" {
			if d.match, err = parseExpr(t.Match); err != nil {
				return nil, fmt.Errorf("to[%d] %q: %w", i, t.Match, err)
			}
		}
		m.to = append(m.to, d)
	}
	return m, nil
}

// route returns the providers the condition leaves.
func (m *multiDest) route(ps []cluster.ProviderInvoker, consumer *url.URL, inv *rpc.Invocation, rnd func(n int) int) []cluster.ProviderInvoker {
	if len(ps) == 0 || !m.from.matchCall(consumer, inv) {
		return ps
	}
	if len(m.to) == 0 {
		return nil // traffic disabled for the matching calls
	}
	type set struct {
		weight int
		ps     []cluster.ProviderInvoker
	}
	var sets []set
	sum := 0
	for _, d := range m.to {
		if out := d.match.filter(ps, consumer); len(out) > 0 {
			sets = append(sets, set{d.weight, out})
			sum += d.weight
		}
	}
	switch {
	case len(sets) == 1:
		return sets[0].ps
	case len(sets) > 1:
		// Java's DestinationSet.randDestination: n in [0, sum), the first
		// set that brings it to zero or below.
		n := rnd(sum)
		for _, s := range sets {
			if n -= s.weight; n <= 0 {
				return s.ps
			}
		}
		return nil
	case m.force:
		return nil
	}
	return ps
}

func randInt(n int) int { return rand.IntN(n) }
