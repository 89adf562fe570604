package router

import (
	"slices"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// FuzzParseCondition checks that no rule text panics the parser or the
// router, and that routing only ever returns providers it was given.
func FuzzParseCondition(f *testing.F) {
	f.Add("method = sayHello => region = hangzhou", false)
	f.Add("=> host = 10.*.12 & port != 20880", true)
	f.Add("arguments[0] = bob & attachments[user] = vip => $region", false)
	f.Fuzz(func(t *testing.T, rule string, force bool) {
		c, err := ParseCondition(rule, force)
		if err != nil {
			return
		}
		in := map[cluster.ProviderInvoker]bool{}
		for _, p := range greeters {
			in[p] = true
		}
		for _, inv := range []*rpc.Invocation{call("sayHello", "bob"), call("add", 1, 2)} {
			for _, p := range c.Route(greeters, shopConsumer, inv) {
				if !in[p] {
					t.Fatalf("rule %q routed to a provider it was not given", rule)
				}
			}
		}
	})
}

// FuzzParseConditionRule checks that no document panics the parser or
// the router, that routing returns only providers it was given, and that
// a rule written back reads as the same rule.
func FuzzParseConditionRule(f *testing.F) {
	f.Add("configVersion: v3.0\nscope: service\nkey: org.example.Greeter\nconditions:\n  - method = sayHello => region = hangzhou\n")
	f.Add("configVersion: v3.1\nscope: service\nkey: shop\nforce: false\nconditions:\n  - from:\n      match: region=$region & version=v1\n    to:\n      - match: env=$env\n        weight: 200\n      - match: region=beijing\n")
	f.Add("configVersion: v3.1\nconditions:\n  - from: {match: host=127.0.0.1}\n  - to: [{match: 'port = 20000~20880'}]\n")
	f.Fuzz(func(t *testing.T, doc string) {
		rule, err := ParseConditionRule([]byte(doc))
		if err != nil {
			return
		}
		r, err := NewConditionRouter(rule)
		if err != nil {
			t.Fatalf("parsed but does not compile: %v", err)
		}
		checkSubset(t, r)
		out, err := yaml.Marshal(rule)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		again, err := ParseConditionRule(out)
		if err != nil {
			t.Fatalf("written back as\n%s\nwhich does not read: %v", out, err)
		}
		if out2, _ := yaml.Marshal(again); string(out2) != string(out) {
			t.Fatalf("written back as\n%s\nthen as\n%s", out, out2)
		}
	})
}

// FuzzParseTagRule: as FuzzParseConditionRule, for tag rules and any
// request tag.
func FuzzParseTagRule(f *testing.F) {
	f.Add("configVersion: v3.0\nkey: p\ntags:\n  - name: gray\n    match:\n      - key: region\n        value: {prefix: hang}\n  - name: beta\n    addresses: [\"10.20.153.11:20880\"]\n", "gray")
	f.Add("tags:\n  - name: a|b\n    addresses: [10.20.153.10-11]\n", "a|b|c")
	f.Fuzz(func(t *testing.T, doc, tag string) {
		rule, err := ParseTagRule([]byte(doc))
		if err != nil {
			return
		}
		r := NewTagRouter(rule)
		inv := call("sayHello", "bob")
		inv.SetAttachment(KeyTag, tag)
		subset(t, r.Route(greeters, shopConsumer, inv))
		out, err := yaml.Marshal(rule)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		if _, err := ParseTagRule(out); err != nil {
			t.Fatalf("written back as\n%s\nwhich does not read: %v", out, err)
		}
	})
}

// FuzzParseAffinityRule: as FuzzParseConditionRule, for affinity rules.
func FuzzParseAffinityRule(f *testing.F) {
	f.Add("configVersion: v3.1\nscope: service\nkey: g\naffinityAware: {key: region, ratio: 20}\n")
	f.Add("affinity: {key: application}\nenabled: true\n")
	f.Fuzz(func(t *testing.T, doc string) {
		rule, err := ParseAffinityRule([]byte(doc))
		if err != nil {
			return
		}
		r, err := NewAffinityRouter(rule)
		if err != nil {
			t.Fatalf("parsed but does not compile: %v", err)
		}
		checkSubset(t, r)
	})
}

func checkSubset(t *testing.T, r cluster.Router) {
	t.Helper()
	for _, inv := range []*rpc.Invocation{call("sayHello", "bob"), call("add", 1, 2)} {
		subset(t, r.Route(greeters, shopConsumer, inv))
	}
}

func subset(t *testing.T, ps []cluster.ProviderInvoker) {
	t.Helper()
	for _, p := range ps {
		if !slices.Contains(greeters, p) {
			t.Fatalf("routed to a provider it was not given: %s", p.URL())
		}
	}
}
