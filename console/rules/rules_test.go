package rules_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

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

// Rules written by new Admin (v3.1 conditions, match, affinity, fields of
// its own) or by hand are accepted, checked by the runtime's parsers, and
// written back with nothing lost; Normalize is then stable.
func TestNormalizeNewFormatsLoseNothing(t *testing.T) {
	tests := []struct {
		name, kind, key, doc string
		warns                string // a warning Warnings gives; "" none
	}{
		{"v3.1 condition", rules.KindCondition, "org.example.Greeter:1.0.0:", `configVersion: v3.1
scope: service
key: org.example.Greeter
force: false
runtime: true
enabled: true
conditions:
  - from:
      match: method=sayHello
    to:
      - match: env=gray
        weight: 20
      - match: env=normal
        weight: 80
`, ""},
		{"v3.1 condition with the design's fields", rules.KindCondition, "shop", `configVersion: v3.1
scope: application
key: shop
conditions:
  - priority: 10
    from: {match: region=hz}
    trafficDisable: false
    ratio: 20
`, "conditions[0].priority is not applied"},
		{"v3.0 condition with a field Admin 0.5 does not know", rules.KindCondition, "shop", "scope: application\nconditions: ['=> host != 1.2.3.4']\nowner: ops\n", "owner is not a field Dubbo reads"},
		{"tag with match", rules.KindTag, "greeter-app", `configVersion: v3.0
key: greeter-app
enabled: true
force: false
runtime: true
tags:
  - name: gray
    match:
      - key: env
        value:
          exact: gray
    __generate_by_cp: true
`, ""},
		{"override with match", rules.KindOverride, "org.example.Greeter:1.0.0:", `configVersion: v3.0
scope: service
key: org.example.Greeter
enabled: true
configs:
  - side: consumer
    enabled: true
    match:
      application:
        oneof:
          - exact: shop
      param:
        - key: env
          value: {prefix: gr}
    parameters:
      sayHello.mock: force:return hi
`, ""},
		{"affinity", rules.KindAffinity, "org.example.Greeter:1.0.0:", "configVersion: v3.1\nscope: service\nkey: org.example.Greeter\nenabled: true\nruntime: true\naffinityAware:\n  key: region\n  ratio: 20\n", ""},
		{"affinity by provider application, Admin's spelling", rules.KindAffinity, "greeter-app", "configVersion: v3.1\nscope: application\nkey: greeter-app\nenabled: true\nruntime: true\naffinity:\n  key: zone\n", ""},
		{"script", rules.KindScript, "greeter-app", "key: greeter-app\nenabled: true\ntype: javascript\nscript: |\n  (function route(invokers) { return invokers; })\n", "not applied by this runtime"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := rules.Normalize(tt.kind, tt.key, []byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			var in, back map[string]any
			if err := yaml.Unmarshal([]byte(tt.doc), &in); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(out, &back); err != nil {
				t.Fatal(err)
			}
			for k, v := range in {
				if !reflect.DeepEqual(back[k], v) {
					t.Errorf("%s: %v written back as %v:\n%s", k, v, back[k], out)
				}
			}
			again, err := rules.Normalize(tt.kind, tt.key, out)
			if err != nil || string(again) != string(out) {
				t.Errorf("not stable: %v\n%s\n%s", err, out, again)
			}
			w := strings.Join(rules.Warnings(tt.kind, out), "\n")
			if (tt.warns == "") != (w == "") || !strings.Contains(w, tt.warns) {
				t.Errorf("warnings %q, want %q", w, tt.warns)
			}
		})
	}
	// Still refused: what the runtime does not parse.
	for _, c := range []struct{ kind, key, doc, says string }{
		{rules.KindCondition, "shop", "configVersion: v3.1\nconditions:\n  - => host = a\n", "v3.0"},
		{rules.KindTag, "p", "configVersion: v3.0\ntags:\n  - name: a\n    match: [{value: {exact: x}}]\n", "key"},
		{rules.KindOverride, "shop", "configVersion: v3.0\nconfigs:\n  - match: {param: [{key: a, value: {regex: '('}}]}\n    parameters: {a: 1}\n", "regex"},
		{rules.KindAffinity, "shop", "affinityAware: {key: region, ratio: 120}\n", "ratio"},
		{rules.KindScript, "org.example.Greeter:1.0.0:", "type: javascript\n", "provider application"},
	} {
		if _, err := rules.Normalize(c.kind, c.key, []byte(c.doc)); !errors.Is(err, rules.ErrInvalid) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s %q: %v, want ErrInvalid saying %q", c.kind, c.doc, err, c.says)
		}
	}
}

// The weight and disable buttons edit a rule new Admin wrote without
// losing its other items, their match and its own fields.
func TestSetWeightKeepsTheRest(t *testing.T) {
	key := "org.example.Greeter:1.0.0:"
	doc := []byte(`configVersion: v3.0
scope: service
key: org.example.Greeter
enabled: true
configs:
  - side: consumer
    enabled: true
    match:
      param:
        - key: env
          value: {exact: gray}
    parameters: {timeout: 3000}
    __generate_by_cp: true
`)
	out, err := rules.SetWeight(doc, key, "10.0.0.1:20880", 50)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err = rules.SetDisabled(out, key, "10.0.0.2:20880", true)
	if err != nil {
		t.Fatal(err)
	}
	d, err := configurator.ParseDocument(out)
	if err != nil || len(d.Configs) != 3 || d.Configs[0].Match == nil || d.Configs[0].Extra["__generate_by_cp"] != true ||
		d.Configs[1].Parameters["weight"] != 50 || !rules.IsDisableItem(d.Configs[2]) {
		t.Fatalf("%v\n%s", err, out)
	}
}
