// Package rules reads, checks and writes Dubbo's governance rules as Dubbo
// Admin stores them in the config center, so that both Admins and the
// console edit each other's rules:
//
//   - condition routes at /dubbo/config/dubbo/<key>.condition-router, key
//     <interface>:<version>:<group> (scope service) or an application name
//     (scope application): Admin 0.5's RoutingRule (configVersion v3.0
//     strings), or new Admin's v3.1 from/to conditions;
//   - tag routes at <application>.tag-router: Admin's TagRoute, with tags
//     by address or, in v3.0 rules, by parameter match;
//   - dynamic configuration (override rules) at <key>.configurators:
//     Admin's OverrideDTO with its OverrideConfig items, including the
//     "weight" items its weight page writes, the disabled=true items that
//     take a provider out of service, and items with a match;
//   - affinity routes at <key>.affinity-router (dubbo-go's, new Admin's);
//   - script routes at <application>.script-router, which the runtime
//     does not apply (Warnings says so).
//
// Normalize checks a document with the runtime's own parsers
// (node/cluster/router, node/cluster/configurator), so what is stored is
// what consumers will apply, and writes it back. A document that Admin
// 0.5's model holds entirely (no v3.1 conditions, no match, no field it
// does not know) is written the way Admin 0.5 writes it: fields in
// alphabetical order, booleans spelled out, absent lists left out. Any
// other is written from the runtime's model, which keeps every field it
// does not know as it was, so nothing a rule says is lost. Warnings lists
// what a rule says that the runtime does not apply.
//
// The console's forms each read and write one part of a document, and
// keep the rest as it was: weights, load balancing, timeout and retries
// and mock in override rules (overrideforms.go); access control, the
// condition builder and tags by address in routing rules (routeforms.go);
// SetWeight and SetDisabled are the providers' weight field and
// Enable/Disable buttons (provider.go).
package rules

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/dubbo-lab/dubbo/node/cluster/configurator"
	"github.com/dubbo-lab/dubbo/node/cluster/router"
	"github.com/dubbo-lab/dubbo/node/url"
)

// ErrInvalid is wrapped by every error about a rule the caller got wrong.
var ErrInvalid = errors.New("invalid rule")

// Kinds of rules, as the API names them.
const (
	KindCondition = "condition"
	KindTag       = "tag"
	KindOverride  = "override"
	KindAffinity  = "affinity"
	KindScript    = "script"
)

// Scopes of condition and override rules.
const (
	ScopeService     = "service"
	ScopeApplication = "application"
)

// suffixes are the config-center key suffixes of each kind.
var suffixes = map[string]string{
	KindCondition: ".condition-router",
	KindTag:       ".tag-router",
	KindOverride:  ".configurators",
	KindAffinity:  ".affinity-router",
	KindScript:    ".script-router",
}

// Kinds lists the kinds in display order.
var Kinds = []string{KindCondition, KindTag, KindOverride, KindAffinity, KindScript}

// byApplication reports whether rules of kind are keyed by the provider
// application alone.
func byApplication(kind string) bool { return kind == KindTag || kind == KindScript }

// ConfigKey is the config-center key of a rule: key plus the kind's suffix.
func ConfigKey(kind, key string) string { return key + suffixes[kind] }

// Split reads a config-center key back into kind and rule key; ok is false
// for documents that are not rules.
func Split(configKey string) (kind, key string, ok bool) {
	for _, k := range Kinds {
		if s := suffixes[k]; strings.HasSuffix(configKey, s) && len(configKey) > len(s) {
			return k, strings.TrimSuffix(configKey, s), true
		}
	}
	return "", "", false
}

// CheckKey refuses keys that cannot name a rule: empty, too long, with a
// '/' (it would make a deeper ZooKeeper node; Admin writes '*' for the
// group separator) or control characters. Tag rules are keyed by an
// application, which has no ':'.
func CheckKey(kind, key string) error {
	if _, ok := suffixes[kind]; !ok {
		return fmt.Errorf("%w: kind %q; use %s", ErrInvalid, kind, strings.Join(Kinds, ", "))
	}
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key; use <interface>:<version>:<group> or an application name", ErrInvalid)
	case len(key) > 512:
		return fmt.Errorf("%w: key is %d bytes, more than 512", ErrInvalid, len(key))
	case strings.Contains(key, "/"):
		return fmt.Errorf("%w: key %q has a '/'; write <interface>:<version>:<group>", ErrInvalid, key)
	case key == "." || key == "..":
		return fmt.Errorf("%w: key %q", ErrInvalid, key)
	case strings.IndexFunc(key, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) >= 0:
		return fmt.Errorf("%w: key %q has spaces or control characters", ErrInvalid, key)
	case byApplication(kind) && strings.Contains(key, ":"):
		return fmt.Errorf("%w: %s rules are keyed by the provider application, not a service (%q)", ErrInvalid, kind, key)
	}
	return nil
}

// ScopeOf is the scope a key implies: service for interface:version:group,
// application for a name without ':'.
func ScopeOf(key string) string {
	if strings.Contains(key, ":") {
		return ScopeService
	}
	return ScopeApplication
}

// interfaceOf is the interface a service-scope YAML key names: Admin writes
// the interface alone ("group*interface" with a group), the runtime also
// reads "group/interface:version" and "interface:version:group".
func interfaceOf(key string) string {
	if _, rest, ok := strings.Cut(key, "*"); ok {
		key = rest
	}
	iface, _, _ := url.ParseServiceKey(key)
	return iface
}

// ConditionRule is Admin's RoutingRule.
type ConditionRule struct {
	Conditions []string `yaml:"conditions" json:"conditions"`
	Enabled    bool     `yaml:"enabled" json:"enabled"`
	Force      bool     `yaml:"force" json:"force"`
	Key        string   `yaml:"key" json:"key"`
	Priority   int      `yaml:"priority" json:"priority"`
	Runtime    bool     `yaml:"runtime" json:"runtime"`
	Scope      string   `yaml:"scope" json:"scope"`
}

// TagRule is Admin's TagRoute.
type TagRule struct {
	Enabled  bool   `yaml:"enabled" json:"enabled"`
	Force    bool   `yaml:"force" json:"force"`
	Key      string `yaml:"key" json:"key"`
	Priority int    `yaml:"priority" json:"priority"`
	Runtime  bool   `yaml:"runtime" json:"runtime"`
	Tags     []Tag  `yaml:"tags" json:"tags"`
}

// Tag is Admin's Tag: a name and the provider addresses that carry it.
type Tag struct {
	Addresses []string `yaml:"addresses,omitempty" json:"addresses"`
	Name      string   `yaml:"name" json:"name"`
}

// OverrideRule is Admin's OverrideDTO.
type OverrideRule struct {
	ConfigVersion string           `yaml:"configVersion,omitempty" json:"configVersion,omitempty"`
	Configs       []OverrideConfig `yaml:"configs" json:"configs"`
	Enabled       bool             `yaml:"enabled" json:"enabled"`
	Key           string           `yaml:"key" json:"key"`
	Scope         string           `yaml:"scope" json:"scope"`
}

// OverrideConfig is Admin's OverrideConfig: one item of an override rule.
// Type is "weight" or "balancing" for the items Admin's weight and load
// balancing pages own, empty for dynamic configuration.
type OverrideConfig struct {
	Addresses         []string       `yaml:"addresses,omitempty" json:"addresses,omitempty"`
	Applications      []string       `yaml:"applications,omitempty" json:"applications,omitempty"`
	Enabled           bool           `yaml:"enabled" json:"enabled"`
	Parameters        map[string]any `yaml:"parameters" json:"parameters"`
	ProviderAddresses []string       `yaml:"providerAddresses,omitempty" json:"providerAddresses,omitempty"`
	Services          []string       `yaml:"services,omitempty" json:"services,omitempty"`
	Side              string         `yaml:"side,omitempty" json:"side,omitempty"`
	Type              string         `yaml:"type,omitempty" json:"type,omitempty"`
}

// fields Admin's model knows, per kind and per nested object.
var (
	conditionFields = []string{"conditions", "enabled", "force", "key", "priority", "runtime", "scope", "configVersion"}
	tagFields       = []string{"enabled", "force", "key", "priority", "runtime", "tags", "configVersion"}
	tagItemFields   = []string{"addresses", "name"}
	overrideFields  = []string{"configVersion", "configs", "enabled", "key", "scope"}
	itemFields      = []string{"addresses", "applications", "enabled", "parameters", "providerAddresses", "services", "side", "type"}
)

// maxDoc bounds a rule document.
const maxDoc = 256 << 10

// Normalize checks doc as a rule of kind stored under key and returns it
// as Admin writes it. Errors wrap ErrInvalid and name the problem.
func Normalize(kind, key string, doc []byte) ([]byte, error) {
	if err := CheckKey(kind, key); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil, fmt.Errorf("%w: empty document; send the rule's YAML", ErrInvalid)
	}
	if len(doc) > maxDoc {
		return nil, fmt.Errorf("%w: document is %d bytes, more than %d", ErrInvalid, len(doc), maxDoc)
	}
	var top map[string]any
	if err := yaml.Unmarshal(doc, &top); err != nil {
		return nil, fmt.Errorf("%w: YAML: %v", ErrInvalid, err)
	}
	if top == nil {
		return nil, fmt.Errorf("%w: the document is not a YAML mapping", ErrInvalid)
	}
	if hasNullKey(top) {
		// A rule's typed form cannot keep it: stored without it, the rule
		// would read differently the next time (Normalize must be stable).
		return nil, fmt.Errorf("%w: a mapping has an empty (null) key", ErrInvalid)
	}
	switch kind {
	case KindCondition:
		return normalizeCondition(key, doc, top)
	case KindTag:
		return normalizeTag(key, doc, top)
	case KindAffinity:
		return normalizeAffinity(key, doc)
	case KindScript:
		return normalizeScript(key, doc)
	default:
		return normalizeOverride(key, doc, top)
	}
}

// Warnings lists what a stored rule of kind says that the runtime does
// not apply (a script rule; a condition's priority in v3.1; a tag's match
// outside v3.0; fields Dubbo does not read), for the console to show
// beside it. nil when the rule is applied as written or does not parse.
func Warnings(kind string, doc []byte) []string {
	switch kind {
	case KindCondition:
		if r, err := router.ParseConditionRule(doc); err == nil {
			return r.Warnings()
		}
	case KindTag:
		if r, err := router.ParseTagRule(doc); err == nil {
			return r.Warnings()
		}
	case KindAffinity:
		if r, err := router.ParseAffinityRule(doc); err == nil {
			return r.Warnings()
		}
	case KindScript:
		if r, err := router.ParseScriptRule(doc); err == nil {
			return r.Warnings()
		}
	case KindOverride:
		if d, err := configurator.ParseDocument(doc); err == nil {
			return d.Warnings()
		}
	}
	return nil
}

func normalizeCondition(key string, doc []byte, top map[string]any) ([]byte, error) {
	rule, err := router.ParseConditionRule(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	scope, yamlKey, err := checkScopeKey(key, rule.Scope, rule.Key)
	if err != nil {
		return nil, err
	}
	if rule.IsV31() || known("condition rule", top, conditionFields) != nil {
		rule.Scope, rule.Key = scope, yamlKey
		return marshal(rule)
	}
	r := ConditionRule{Enabled: true, Runtime: true} // Dubbo's defaults when absent
	if err := yaml.Unmarshal(doc, &r); err != nil {
		return nil, fmt.Errorf("%w: condition rule: %v", ErrInvalid, err)
	}
	r.Scope, r.Key = scope, yamlKey
	return marshal(r)
}

func normalizeTag(key string, doc []byte, top map[string]any) ([]byte, error) {
	rule, err := router.ParseTagRule(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if rule.Key != "" && rule.Key != key {
		return nil, fmt.Errorf("%w: key %q in the document, but the rule is stored as %q", ErrInvalid, rule.Key, key)
	}
	if !adminTag(top) {
		rule.Key = key
		return marshal(rule)
	}
	r := TagRule{Enabled: true, Runtime: true}
	if err := yaml.Unmarshal(doc, &r); err != nil {
		return nil, fmt.Errorf("%w: tag rule: %v", ErrInvalid, err)
	}
	r.Key = key
	return marshal(r)
}

// adminTag reports whether Admin 0.5's TagRoute holds the whole rule.
func adminTag(top map[string]any) bool {
	if known("tag rule", top, tagFields) != nil {
		return false
	}
	tags, _ := top["tags"].([]any)
	for _, t := range tags {
		m, ok := t.(map[string]any)
		if !ok || known("tag", m, tagItemFields) != nil {
			return false
		}
	}
	return true
}

func normalizeOverride(key string, doc []byte, top map[string]any) ([]byte, error) {
	var d configurator.Document
	if err := yaml.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("%w: override rule: %v", ErrInvalid, err)
	}
	scope, yamlKey, err := checkScopeKey(key, d.Scope, d.Key)
	if err != nil {
		return nil, err
	}
	d.Scope, d.Key = scope, yamlKey
	// The runtime's parser needs scope and key, which may have been filled
	// in above: check what will be stored.
	if _, err := d.Rules(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if !adminOverride(top) {
		return marshal(&d)
	}
	r := OverrideRule{Enabled: d.Enabled, Key: d.Key, Scope: d.Scope, ConfigVersion: d.ConfigVersion}
	for _, it := range d.Configs {
		// Items whose enabled is absent are on, as Dubbo reads them;
		// Admin's model has a plain boolean, so it is written out.
		r.Configs = append(r.Configs, OverrideConfig{Addresses: it.Addresses, Applications: it.Applications,
			Enabled: it.Enabled, Parameters: it.Parameters, ProviderAddresses: it.ProviderAddresses,
			Services: it.Services, Side: it.Side, Type: it.Type})
	}
	return marshal(r)
}

// hasNullKey says whether v, a decoded YAML value, holds a mapping with a
// null key.
func hasNullKey(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			if hasNullKey(e) {
				return true
			}
		}
	case map[any]any:
		for k, e := range v {
			if k == nil || hasNullKey(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if hasNullKey(e) {
				return true
			}
		}
	}
	return false
}

// adminOverride reports whether Admin 0.5's OverrideDTO holds the whole
// rule.
func adminOverride(top map[string]any) bool {
	if known("override rule", top, overrideFields) != nil {
		return false
	}
	items, _ := top["configs"].([]any)
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok || known("configs item", m, itemFields) != nil {
			return false
		}
	}
	return true
}

func normalizeAffinity(key string, doc []byte) ([]byte, error) {
	rule, err := router.ParseAffinityRule(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	scope, yamlKey, err := checkScopeKey(key, rule.Scope, rule.Key)
	if err != nil {
		return nil, err
	}
	rule.Scope, rule.Key = scope, yamlKey
	if rule.ConfigVersion == "" {
		rule.ConfigVersion = router.ConfigVersion31
	}
	return marshal(rule)
}

// normalizeScript keeps a script rule as written (after checking it is a
// mapping): the runtime does not apply it, but the rule is another
// runtime's to read.
func normalizeScript(key string, doc []byte) ([]byte, error) {
	rule, err := router.ParseScriptRule(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if rule.Key != "" && rule.Key != key {
		return nil, fmt.Errorf("%w: key %q in the document, but the rule is stored as %q", ErrInvalid, rule.Key, key)
	}
	rule.Key = key
	return marshal(rule)
}

// checkScopeKey fills in and checks a document's scope and key against the
// key it is stored under. A service rule's document key is the interface,
// as Admin writes it (the full colon key is accepted).
func checkScopeKey(pathKey, scope, docKey string) (string, string, error) {
	want := ScopeOf(pathKey)
	if scope == "" {
		scope = want
	}
	if scope != want {
		return "", "", fmt.Errorf("%w: scope %q, but key %q is %s-scoped (a service key is <interface>:<version>:<group>, an application key has no ':')",
			ErrInvalid, scope, pathKey, want)
	}
	if scope == ScopeApplication {
		if docKey != "" && docKey != pathKey {
			return "", "", fmt.Errorf("%w: key %q in the document, but the rule is stored as %q", ErrInvalid, docKey, pathKey)
		}
		return scope, pathKey, nil
	}
	iface := interfaceOf(pathKey)
	if docKey == "" {
		return scope, iface, nil
	}
	if interfaceOf(docKey) != iface {
		return "", "", fmt.Errorf("%w: key %q in the document names another service than %q", ErrInvalid, docKey, pathKey)
	}
	return scope, docKey, nil
}

// known says which fields Admin 0.5's model does not have.
func known(what string, m map[string]any, fields []string) error {
	var unknown []string
	for k := range m {
		if !slices.Contains(fields, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return fmt.Errorf("%w: %s: unknown field %s (Dubbo Admin's model has %s)", ErrInvalid, what,
		strings.Join(unknown, ", "), strings.Join(fields, ", "))
}

func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("write rule: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("write rule: %w", err)
	}
	return b.Bytes(), nil
}

// ParseCondition reads a stored condition rule (Admin's or Dubbo's YAML).
func ParseCondition(doc []byte) (ConditionRule, error) {
	r := ConditionRule{Enabled: true, Runtime: true}
	if err := yaml.Unmarshal(doc, &r); err != nil {
		return r, fmt.Errorf("%w: condition rule: %v", ErrInvalid, err)
	}
	return r, nil
}

// ParseOverride reads a stored override rule.
func ParseOverride(doc []byte) (OverrideRule, error) {
	r := OverrideRule{Enabled: true}
	if err := yaml.Unmarshal(doc, &r); err != nil {
		return r, fmt.Errorf("%w: override rule: %v", ErrInvalid, err)
	}
	return r, nil
}

// Enabled reads the enabled flag of any stored rule (default true).
func Enabled(doc []byte) bool {
	var r struct {
		Enabled *bool `yaml:"enabled"`
	}
	if yaml.Unmarshal(doc, &r) != nil || r.Enabled == nil {
		return true
	}
	return *r.Enabled
}

// SetEnabled returns doc with its top-level enabled flag set, as Admin's
// enable and disable buttons do.
func SetEnabled(kind, key string, doc []byte, on bool) ([]byte, error) {
	var node yaml.Node
	if err := yaml.Unmarshal(doc, &node); err != nil || node.Kind != yaml.DocumentNode || len(node.Content) == 0 || node.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: stored rule %s is not a YAML mapping", ErrInvalid, key)
	}
	m := node.Content[0]
	val := "false"
	if on {
		val = "true"
	}
	found := false
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "enabled" {
			m.Content[i+1] = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: val}
			found = true
		}
	}
	if !found {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "enabled"},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: val})
	}
	out, err := yaml.Marshal(&node)
	if err != nil {
		return nil, fmt.Errorf("write rule: %w", err)
	}
	return Normalize(kind, key, out)
}
