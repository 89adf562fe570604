package router

import (
	"slices"
	"strings"

	"github.com/dubbo-lab/dubbo/node/cluster"
)

// Kind is one of Dubbo's routers that a consumer runs: where its rule lives
// in the config center, its place in the Chain, and how it is made from
// its rule document.
type Kind struct {
	// Order is its position in a Chain.
	Order int
	// Scope says whose name starts its rule's key, and Suffix ends it:
	// "<scope name><Suffix>".
	Scope  Scope
	Suffix string
	// New makes the router from its rule document; a nil document makes the
	// router without a rule (nil when it then does nothing). What the rule
	// says that is not applied is the router's Warnings.
	New func(doc []byte) (cluster.Router, error)
}

// Scope names whose rule a router follows.
type Scope int

const (
	// ScopeService: the service key, <interface>:<version>:<group>.
	ScopeService Scope = iota
	// ScopeConsumerApp: the consumer's application.
	ScopeConsumerApp
	// ScopeProviderApp: the providers' application.
	ScopeProviderApp
)

// kinds is every router by the name Dubbo's "router" key uses for its
// factory (Java's tag, service and app state routers; dubbo-go's affinity
// and script routers), all on by default. Read-only. Condition rules from
// the registry's routers folder are not named, as in Dubbo: they come with
// the provider list.
var kinds = map[string]Kind{
	"tag":                  {Order: OrderTag, Scope: ScopeProviderApp, Suffix: ".tag-router", New: newTag},
	"service":              {Order: OrderServiceCondition, Scope: ScopeService, Suffix: ".condition-router", New: newCondition},
	"app":                  {Order: OrderAppCondition, Scope: ScopeConsumerApp, Suffix: ".condition-router", New: newCondition},
	"service.affinity":     {Order: OrderServiceAffinity, Scope: ScopeService, Suffix: ".affinity-router", New: newAffinity},
	"application.affinity": {Order: OrderAppAffinity, Scope: ScopeProviderApp, Suffix: ".affinity-router", New: newAffinity},
	"consumer.script":      {Order: OrderScript, Scope: ScopeProviderApp, Suffix: ".script-router", New: newScript},
}

func newTag(doc []byte) (cluster.Router, error) {
	if doc == nil {
		return NewTagRouter(nil), nil // the providers' static tags still route
	}
	rule, err := ParseTagRule(doc)
	if err != nil {
		return nil, err
	}
	return NewTagRouter(rule), nil
}

func newCondition(doc []byte) (cluster.Router, error) {
	if doc == nil {
		return nil, nil
	}
	rule, err := ParseConditionRule(doc)
	if err != nil {
		return nil, err
	}
	return NewConditionRouter(rule)
}

func newAffinity(doc []byte) (cluster.Router, error) {
	if doc == nil {
		return nil, nil
	}
	rule, err := ParseAffinityRule(doc)
	if err != nil {
		return nil, err
	}
	return NewAffinityRouter(rule)
}

func newScript(doc []byte) (cluster.Router, error) {
	if doc == nil {
		return nil, nil
	}
	rule, err := ParseScriptRule(doc)
	if err != nil {
		return nil, err
	}
	return ignored{rule.Warnings()}, nil
}

// Warnings lists what the rule of a router made by a Kind says that is
// not applied (fields Dubbo does not read, a script rule); nil when
// nothing.
func Warnings(r cluster.Router) []string {
	if w, ok := r.(interface{ Warnings() []string }); ok {
		return w.Warnings()
	}
	return nil
}

// Names lists the routers a consumer runs, sorted.
func Names() []string {
	names := make([]string, 0, len(kinds))
	for n := range kinds {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the router called name.
func Lookup(name string) (Kind, bool) {
	k, ok := kinds[name]
	return k, ok
}

// Enabled applies Dubbo's "router" key (a consumer URL parameter) to the
// routers, which are all on by default: "-tag" turns tag routing off,
// "-default" every router, and a name without "-" keeps one on. It
// returns the names that run, sorted, or an error for a name it does not
// know.
func Enabled(spec string) ([]string, error) {
	on := make(map[string]bool, len(kinds))
	for n := range kinds {
		on[n] = true
	}
	var keep []string
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		name, off := strings.CutPrefix(item, "-")
		switch {
		case item == "":
		case name == "default" && off:
			clear(on)
		case kinds[name].New == nil:
			return nil, &cluster.UnknownNameError{Kind: "router", Name: name, Known: Names(),
				Hint: "(a leading - turns one off, -default all)"}
		case off:
			delete(on, name)
		default:
			keep = append(keep, name)
		}
	}
	for _, n := range keep {
		on[n] = true
	}
	names := make([]string, 0, len(on))
	for n := range on {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}
