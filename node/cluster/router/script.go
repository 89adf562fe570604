package router

import (
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// ScriptRule is a script rule document, <provider application>.script-router
// as dubbo-go 3.3 reads it (type javascript and the script), or a
// script:// URL of the registry's routers folder as Java Dubbo writes it.
// This runtime reads such rules only to say that it does not apply them:
// they are programs for a JavaScript or Groovy engine.
type ScriptRule struct {
	Key     string         `yaml:"key,omitempty" json:"key,omitempty"`
	Enabled bool           `yaml:"enabled" json:"enabled"`
	Type    string         `yaml:"type,omitempty" json:"type,omitempty"`
	Script  string         `yaml:"script,omitempty" json:"script,omitempty"`
	Extra   map[string]any `yaml:",inline" json:"-"`
}

// ScriptNotApplied says why a script rule changes nothing.
const ScriptNotApplied = "script routers are not applied by this runtime (they run JavaScript or Groovy); the rule is ignored and calls are routed as if it did not exist"

// ParseScriptRule reads a script rule document. Errors wrap ErrInvalidRule.
func ParseScriptRule(data []byte) (*ScriptRule, error) {
	r := ScriptRule{Enabled: true}
	if err := yaml.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%w: script rule YAML: %w", ErrInvalidRule, err)
	}
	return &r, nil
}

// Warnings says that the rule is not applied.
func (r *ScriptRule) Warnings() []string { return []string{ScriptNotApplied} }

// ignored is the router of a rule that is not applied: it passes every
// provider on and says why.
type ignored struct{ why []string }

func (i ignored) Route(ps []cluster.ProviderInvoker, _ *url.URL, _ *rpc.Invocation) []cluster.ProviderInvoker {
	return ps
}

func (i ignored) Warnings() []string { return i.why }
