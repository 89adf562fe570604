package router

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/cluster/match"
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
	// tagLevels separates the levels of a request tag: "beta|team1" asks
	// for the providers of beta|team1, else those of beta.
	tagLevels = "|"
)

// TagRule is a tag rule document as the config center stores it under
// <provider application>.tag-router: named groups of the application's
// providers. Fields it does not know are kept in Extra. ParseTagRule reads
// and checks one; NewTagRouter routes with it.
type TagRule struct {
	// ConfigVersion "v3.0" (or a later v3.0.x) makes the tags' Match
	// count, as in Java Dubbo 3.3; other versions use Addresses only.
	ConfigVersion string `yaml:"configVersion,omitempty" json:"configVersion,omitempty"`
	// Key is the provider application.
	Key string `yaml:"key,omitempty" json:"key,omitempty"`
	// Enabled false routes by the providers' static tags only. Default
	// true.
	Enabled bool `yaml:"enabled" json:"enabled"`
	// Force: a tagged call whose group has no available provider fails
	// rather than going to providers of no group. Default false.
	Force bool `yaml:"force" json:"force"`
	// Runtime is read for compatibility. Default true.
	Runtime  bool           `yaml:"runtime" json:"runtime"`
	Priority int            `yaml:"priority,omitempty" json:"priority,omitempty"`
	Tags     []Tag          `yaml:"tags" json:"tags"`
	Extra    map[string]any `yaml:",inline" json:"-"`
}

// Tag is one group: the providers at Addresses or, when there are none and
// the rule is v3.0, those whose URL parameters satisfy every Match (Java
// Dubbo 3.3's TagRouterRule).
type Tag struct {
	Name      string         `yaml:"name" json:"name"`
	Addresses []string       `yaml:"addresses,omitempty" json:"addresses,omitempty"`
	Match     match.Params   `yaml:"match,omitempty" json:"match,omitempty"`
	Extra     map[string]any `yaml:",inline" json:"-"`
}

// UnmarshalYAML gives the fields Dubbo's defaults (enabled and runtime
// true).
func (r *TagRule) UnmarshalYAML(n *yaml.Node) error {
	type plain TagRule
	p := plain{Enabled: true, Runtime: true}
	if err := n.Decode(&p); err != nil {
		return err
	}
	*r = TagRule(p)
	return nil
}

// ParseTagRule reads a tag rule document and checks it. Errors wrap
// ErrInvalidRule.
func ParseTagRule(data []byte) (*TagRule, error) {
	var r TagRule
	if err := yaml.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%w: tag rule YAML: %w", ErrInvalidRule, err)
	}
	if err := r.Compile(); err != nil {
		return nil, err
	}
	return &r, nil
}

// Compile checks the rule and prepares its matchers.
func (r *TagRule) Compile() error {
	if len(r.Tags) == 0 {
		return fmt.Errorf("%w: tag rule %q has no tags; add a 'tags:' list with name and addresses or match", ErrInvalidRule, r.Key)
	}
	for i := range r.Tags {
		t := &r.Tags[i]
		if t.Name == "" {
			return fmt.Errorf("%w: tag rule %q: tag #%d has no name", ErrInvalidRule, r.Key, i+1)
		}
		if err := t.Match.Compile(); err != nil {
			return fmt.Errorf("%w: tag rule %q: tag %q: %w", ErrInvalidRule, r.Key, t.Name, err)
		}
	}
	return nil
}

// matchCounts reports whether the tags' Match is read: v3.0 rules only,
// as Java's Tag.parseFromMap.
func (r *TagRule) matchCounts() bool { return strings.HasPrefix(r.ConfigVersion, ConfigVersion30) }

// Warnings lists what the rule says that is not applied.
func (r *TagRule) Warnings() []string {
	w := unknownFields(nil, "", r.Extra, "valid")
	for i, t := range r.Tags {
		at := fmt.Sprintf("tags[%d].", i)
		switch {
		case len(t.Match) > 0 && !r.matchCounts():
			w = append(w, fmt.Sprintf("%smatch is not applied: Java Dubbo 3.3 reads a tag's match only in configVersion v3.0 rules; add configVersion: v3.0", at))
		case len(t.Match) > 0 && len(t.Addresses) > 0:
			w = append(w, fmt.Sprintf("%smatch is not applied: a tag with addresses is those addresses (Java Dubbo 3.3); remove one of the two", at))
		}
		w = unknownFields(w, at, t.Extra, "__generate_by_cp")
	}
	return w
}

// TagRouter routes by tag as Java Dubbo 3.3's TagStateRouter. Without a
// rule (or with a disabled one) it uses the providers' static tag
// parameter: a call tagged "gray" goes to providers tagged "gray", or to
// untagged ones when there are none and dubbo.force.tag is not true; an
// untagged call goes to untagged providers only. A rule adds groups of
// providers by address or parameter match; a tagged call goes to its
// group (a tag "a|b" to the group a|b, else a), an untagged one to
// providers in no group and without a static tag.
type TagRouter struct {
	rule *TagRule // nil: static tags only
}

// NewTagRouter routes with rule, compiled; nil routes by static tags alone.
func NewTagRouter(rule *TagRule) *TagRouter { return &TagRouter{rule: rule} }

// Warnings lists what the rule says that is not applied.
func (r *TagRouter) Warnings() []string {
	if r.rule == nil {
		return nil
	}
	return r.rule.Warnings()
}

// Route implements cluster.Router.
func (r *TagRouter) Route(ps []cluster.ProviderInvoker, consumer *url.URL, inv *rpc.Invocation) []cluster.ProviderInvoker {
	if len(ps) == 0 {
		return ps
	}
	tag := inv.Attachment(KeyTag)
	if tag == "" && consumer != nil {
		tag = consumer.Param(KeyTag)
	}
	force := forceTag(consumer, inv)
	rule := r.rule
	if rule == nil || !rule.Enabled {
		return staticTags(ps, tag, force)
	}
	g := rule.groups(ps)
	if tag == "" {
		out := filter(ps, func(p cluster.ProviderInvoker) bool { return !g.inAny(p) })
		return filter(out, func(p cluster.ProviderInvoker) bool { return providerTag(p) == "" })
	}
	var out []cluster.ProviderInvoker
	if members, ok := g.members(tag, force); ok {
		if out = filter(ps, members); len(out) > 0 || rule.Force {
			return out
		}
	} else {
		out = filter(ps, func(p cluster.ProviderInvoker) bool { return providerTag(p) == tag })
	}
	if len(out) > 0 || force {
		return out
	}
	// Fall back to providers in no group and without a static tag.
	return filter(ps, func(p cluster.ProviderInvoker) bool { return !g.inAny(p) && providerTag(p) == "" })
}

// groups are a rule's tags as they stand for the providers of one call:
// a tag by match with no member is no group (Java leaves it out).
type groups struct {
	rule *TagRule
	ps   []cluster.ProviderInvoker
}

func (r *TagRule) groups(ps []cluster.ProviderInvoker) groups { return groups{r, ps} }

// tagHas reports whether provider p is in tag t.
func (g groups) tagHas(t *Tag, p cluster.ProviderInvoker) bool {
	u := p.URL()
	if len(t.Addresses) > 0 {
		for _, a := range t.Addresses {
			if match.IP(a, u.Host(), u.Port()) {
				return true
			}
		}
		return false
	}
	return g.rule.matchCounts() && t.Match.Match(func(k string) (string, bool) { return u.Param(k), u.HasParam(k) })
}

func (g groups) isGroup(t *Tag) bool {
	if len(t.Addresses) > 0 {
		return true
	}
	if !g.rule.matchCounts() {
		return false
	}
	for _, p := range g.ps {
		if g.tagHas(t, p) {
			return true
		}
	}
	return false
}

func (g groups) inAny(p cluster.ProviderInvoker) bool {
	for i := range g.rule.Tags {
		if g.tagHas(&g.rule.Tags[i], p) {
			return true
		}
	}
	return false
}

// members finds the group of a request tag as Java's
// selectAddressByTagLevel: "a|b|c", else "a|b", else "a", the first that
// is a group; the whole tag alone when force is set or it has no levels.
func (g groups) members(tag string, force bool) (func(cluster.ProviderInvoker) bool, bool) {
	names := []string{tag}
	if !force && strings.Contains(tag, tagLevels) {
		levels := strings.Split(tag, tagLevels)
		names = names[:0]
		for i := len(levels); i > 0; i-- {
			names = append(names, strings.Join(levels[:i], tagLevels))
		}
	}
	for _, name := range names {
		t := g.rule.tag(name)
		if t == nil || !g.isGroup(t) {
			continue
		}
		return func(p cluster.ProviderInvoker) bool { return g.tagHas(t, p) }, true
	}
	return nil, false
}

func (r *TagRule) tag(name string) *Tag {
	for i := range r.Tags {
		if r.Tags[i].Name == name {
			return &r.Tags[i]
		}
	}
	return nil
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
