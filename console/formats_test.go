package console_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// newAdminRules are rules as Dubbo Admin 0.6 and its Go successor write
// them (v3.1 conditions, match, affinity, their own fields) or a hand
// does (a script rule, a field Admin 0.5 does not know), by config key.
var newAdminRules = map[string]string{
	"org.example.Greeter:1.0.0:.condition-router": `configVersion: v3.1
scope: service
key: org.example.Greeter
force: false
runtime: true
enabled: true
conditions:
  - priority: 10
    from:
      match: method=sayHello
    to:
      - match: port=1
        weight: 20
      - match: port!=1
        weight: 80
`,
	"greeter-app.tag-router": `configVersion: v3.0
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
`,
	"org.example.Greeter:1.0.0:.configurators": `configVersion: v3.0
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
    parameters:
      sayHello.mock: force:return hi
`,
	"org.example.Greeter:1.0.0:.affinity-router": "configVersion: v3.1\nscope: service\nkey: org.example.Greeter\nenabled: true\nruntime: true\naffinityAware:\n  key: region\n  ratio: 20\n",
	"greeter-app.script-router":                  "key: greeter-app\nenabled: true\ntype: javascript\nscript: |\n  (function route(invokers) { return invokers; })\n",
	"shop.condition-router":                      "scope: application\nkey: shop\nenabled: true\nconditions: ['=> host != 10.0.0.1']\nowner: ops\n",
}

// Rules written by new Admin or by hand are listed (and filtered by kind,
// service and application), opened, saved back, disabled and enabled
// through the console without losing a field, with what the runtime does
// not apply of them shown and the path each is stored at.
func TestRulesOfNewAdminLoseNothing(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	zkr := rulesAt(t, e)
	ctx := testCtx(t)
	for k, v := range newAdminRules {
		if err := zkr.PublishConfig(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the console's copy", func() bool { return len(e.console.Catalog().Rules()) == len(newAdminRules) })

	type listed struct {
		Kind, Key, Path string
		Warnings        []string
	}
	for _, c := range []struct {
		query string
		want  []string // kind key
	}{
		{"", []string{"tag greeter-app", "script greeter-app", "condition org.example.Greeter:1.0.0:", "override org.example.Greeter:1.0.0:",
			"affinity org.example.Greeter:1.0.0:", "condition shop"}},
		{"?kind=affinity", []string{"affinity org.example.Greeter:1.0.0:"}},
		{"?service=greeter", []string{"condition org.example.Greeter:1.0.0:", "override org.example.Greeter:1.0.0:", "affinity org.example.Greeter:1.0.0:"}},
		{"?application=greeter-app", []string{"tag greeter-app", "script greeter-app"}},
		{"?kind=condition&application=SHOP", []string{"condition shop"}},
		{"?kind=tag&application=shop", nil},
	} {
		var got []listed
		getJSON(t, e, "/api/v1/rules"+c.query, &got)
		var keys []string
		for _, r := range got {
			keys = append(keys, r.Kind+" "+r.Key)
		}
		if !sameSet(keys, c.want) {
			t.Errorf("/api/v1/rules%s lists %v, want %v", c.query, keys, c.want)
		}
		for _, r := range got {
			if want := "/dubbo/config/dubbo/" + r.Key + map[string]string{"condition": ".condition-router", "tag": ".tag-router",
				"override": ".configurators", "affinity": ".affinity-router", "script": ".script-router"}[r.Kind]; r.Path != want {
				t.Errorf("%s %s: path %s, want %s", r.Kind, r.Key, r.Path, want)
			}
			w := strings.Join(r.Warnings, "\n")
			switch {
			case r.Kind == "script" && !strings.Contains(w, "not applied by this runtime"),
				r.Key == "shop" && !strings.Contains(w, "owner"),
				r.Kind == "condition" && r.Key != "shop" && !strings.Contains(w, "conditions[0].priority is not applied"),
				r.Kind == "override" && w != "":
				t.Errorf("%s %s: warnings %q", r.Kind, r.Key, r.Warnings)
			}
		}
	}

	for configKey, stored := range newAdminRules {
		kind, key := kindAndKey(configKey)
		api := e.ConsoleURL + "/api/v1/rules/" + kind + "/" + key
		st, body, _ := do(t, "GET", api, "", "")
		if st != 200 || body != stored {
			t.Fatalf("GET %s: %d\n%s", api, st, body)
		}
		st, out, _ := do(t, "PUT", api, "application/yaml", body)
		if st != 200 || !keepsAll(t, out, stored) {
			t.Errorf("%s saved back as\n%s\nwant the data of\n%s", configKey, out, stored)
		}
		st, out, _ = do(t, "PUT", api+"/enabled", "application/json", `{"enabled": false}`)
		if st != 200 || !keepsAll(t, out, stored, "enabled") || !strings.Contains(out, "enabled: false") {
			t.Errorf("%s disabled: %d\n%s", configKey, st, out)
		}
		st, out, _ = do(t, "PUT", api+"/enabled", "application/json", `{"enabled": true}`)
		if st != 200 || !keepsAll(t, out, stored) {
			t.Errorf("%s enabled again: %d\n%s", configKey, st, out)
		}
		// The rule's page shows it, where it is stored and what is not
		// applied.
		st, page, _ := do(t, "GET", e.ConsoleURL+"/rules/"+kind+"/"+key, "", "")
		if st != 200 || !strings.Contains(page, `<code id="rule-path">/dubbo/config/dubbo/`+configKey+`</code>`) {
			t.Errorf("rule page of %s: %d\n%s", configKey, st, page)
		}
		if kind == "script" && !strings.Contains(page, `id="rule-warnings"`) {
			t.Errorf("the script rule's page does not say it is not applied:\n%s", page)
		}
	}
}

// kindAndKey splits a config key as the console names rules.
func kindAndKey(configKey string) (kind, key string) {
	for suffix, k := range map[string]string{".condition-router": "condition", ".tag-router": "tag", ".configurators": "override",
		".affinity-router": "affinity", ".script-router": "script"} {
		if strings.HasSuffix(configKey, suffix) {
			return k, strings.TrimSuffix(configKey, suffix)
		}
	}
	return "", ""
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		seen[s]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

// keepsAll reports whether document out holds every top-level field of
// in with the same value, but for the fields named (Dubbo's defaults
// written out, such as force: false, are not a loss).
func keepsAll(t *testing.T, out, in string, except ...string) bool {
	t.Helper()
	var x, y map[string]any
	if err := yaml.Unmarshal([]byte(out), &x); err != nil {
		t.Fatalf("%v in\n%s", err, out)
	}
	if err := yaml.Unmarshal([]byte(in), &y); err != nil {
		t.Fatalf("%v in\n%s", err, in)
	}
	for k, v := range y {
		if !slices.Contains(except, k) && !reflect.DeepEqual(x[k], v) {
			t.Logf("%s: %v became %v", k, v, x[k])
			return false
		}
	}
	return true
}
