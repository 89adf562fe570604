package router

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Keys of tag routing: the attachment (or consumer URL parameter) naming the
// wanted tag, the provider URL parameter carrying a provider's static tag,
// and the switch that forbids falling back to untagged providers.
const (
	KeyTag      = "dubbo.tag"
	KeyForceTag = "dubbo.force.tag"
	// keyTagShort is the plain "tag" parameter some providers write.
	keyTagShort = "tag"
)

// TagRule is a tag route as stored in the config center under
// <provider application>.tag-router: named groups of provider addresses.
type TagRule struct {
	ConfigVersion string
	Key           string // the provider application
	// Force: a tagged call whose tag group is empty fails rather than going
	// to untagged providers. Default false.
	Force    bool
	Runtime  bool // parsed; default true
	Enabled  bool // default true
	Priority int
	Tags     []Tag
}

// Tag is one group: the providers at Addresses plus those whose URL
// parameters satisfy every Match.
type Tag struct {
	Name      string       `yaml:"name"`
	Addresses []string     `yaml:"addresses"`
	Match     []ParamMatch `yaml:"match"`
}

// ParamMatch tests one provider URL parameter.
type ParamMatch struct {
	Key   string      `yaml:"key"`
	Value StringMatch `yaml:"value"`
}

// StringMatch is Dubbo's string matcher; the first field set decides.
type StringMatch struct {
	Exact    string `yaml:"exact"`
	Prefix   string `yaml:"prefix"`
	Regex    string `yaml:"regex"`
	Wildcard string `yaml:"wildcard"`
	Empty    string `yaml:"empty"`
	Noempty  string `yaml:"noempty"`

	re *regexp.Regexp
}

type tagRuleYAML struct {
	ConfigVersion string `yaml:"configVersion"`
	Key           string `yaml:"key"`
	Force         *bool  `yaml:"force"`
	Runtime       *bool  `yaml:"runtime"`
	Enabled       *bool  `yaml:"enabled"`
	Priority      int    `yaml:"priority"`
	Tags          []Tag  `yaml:"tags"`
}

// ParseTagRule parses a tag route in Dubbo's YAML.
func ParseTagRule(data []byte) (*TagRule, error) {
	var y tagRuleYAML
	if err := yaml.Unmarshal(data, &y); err != nil {
		return nil, fmt.Errorf("%w: tag rule YAML: %w", ErrInvalidRule, err)
	}
	r := &TagRule{ConfigVersion: y.ConfigVersion, Key: y.Key, Force: deref(y.Force, false),
		Runtime: deref(y.Runtime, true), Enabled: deref(y.Enabled, true), Priority: y.Priority, Tags: y.Tags}
	if len(r.Tags) == 0 {
		return nil, fmt.Errorf("%w: tag rule %q has no tags; add a 'tags:' list with name and addresses or match", ErrInvalidRule, r.Key)
	}
	for i := range r.Tags {
		t := &r.Tags[i]
		if t.Name == "" {
			return nil, fmt.Errorf("%w: tag rule %q: tag #%d has no name", ErrInvalidRule, r.Key, i+1)
		}
		for j := range t.Match {
			m := &t.Match[j]
			if m.Key == "" {
				return nil, fmt.Errorf("%w: tag rule %q: tag %q: match #%d has no key", ErrInvalidRule, r.Key, t.Name, j+1)
			}
			if m.Value.Regex != "" {
				re, err := regexp.Compile(m.Value.Regex)
				if err != nil {
					return nil, fmt.Errorf("%w: tag rule %q: tag %q: regex %q: %w", ErrInvalidRule, r.Key, t.Name, m.Value.Regex, err)
				}
				m.Value.re = re
			}
		}
	}
	return r, nil
}

// isMatch follows Dubbo's StringMatch: exact, prefix, regex, wildcard
// ("*" or an exact value), then empty / noempty.
func (m *StringMatch) isMatch(v string) bool {
	switch {
	case m.Exact != "":
		return v == m.Exact
	case m.Prefix != "":
		return strings.HasPrefix(v, m.Prefix)
	case m.re != nil:
		return m.re.MatchString(v)
	case m.Wildcard != "":
		return m.Wildcard == "*" || m.Wildcard == v
	case m.Empty != "":
		return v == ""
	case m.Noempty != "":
		return v != ""
	}
	return false
}

func (t *Tag) has(p cluster.ProviderInvoker) bool {
	u := p.URL()
	if len(t.Addresses) > 0 && addressMatches(t.Addresses, u.Host(), u.Port()) {
		return true
	}
	if len(t.Match) == 0 {
		return false
	}
	for i := range t.Match {
		if !t.Match[i].Value.isMatch(u.Param(t.Match[i].Key)) {
			return false
		}
	}
	return true
}

// TagRouter routes by tag. Without a rule (or with a disabled one) it uses
// the providers' static tag parameter: a call tagged "gray" goes to providers
// tagged "gray", or to untagged ones when there are none and dubbo.force.tag
// is not true; an untagged call goes to untagged providers only. A rule adds
// dynamic groups by address or parameter match, as Dubbo 3's TagStateRouter.
type TagRouter struct {
	rule *TagRule // nil: static tags only
}

// NewTagRouter routes with rule; nil routes by static tags alone.
func NewTagRouter(rule *TagRule) *TagRouter { return &TagRouter{rule: rule} }

// Route implements cluster.Router.
func (r *TagRouter) Route(ps []cluster.ProviderInvoker, consumer *url.URL, inv *rpc.Invocation) []cluster.ProviderInvoker {
	if len(ps) == 0 {
		return ps
	}
	tag := inv.Attachment(KeyTag)
	if tag == "" && consumer != nil {
		tag = consumer.Param(KeyTag)
	}
	rule := r.rule
	if rule == nil || !rule.Enabled {
		return staticTags(ps, tag, forceTag(consumer, inv))
	}
	if tag != "" {
		// As Java's TagRouterRule: a group by match that matches no provider
		// is no group, and the tag goes by static tags.
		if group := rule.tag(tag); group != nil && (len(group.Addresses) > 0 || slices.ContainsFunc(ps, group.has)) {
			out := filter(ps, group.has)
			if len(out) > 0 || rule.Force {
				return out
			}
		} else if out := filter(ps, func(p cluster.ProviderInvoker) bool { return providerTag(p) == tag }); len(out) > 0 {
			return out
		}
		if forceTag(consumer, inv) {
			return nil
		}
		// Fall back to providers in no group and without a static tag.
		return filter(ps, func(p cluster.ProviderInvoker) bool { return !rule.inAnyGroup(p) && providerTag(p) == "" })
	}
	// An untagged call never reaches providers of a group, nor providers
	// whose static tag names a group.
	out := filter(ps, func(p cluster.ProviderInvoker) bool { return !rule.inAnyGroup(p) })
	return filter(out, func(p cluster.ProviderInvoker) bool {
		t := providerTag(p)
		return t == "" || rule.tag(t) == nil
	})
}

func staticTags(ps []cluster.ProviderInvoker, tag string, force bool) []cluster.ProviderInvoker {
	if tag != "" {
		out := filter(ps, func(p cluster.ProviderInvoker) bool { return providerTag(p) == tag })
		if len(out) > 0 || force {
			return out
		}
	}
	return filter(ps, func(p cluster.ProviderInvoker) bool { return providerTag(p) == "" })
}

func (r *TagRule) tag(name string) *Tag {
	for i := range r.Tags {
		if r.Tags[i].Name == name {
			return &r.Tags[i]
		}
	}
	return nil
}

func (r *TagRule) inAnyGroup(p cluster.ProviderInvoker) bool {
	for i := range r.Tags {
		if r.Tags[i].has(p) {
			return true
		}
	}
	return false
}

func providerTag(p cluster.ProviderInvoker) string {
	u := p.URL()
	if t := u.Param(KeyTag); t != "" {
		return t
	}
	return u.Param(keyTagShort)
}

func forceTag(consumer *url.URL, inv *rpc.Invocation) bool {
	v := inv.Attachment(KeyForceTag)
	if v == "" && consumer != nil {
		v = consumer.Param(KeyForceTag)
	}
	return strings.EqualFold(v, "true")
}

func filter(ps []cluster.ProviderInvoker, keep func(cluster.ProviderInvoker) bool) []cluster.ProviderInvoker {
	var out []cluster.ProviderInvoker
	for _, p := range ps {
		if keep(p) {
			out = append(out, p)
		}
	}
	return out
}
