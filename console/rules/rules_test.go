package rules_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/dubbo-lab/dubbo/console/rules"
	"github.com/dubbo-lab/dubbo/node/cluster/configurator"
	"github.com/dubbo-lab/dubbo/node/cluster/router"
)

func TestSplitAndCheckKey(t *testing.T) {
	for _, c := range []struct{ configKey, kind, key string }{
		{"org.example.Greeter:1.0.0:.condition-router", rules.KindCondition, "org.example.Greeter:1.0.0:"},
		{"app.tag-router", rules.KindTag, "app"},
		{"app.configurators", rules.KindOverride, "app"},
	} {
		kind, key, ok := rules.Split(c.configKey)
		if !ok || kind != c.kind || key != c.key || rules.ConfigKey(kind, key) != c.configKey {
			t.Errorf("Split(%q) = %q %q %v", c.configKey, kind, key, ok)
		}
	}
	for _, bad := range []string{"dubbo.properties", ".tag-router", "x.yaml"} {
		if _, _, ok := rules.Split(bad); ok {
			t.Errorf("Split(%q) accepted", bad)
		}
	}
	for _, c := range []struct{ kind, key string }{
		{rules.KindCondition, ""}, {rules.KindCondition, "a/b"}, {rules.KindCondition, "a b"}, {rules.KindCondition, ".."},
		{rules.KindTag, "svc:1.0.0:"}, {"mesh", "a"}, {rules.KindOverride, strings.Repeat("a", 600)},
	} {
		if err := rules.CheckKey(c.kind, c.key); !errors.Is(err, rules.ErrInvalid) {
			t.Errorf("CheckKey(%q, %q) = %v", c.kind, c.key, err)
		}
	}
}

// TestNormalizeKeepsWhatTheRuntimeApplies: what Normalize writes parses
// with the runtime's parsers to the same rule as what it was given.
func TestNormalizeKeepsWhatTheRuntimeApplies(t *testing.T) {
	in := "configVersion: v3.0\nscope: application\nkey: shop\nforce: true\npriority: 3\nconditions:\n  - \"method = find => region = hz\"\n  - \"=> host != 10.0.0.1\"\n"
	out, err := rules.Normalize(rules.KindCondition, "shop", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	a, err := router.ParseConditionRule([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	b, err := router.ParseConditionRule(out)
	if err != nil {
		t.Fatalf("%v in\n%s", err, out)
	}
	if !reflect.DeepEqual(a.Conditions, b.Conditions) || a.Force != b.Force || a.Enabled != b.Enabled || a.Priority != b.Priority || a.Scope != b.Scope {
		t.Fatalf("in %v\nout %v\n%s", a, b, out)
	}
	ov := "configs:\n  - addresses: [\"1.2.3.4:20880\"]\n    side: provider\n    parameters: {weight: 7}\n"
	out, err = rules.Normalize(rules.KindOverride, "org.example.Greeter:1.0.0:", []byte(ov))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := configurator.Parse(out)
	if err != nil || len(rs) != 1 || rs[0].Parameters["weight"] != "7" || rs[0].Service != "org.example.Greeter" {
		t.Fatalf("override %v %v\n%s", rs, err, out)
	}
}

func TestSetWeightAndDisabled(t *testing.T) {
	key := "org.example.Greeter:1.0.0:"
	doc, err := rules.SetWeight(nil, key, "10.0.0.1:20880", 50)
	if err != nil {
		t.Fatal(err)
	}
	doc, err = rules.SetWeight(doc, key, "10.0.0.2:20880", 60)
	if err != nil {
		t.Fatal(err)
	}
	doc, err = rules.SetWeight(doc, key, "10.0.0.1:20880", 70) // replaces the first
	if err != nil {
		t.Fatal(err)
	}
	doc, empty, err := rules.SetDisabled(doc, key, "10.0.0.2:20880", true)
	if err != nil || empty {
		t.Fatal(err)
	}
	r, err := rules.ParseOverride(doc)
	if err != nil || len(r.Configs) != 3 {
		t.Fatalf("%v %v\n%s", r, err, doc)
	}
	if got := rules.DisabledAddresses(doc); len(got) != 1 || got[0] != "10.0.0.2:20880" {
		t.Fatalf("disabled %v", got)
	}
	if strings.Count(string(doc), "weight: 70") != 1 || strings.Contains(string(doc), "weight: 50") {
		t.Fatalf("weights\n%s", doc)
	}
	doc, empty, err = rules.SetDisabled(doc, key, "10.0.0.2:20880", false)
	if err != nil || empty || len(rules.DisabledAddresses(doc)) != 0 {
		t.Fatalf("enable: %v %v\n%s", empty, err, doc)
	}
	if _, empty, _ := rules.SetDisabled(nil, key, "10.0.0.2:20880", false); !empty {
		t.Fatal("enabling with no rule left something to store")
	}
	for _, bad := range []string{"", "host", "host:0", "host:99999", ":80"} {
		if _, err := rules.SetWeight(nil, key, bad, 1); !errors.Is(err, rules.ErrInvalid) {
			t.Errorf("address %q: %v", bad, err)
		}
	}
}

func TestSetEnabled(t *testing.T) {
	doc := []byte("conditions: [\"=> host = 1.2.3.4\"]\nkey: org.example.Greeter\n")
	out, err := rules.SetEnabled(rules.KindCondition, "org.example.Greeter::", doc, false)
	if err != nil || rules.Enabled(out) || !strings.Contains(string(out), "host = 1.2.3.4") {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, err := rules.SetEnabled(rules.KindCondition, "x::", []byte("- a"), true); err == nil {
		t.Fatal("a list was enabled")
	}
}

// FuzzNormalize: any document is either refused with ErrInvalid or turned
// into one that Normalize accepts unchanged and the runtime parses.
func FuzzNormalize(f *testing.F) {
	f.Add("condition", "org.example.Greeter:1.0.0:", "conditions:\n  - \"method = sayHello => host = 1.2.3.4\"\n")
	f.Add("tag", "app", "tags:\n  - name: gray\n    addresses: [\"1.2.3.4:1\"]\n")
	f.Add("override", "app", "configs:\n  - side: provider\n    parameters: {timeout: 1}\n")
	f.Add("override", "s:1:", "configs:\n  - enabled: false\n    parameters: {a: null}\n")
	f.Fuzz(func(t *testing.T, kind, key, doc string) {
		out, err := rules.Normalize(kind, key, []byte(doc))
		if err != nil {
			if !errors.Is(err, rules.ErrInvalid) {
				t.Fatalf("error outside ErrInvalid: %v", err)
			}
			return
		}
		again, err := rules.Normalize(kind, key, out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not stable: %v\n%s\n%s", err, out, again)
		}
	})
}
