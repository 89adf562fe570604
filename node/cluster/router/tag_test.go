package router

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/dubbo-lab/dubbo/node/url"
)

var tagged = providers(
	"10.0.0.1:20880/g?application=p",
	"10.0.0.2:20880/g?application=p&dubbo.tag=gray",
	"10.0.0.3:20880/g?application=p&env=canary",
	"10.0.0.4:20880/g?application=p&tag=blue",
)

func TestTagRouter(t *testing.T) {
	rule, err := ParseTagRule([]byte(`
configVersion: v3.0
force: false
key: p
tags:
  - name: beta
    addresses: ["10.0.0.1:20880"]
  - name: canary
    match:
      - key: env
        value: {exact: canary}
  - name: empty
    addresses: ["10.9.9.9"]
`))
	if err != nil {
		t.Fatal(err)
	}
	forced := *rule
	forced.Force = true
	disabled := *rule
	disabled.Enabled = false
	tests := []struct {
		name     string
		rule     *TagRule
		tag      string
		forceTag string
		want     string
	}{
		{"static: no tag goes to untagged", nil, "", "", "1,3"},
		{"static: tag gray", nil, "gray", "", "2"},
		{"static: plain tag parameter", nil, "blue", "", "4"},
		{"static: unknown tag falls back to untagged", nil, "red", "", "1,3"},
		{"static: unknown tag with dubbo.force.tag", nil, "red", "true", ""},
		{"rule: group by address", rule, "beta", "", "1"},
		{"rule: group by match", rule, "canary", "", "3"},
		{"rule: static tag not in rule", rule, "gray", "", "2"},
		{"rule: empty group falls back to untagged outside groups", rule, "empty", "", ""},
		{"rule: force keeps empty group", &forced, "empty", "", ""},
		{"rule: unknown tag falls back", rule, "red", "", ""},
		// Java's TagStateRouter: an untagged call avoids the groups, then
		// every provider with a static tag.
		{"rule: no tag avoids groups and static tags", rule, "", "", ""},
		{"rule: tag levels fall back to the first group", rule, "beta|team1|x", "", "1"},
		{"rule: tag levels with dubbo.force.tag take the whole tag", rule, "beta|team1", "true", ""},
		{"disabled rule: static tags", &disabled, "beta", "", "1,3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := call("sayHello")
			if tt.tag != "" {
				inv.SetAttachment(KeyTag, tt.tag)
			}
			if tt.forceTag != "" {
				inv.SetAttachment(KeyForceTag, tt.forceTag)
			}
			if got := hosts(NewTagRouter(tt.rule).Route(tagged, shopConsumer, inv)); got != tt.want {
				t.Errorf("routed to %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTagRouterFallbackWithUntaggedOutsideGroups(t *testing.T) {
	rule, err := ParseTagRule([]byte("tags:\n  - name: beta\n    addresses: [\"10.0.0.1\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := NewTagRouter(rule)
	for _, tt := range []struct{ tag, want string }{{"", "3"}, {"red", "3"}, {"beta", "1"}} {
		inv := call("sayHello")
		if tt.tag != "" {
			inv.SetAttachment(KeyTag, tt.tag)
		}
		if got := hosts(r.Route(tagged, shopConsumer, inv)); got != tt.want {
			t.Errorf("tag %q routed to %q, want %q", tt.tag, got, tt.want)
		}
	}
	// The consumer's own dubbo.tag parameter tags calls without the attachment.
	consumer := url.MustParse("consumer://1.1.1.1/g?dubbo.tag=beta")
	if got := hosts(r.Route(tagged, consumer, call("sayHello"))); got != "1" {
		t.Errorf("consumer tag routed to %q, want 1", got)
	}
}

// A group by match that matches no provider is no group, as in Java's
// TagRouterRule (its addresses are left unset): the tag goes by static tags,
// and the rule's force does not apply to it.
func TestTagRouterMatchGroupWithoutMembers(t *testing.T) {
	rule, err := ParseTagRule([]byte("configVersion: v3.0\nforce: true\ntags:\n  - name: gray\n    match:\n      - key: env\n        value: {exact: nowhere}\n"))
	if err != nil {
		t.Fatal(err)
	}
	inv := call("sayHello")
	inv.SetAttachment(KeyTag, "gray")
	if got := hosts(NewTagRouter(rule).Route(tagged, shopConsumer, inv)); got != "2" {
		t.Errorf("routed to %q, want 2 (static dubbo.tag=gray)", got)
	}
}

func TestParseTagRuleInvalid(t *testing.T) {
	for _, y := range []string{
		"key: p\n",
		"tags:\n  - addresses: [a]\n",
		"tags:\n  - name: a\n    match:\n      - value: {exact: x}\n",
		"tags:\n  - name: a\n    match:\n      - key: k\n        value: {regex: '('}\n",
		"tags: {",
	} {
		if _, err := ParseTagRule([]byte(y)); !errors.Is(err, ErrInvalidRule) {
			t.Errorf("ParseTagRule(%q) error = %v, want ErrInvalidRule", y, err)
		}
	}
}

// Java's TagStateRouterTest.tagRouterRuleParseTestV3: which providers each
// tag holds. A tag with addresses is those addresses, match or not; one by
// match holds the providers matching all of it, and one that matches none
// is no group.
func TestTagRuleGroupsJava(t *testing.T) {
	rule, err := ParseTagRule([]byte(`---
configVersion: v3.0
force: false
runtime: true
enabled: true
priority: 1
key: demo-provider
tags:
  - name: tag1
    match:
    - key: match_key1
      value:
       exact: value1
  - name: tag2
    addresses:
     - "10.20.3.3:20880"
     - "10.20.3.4:20880"
    match:
    - key: match_key2
      value:
       exact: value2
  - name: tag3
    match:
    - key: match_key2
      value:
       exact: value2
  - name: tag4
    match:
    - key: not_exist
      value:
       exact: not_exist
  - name: tag5
    match:
    - key: match_key2
      value:
       wildcard: "*"
...`))
	if err != nil {
		t.Fatal(err)
	}
	if rule.Key != "demo-provider" || rule.Priority != 1 || len(rule.Tags) != 5 {
		t.Fatalf("parsed %+v", rule)
	}
	ps := providers("10.20.3.3:20880/com.foo.BarService?match_key1=value1&match_key2=value2",
		"10.20.3.4:20880/com.foo.BarService?match_key1=value1")
	g := rule.groups(ps)
	for _, tt := range []struct {
		tag     string
		members string // "" and group false: no group
		group   bool
	}{
		{"tag1", "3,4", true}, {"tag2", "3,4", true}, {"tag3", "3", true}, {"tag4", "", false}, {"tag5", "3", true},
	} {
		tag := rule.tag(tt.tag)
		var in []string
		for _, p := range ps {
			if g.tagHas(tag, p) {
				in = append(in, p.URL().Host()[len("10.20.3."):])
			}
		}
		if got := joinComma(in); got != tt.members || g.isGroup(tag) != tt.group {
			t.Errorf("%s holds %q (group %v), want %q (group %v)", tt.tag, got, g.isGroup(tag), tt.members, tt.group)
		}
	}
	if w := rule.Warnings(); len(w) != 1 || !contains(w[0], "tags[1].match is not applied") {
		t.Errorf("warnings %q, want one about tag2's match beside its addresses", w)
	}
}

// Java's testTagRouteWithDynamicRuleV3: a call tagged tag2 goes to the
// group by match (two providers), not to the one with the static tag only.
func TestTagRouteWithDynamicRuleV3Java(t *testing.T) {
	rule, err := ParseTagRule([]byte("configVersion: v3.0\nkey: demo-provider\ntags:\n  - name: tag2\n    match:\n    - key: match_key\n      value:\n       exact: value\n"))
	if err != nil {
		t.Fatal(err)
	}
	ps := providers("127.0.0.1:7777/DemoInterface?application=foo&dubbo.tag=tag2&match_key=value",
		"127.0.0.1:7778/DemoInterface?application=foo&match_key=value",
		"127.0.0.1:7779/DemoInterface?application=foo")
	inv := call("sayHello")
	inv.SetAttachment(KeyTag, "tag2")
	if got := NewTagRouter(rule).Route(ps, ps[0].URL(), inv); len(got) != 2 || got[0] != ps[0] || got[1] != ps[1] {
		t.Errorf("routed to %d providers, want the two with match_key=value", len(got))
	}
	// Without configVersion v3.0 the match is not read: tag2 is no group
	// and the call goes by static tags, with a warning.
	old, err := ParseTagRule([]byte("key: demo-provider\ntags:\n  - name: tag2\n    match:\n    - key: match_key\n      value:\n       exact: value\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := NewTagRouter(old).Route(ps, ps[0].URL(), inv); len(got) != 1 || got[0] != ps[0] {
		t.Errorf("without v3.0: routed to %d providers, want the one with dubbo.tag=tag2", len(got))
	}
	if w := old.Warnings(); len(w) != 1 || !contains(w[0], "configVersion: v3.0") {
		t.Errorf("warnings %q", w)
	}
}

// Java's tagMultiLevelTest, through the router: a tag "a|b|c" goes to the
// group a|b|c, else a|b, else a; an unknown first level is no group.
func TestTagLevels(t *testing.T) {
	ps := providers("192.168.5.1:20880/g", "192.168.5.2:20880/g", "192.168.5.3:20880/g", "192.168.5.4:20880/g")
	doc := func(tags ...string) *TagRule {
		r := &TagRule{Enabled: true}
		for i, name := range tags {
			r.Tags = append(r.Tags, Tag{Name: name, Addresses: []string{fmt.Sprintf("192.168.5.%d:20880", i+1)}})
		}
		return r
	}
	route := func(r *TagRule, tag string) string {
		inv := call("sayHello")
		inv.SetAttachment(KeyTag, tag)
		return hosts(NewTagRouter(r).Route(ps, shopConsumer, inv))
	}
	one := doc("beta")
	all := doc("beta", "beta|team1", "beta|team1|partner1")
	for _, tt := range []struct {
		rule      *TagRule
		tag, want string
	}{
		{one, "beta|team1|partner1", "1"},
		{doc("beta", "beta|team1"), "beta|team1|partner1", "2"},
		{all, "beta|team1|partner1", "3"},
		{all, "beta", "1"},
		{all, "beta|team1", "2"},
		{all, "beta|team2", "1"},
		{all, "beta|team1|partner2", "2"},
		{all, "beta2", "4"}, // no group: providers in no group
	} {
		if got := route(tt.rule, tt.tag); got != tt.want {
			t.Errorf("tag %q with groups %d: routed to %q, want %q", tt.tag, len(tt.rule.Tags), got, tt.want)
		}
	}
}

// Unknown fields are kept, at every level, when a rule is read and
// written back: what new Admin adds (__generate_by_cp) survives the
// console.
func TestTagRuleRoundTrip(t *testing.T) {
	in := `configVersion: v3.0
key: p
enabled: true
force: false
runtime: true
tags:
  - name: gray
    match:
      - key: env
        value:
          prefix: gr
          caseSensitive: true
    __generate_by_cp: true
owner: ops
`
	r, err := ParseTagRule([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	sameYAML(t, in, r)
}

// sameYAML checks that rule, written as YAML, says what in says, but for
// the fields in absent (written as absent when zero).
func sameYAML(t *testing.T, in string, rule any, absent ...string) {
	t.Helper()
	out, err := yaml.Marshal(rule)
	if err != nil {
		t.Fatal(err)
	}
	var a, b map[string]any
	if err := yaml.Unmarshal([]byte(in), &a); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(out, &b); err != nil {
		t.Fatal(err)
	}
	for _, k := range absent {
		delete(a, k)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("round trip changed the rule:\n%s\nwant\n%s", out, in)
	}
}

func joinComma(s []string) string { return strings.Join(s, ",") }

func contains(s, sub string) bool { return strings.Contains(s, sub) }
