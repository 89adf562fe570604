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

const svcKey = "org.example.Greeter:1.0.0:"

// newAdminOverride has an item of new Admin's (a match, its own field)
// and one no form owns (timeout with loadbalance): every form keeps them.
const newAdminOverride = `configVersion: v3.0
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
  - side: consumer
    addresses: [0.0.0.0]
    parameters: {timeout: 100, loadbalance: roundrobin}
`

func intp(n int) *int { return &n }

// Each override form writes its items as Admin (or Dubbo's documentation)
// writes them, reads back what it wrote, keeps every other item, and
// leaves nothing when its rows are gone.
func TestOverrideForms(t *testing.T) {
	type form struct {
		name  string
		apply func(doc []byte) ([]byte, bool, error)
		read  func(doc []byte) (any, error)
		rows  any    // what read gives of apply's result
		item  string // the YAML of the first item written, as the document holds it
	}
	forms := []form{
		{"weights", func(doc []byte) ([]byte, bool, error) {
			return rules.ApplyWeights(doc, svcKey, []rules.Weight{{Weight: 10, Addresses: []string{"10.0.0.1:20880"}}, {Weight: 90, Addresses: nil}})
		}, func(doc []byte) (any, error) { return rules.ReadWeights(doc) },
			[]rules.Weight{{Weight: 10, Addresses: []string{"10.0.0.1:20880"}}, {Weight: 90}},
			"addresses:\n  - 10.0.0.1:20880\nenabled: true\nparameters:\n  weight: 10\nside: provider\ntype: weight\n"},
		{"balancing", func(doc []byte) ([]byte, bool, error) {
			return rules.ApplyBalancing(doc, svcKey, []rules.Balancing{{Method: "", Strategy: "roundrobin"}, {Method: "sayHello", Strategy: "leastactive"}})
		}, func(doc []byte) (any, error) { return rules.ReadBalancing(doc) },
			[]rules.Balancing{{Method: "", Strategy: "roundrobin"}, {Method: "sayHello", Strategy: "leastactive"}},
			"enabled: true\nparameters:\n  loadbalance: roundrobin\nside: consumer\ntype: balancing\n"},
		{"timeouts", func(doc []byte) ([]byte, bool, error) {
			return rules.ApplyTimeouts(doc, svcKey, []rules.Timeout{{Method: "sayHello", Timeout: intp(3000), Retries: intp(0)}, {Timeout: intp(500)}})
		}, func(doc []byte) (any, error) { return rules.ReadTimeouts(doc) },
			[]rules.Timeout{{Method: "sayHello", Timeout: intp(3000), Retries: intp(0)}, {Timeout: intp(500)}},
			"addresses:\n  - 0.0.0.0\nenabled: true\nparameters:\n  sayHello.retries: 0\n  sayHello.timeout: 3000\nside: consumer\n"},
		{"mocks", func(doc []byte) ([]byte, bool, error) {
			return rules.ApplyMocks(doc, svcKey, []rules.Mock{{Method: "sayHello", Value: `"fallback"`}, {Force: true, Throw: true, Value: "java.lang.IllegalStateException"}})
		}, func(doc []byte) (any, error) { return rules.ReadMocks(doc) },
			[]rules.Mock{{Method: "sayHello", Value: `"fallback"`}, {Force: true, Throw: true, Value: "java.lang.IllegalStateException"}},
			"addresses:\n  - 0.0.0.0\nenabled: true\nparameters:\n  sayHello.mock: fail:return \"fallback\"\nside: consumer\n"},
	}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			for _, base := range []string{"", newAdminOverride} {
				out, empty, err := f.apply([]byte(base))
				if err != nil || empty {
					t.Fatalf("on %q: %v %v", base, empty, err)
				}
				d, err := configurator.ParseDocument(out)
				if err != nil {
					t.Fatalf("the runtime refuses what the form wrote: %v\n%s", err, out)
				}
				got, err := f.read(out)
				if err != nil || !reflect.DeepEqual(got, f.rows) {
					t.Errorf("read back %+v, want %+v (%v)\n%s", got, f.rows, err, out)
				}
				if base == "" {
					// As Admin writes it: its model's fields, in order.
					lines := strings.Split(strings.TrimSuffix(f.item, "\n"), "\n")
					want := "configs:\n  - " + strings.Join(lines, "\n    ") + "\n"
					if !strings.Contains(string(out), want) {
						t.Errorf("written as\n%s\nwant\n%s", out, want)
					}
				} else if d.Configs[0].Extra["__generate_by_cp"] != true || d.Configs[0].Match == nil || d.Configs[1].Parameters["loadbalance"] != "roundrobin" {
					t.Errorf("the other items were not kept:\n%s", out)
				}
				again, _, err := f.apply(out)
				if err != nil || string(again) != string(out) {
					t.Errorf("applying the same rows again changed the document: %v\n%s\n%s", err, out, again)
				}
			}
		})
	}
	// No rows: the form's items go, the others stay; none left: empty.
	out, empty, err := rules.ApplyWeights([]byte(newAdminOverride), svcKey, nil)
	if err != nil || empty || strings.Contains(string(out), "weight") || !strings.Contains(string(out), "__generate_by_cp") {
		t.Fatalf("%v %v\n%s", empty, err, out)
	}
	only, _, _ := rules.ApplyMocks(nil, svcKey, []rules.Mock{{Value: "empty"}})
	if _, empty, err := rules.ApplyMocks(only, svcKey, nil); !empty || err != nil {
		t.Fatalf("the last mock removed: empty %v, %v", empty, err)
	}
	// What a form does not own stays out of it: a mock item that also
	// sets timeout, mock=true (Java's class), an item for some consumers.
	notOwned := `configs:
  - side: consumer
    parameters: {sayHello.mock: "force:return x", timeout: 5}
  - side: consumer
    parameters: {mock: "true"}
  - side: consumer
    addresses: [10.0.0.9]
    parameters: {timeout: 7}
`
	if ms, _ := rules.ReadMocks([]byte(notOwned)); len(ms) != 0 {
		t.Errorf("mocks read from items not the form's: %+v", ms)
	}
	if ts, _ := rules.ReadTimeouts([]byte(notOwned)); len(ts) != 0 {
		t.Errorf("timeouts read from items not the form's: %+v", ts)
	}
	for _, c := range []struct {
		name  string
		apply func() error
		says  string
	}{
		{"weight too big", func() error {
			_, _, err := rules.ApplyWeights(nil, svcKey, []rules.Weight{{Weight: 20000}})
			return err
		}, "0 to"},
		{"bad address", func() error {
			_, _, err := rules.ApplyWeights(nil, svcKey, []rules.Weight{{Weight: 1, Addresses: []string{"a b"}}})
			return err
		}, "address"},
		{"unknown balancer", func() error {
			_, _, err := rules.ApplyBalancing(nil, svcKey, []rules.Balancing{{Strategy: "fastest"}})
			return err
		}, "roundrobin"},
		{"bad method", func() error {
			_, _, err := rules.ApplyTimeouts(nil, svcKey, []rules.Timeout{{Method: "say hello", Timeout: intp(1)}})
			return err
		}, "Java method"},
		{"timeout 0", func() error {
			_, _, err := rules.ApplyTimeouts(nil, svcKey, []rules.Timeout{{Timeout: intp(0)}})
			return err
		}, "at least 1"},
		{"nothing set", func() error {
			_, _, err := rules.ApplyTimeouts(nil, svcKey, []rules.Timeout{{Method: "a"}})
			return err
		}, "neither"},
		{"bad key", func() error { _, _, err := rules.ApplyMocks(nil, "a/b", []rules.Mock{{}}); return err }, "'/'"},
	} {
		if err := c.apply(); !errors.Is(err, rules.ErrInvalid) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want ErrInvalid saying %q", c.name, err, c.says)
		}
	}
}

func TestMockSetting(t *testing.T) {
	for _, c := range []struct {
		m    rules.Mock
		want string
	}{
		{rules.Mock{Force: true, Value: "hi"}, "force:return hi"},
		{rules.Mock{Value: ""}, "fail:return null"},
		{rules.Mock{Throw: true}, "fail:throw"},
		{rules.Mock{Force: true, Throw: true, Value: " com.example.Oops "}, "force:throw com.example.Oops"},
	} {
		if got := c.m.Setting(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.m, got, c.want)
		}
	}
}

// The access form writes Admin's encoding after the rule's other
// conditions, reads Admin's, and in a v3.1 rule writes conditions without
// destinations.
func TestAccessForm(t *testing.T) {
	admin := "conditions:\n- host != 10.0.0.1,10.0.0.2 =>\n- method = find => region = hz\n- host = 10.0.0.9 =>\nenabled: true\nforce: false\nkey: org.example.Greeter\npriority: 0\nruntime: false\nscope: service\n"
	a, err := rules.ReadAccess([]byte(admin))
	if err != nil || !reflect.DeepEqual(a, rules.Access{Whitelist: []string{"10.0.0.1", "10.0.0.2"}, Blacklist: []string{"10.0.0.9"}}) {
		t.Fatalf("Admin's lists read as %+v, %v", a, err)
	}
	out, empty, err := rules.ApplyAccess([]byte(admin), svcKey, rules.Access{Blacklist: []string{"10.0.0.9", "10.0.0.8"}, AppWhitelist: []string{"shop"}})
	if err != nil || empty {
		t.Fatal(err)
	}
	r, err := router.ParseConditionRule(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var got []string
	for _, c := range r.Conditions {
		got = append(got, c.Rule)
	}
	if want := []string{"method = find => region = hz", "host = 10.0.0.9,10.0.0.8 =>", "application != shop =>"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("conditions %q, want %q", got, want)
	}
	if r.Runtime || r.Force {
		t.Errorf("Admin's flags changed:\n%s", out)
	}

	v31 := "configVersion: v3.1\nscope: application\nkey: shop\nconditions:\n  - from: {match: method=find}\n    to: [{match: region=hz}]\n"
	out, _, err = rules.ApplyAccess([]byte(v31), "shop", rules.Access{Blacklist: []string{"10.0.0.9"}})
	if err != nil {
		t.Fatal(err)
	}
	r, err = router.ParseConditionRule(out)
	if err != nil || len(r.Conditions) != 2 || r.Conditions[1].From.Match != "host = 10.0.0.9" || r.Conditions[1].To != nil {
		t.Fatalf("v3.1: %v\n%s", err, out)
	}
	if a, _ := rules.ReadAccess(out); !reflect.DeepEqual(a, rules.Access{Blacklist: []string{"10.0.0.9"}}) {
		t.Fatalf("v3.1 read back as %+v", a)
	}
	if _, empty, err := rules.ApplyAccess([]byte("conditions: ['host = 1.1.1.1 =>']\n"), svcKey, rules.Access{}); !empty || err != nil {
		t.Fatalf("lists removed from a rule of nothing else: empty %v, %v", empty, err)
	}
	if _, _, err := rules.ApplyAccess(nil, svcKey, rules.Access{Blacklist: []string{"a,b"}}); !errors.Is(err, rules.ErrInvalid) {
		t.Fatalf("an entry with a comma: %v", err)
	}
}

// The builder reads and writes whole condition rules in both versions,
// keeping what it does not show at its place.
func TestConditionBuilder(t *testing.T) {
	v30 := rules.Conditions{Enabled: true, Runtime: true, Force: true, Conditions: []rules.Condition{
		{When: "method = sayHello", To: []rules.Destination{{Match: "port = 20880"}}},
		{When: "host = 10.0.0.1"}, // blocks
		{To: []rules.Destination{{Match: "region = hz"}}},
	}}
	out, _, err := rules.ApplyConditions(nil, svcKey, v30)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "- method = sayHello => port = 20880\n  - host = 10.0.0.1 =>\n  - => region = hz\n") {
		t.Fatalf("v3.0 written as\n%s", out)
	}
	if got, err := rules.ReadConditions(out); err != nil || !reflect.DeepEqual(got, v30) {
		t.Fatalf("read back %+v, %v", got, err)
	}

	withDesign := `configVersion: v3.1
scope: service
key: org.example.Greeter
owner: ops
conditions:
  - priority: 10
    from: {match: method=sayHello, extra: 1}
    to:
      - {match: port=1, weight: 20, note: a}
      - {match: port=2, weight: 80}
`
	cs, err := rules.ReadConditions([]byte(withDesign))
	if err != nil || !cs.V31 || len(cs.Conditions) != 1 || len(cs.Conditions[0].To) != 2 || cs.Conditions[0].To[1].Weight != 80 {
		t.Fatalf("%+v %v", cs, err)
	}
	cs.Conditions[0].To[0].Weight = 50
	cs.Conditions = append(cs.Conditions, rules.Condition{When: "application = shop"})
	out, _, err = rules.ApplyConditions([]byte(withDesign), svcKey, cs)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Owner      string
		Conditions []map[string]any
	}
	if err := yaml.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	c0 := back.Conditions[0]
	if back.Owner != "ops" || c0["priority"] != 10 || c0["from"].(map[string]any)["extra"] != 1 ||
		c0["to"].([]any)[0].(map[string]any)["note"] != "a" || c0["to"].([]any)[0].(map[string]any)["weight"] != 50 ||
		len(back.Conditions) != 2 || back.Conditions[1]["to"] != nil {
		t.Fatalf("v3.1 written as\n%s", out)
	}

	// v3.0 to v3.1 and back.
	cs = v30
	cs.V31 = true
	out, _, err = rules.ApplyConditions(nil, svcKey, cs)
	if err != nil || !strings.Contains(string(out), "configVersion: v3.1") {
		t.Fatalf("%v\n%s", err, out)
	}
	back30, _, err := rules.ApplyConditions(out, svcKey, v30)
	if err != nil || strings.Contains(string(back30), "v3.1") || !strings.Contains(string(back30), "- => region = hz") {
		t.Fatalf("%v\n%s", err, back30)
	}
	two := rules.Conditions{Conditions: []rules.Condition{{To: []rules.Destination{{Match: "a = 1"}, {Match: "a = 2"}}}}}
	if _, _, err := rules.ApplyConditions(nil, svcKey, two); !errors.Is(err, rules.ErrInvalid) || !strings.Contains(err.Error(), "v3.1") {
		t.Fatalf("two destinations in v3.0: %v", err)
	}
	if _, _, err := rules.ApplyConditions(nil, svcKey, rules.Conditions{Conditions: []rules.Condition{{When: "method = = x"}}}); !errors.Is(err, rules.ErrInvalid) {
		t.Fatalf("a condition the runtime refuses: %v", err)
	}
}

func TestMatchClauses(t *testing.T) {
	for _, c := range []struct {
		in      string
		clauses []rules.Clause
		out     string
	}{
		{"method=sayHello", []rules.Clause{{"method", "=", "sayHello"}}, "method = sayHello"},
		{" host != 10.0.0.1 , 10.0.0.2 & port = 20880~20890", []rules.Clause{{"host", "!=", "10.0.0.1 , 10.0.0.2"}, {"port", "=", "20880~20890"}},
			"host != 10.0.0.1,10.0.0.2 & port = 20880~20890"},
		{"arguments[0].id = $host", []rules.Clause{{"arguments[0].id", "=", "$host"}}, "arguments[0].id = $host"},
		{"", nil, ""},
	} {
		got := rules.SplitMatch(c.in)
		if !reflect.DeepEqual(got, c.clauses) {
			t.Errorf("SplitMatch(%q) = %+v, want %+v", c.in, got, c.clauses)
		}
		if s := rules.JoinMatch(append(got, rules.Clause{})); s != c.out {
			t.Errorf("JoinMatch of %q = %q, want %q", c.in, s, c.out)
		}
	}
}

// The tag form edits tags by address and keeps tags by match and each
// tag's own fields.
func TestTagForm(t *testing.T) {
	doc := `configVersion: v3.0
key: greeter-app
enabled: true
force: false
runtime: true
tags:
  - name: blue
    match:
      - key: env
        value: {exact: blue}
  - name: gray
    addresses: ["10.0.0.1:20880"]
    __generate_by_cp: true
`
	ts, err := rules.ReadTags([]byte(doc))
	if err != nil || !reflect.DeepEqual(ts, rules.Tags{Enabled: true, Tags: []rules.TagGroup{{Name: "gray", Addresses: []string{"10.0.0.1:20880"}}}}) {
		t.Fatalf("%+v %v", ts, err)
	}
	ts.Force = true
	ts.Tags[0].Addresses = append(ts.Tags[0].Addresses, "10.0.0.2:20880")
	ts.Tags = append(ts.Tags, rules.TagGroup{Name: "canary", Addresses: []string{"10.0.0.3:20880"}})
	out, _, err := rules.ApplyTags([]byte(doc), "greeter-app", ts)
	if err != nil {
		t.Fatal(err)
	}
	r, err := router.ParseTagRule(out)
	if err != nil || !r.Force || len(r.Tags) != 3 || r.Tags[0].Name != "blue" || r.Tags[0].Match == nil ||
		r.Tags[1].Extra["__generate_by_cp"] != true || len(r.Tags[1].Addresses) != 2 || r.Tags[2].Name != "canary" {
		t.Fatalf("%v\n%s", err, out)
	}
	if got, _ := rules.ReadTags(out); !reflect.DeepEqual(got, ts) {
		t.Fatalf("read back %+v, want %+v", got, ts)
	}
	for _, c := range []struct {
		ts   rules.Tags
		says string
	}{
		{rules.Tags{Tags: []rules.TagGroup{{Name: "a"}}}, "no address"},
		{rules.Tags{Tags: []rules.TagGroup{{Addresses: []string{"1.1.1.1:1"}}}}, "no name"},
		{rules.Tags{Tags: []rules.TagGroup{{Name: "blue", Addresses: []string{"1.1.1.1:1"}}}}, "twice"},
		{rules.Tags{Tags: []rules.TagGroup{{Name: "a", Addresses: []string{"1.1.1.1"}}}}, "host:port"},
	} {
		if _, _, err := rules.ApplyTags([]byte(doc), "greeter-app", c.ts); !errors.Is(err, rules.ErrInvalid) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: %v, want %q", c.ts, err, c.says)
		}
	}
	if _, empty, _ := rules.ApplyTags([]byte("tags:\n  - name: a\n    addresses: [\"1.1.1.1:1\"]\n"), "greeter-app", rules.Tags{}); !empty {
		t.Fatal("the last tag removed left a rule")
	}
}
