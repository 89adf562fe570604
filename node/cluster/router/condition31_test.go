package router

import (
	"strings"
	"testing"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/url"
)

// barProviders are the 40 providers of Java's ConditionStateRouterTestV31.
var barProviders = func() []cluster.ProviderInvoker {
	params := []string{"", "", "env=normal", "env=normal", "env=normal",
		"region=beijing", "region=beijing", "region=beijing",
		"region=beijing&env=gray", "region=beijing&env=gray", "region=beijing&env=gray", "region=beijing&env=gray",
		"region=beijing&env=normal",
		"region=hangzhou", "region=hangzhou", "region=hangzhou&env=gray", "region=hangzhou&env=gray",
		"region=hangzhou&env=normal", "region=hangzhou&env=normal", "region=hangzhou&env=normal"}
	var specs []string
	for _, host := range []string{"127.0.0.1", "dubbo.apache.org"} {
		for _, p := range params {
			s := host + "/com.foo.BarService"
			if p != "" {
				s += "?" + p
			}
			specs = append(specs, s)
		}
	}
	return providers(specs...)
}()

// count is how many of barProviders satisfy keep.
func count(keep func(u string) bool) int {
	n := 0
	for _, p := range barProviders {
		if keep(p.URL().String()) {
			n++
		}
	}
	return n
}

var grayBeijing = url.MustParse("consumer://127.0.0.1/com.foo.BarService?env=gray&region=beijing")

func routeV31(t *testing.T, doc string) []cluster.ProviderInvoker {
	t.Helper()
	rule, err := ParseConditionRule([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return mustRouter(t, rule).Route(barProviders, grayBeijing, call("getComment"))
}

const v31Head = "configVersion: v3.1\nscope: service\nkey: com.foo.BarService\nruntime: true\nenabled: true\n"

// The cases of Java's ConditionStateRouterTestV31, on its providers.
func TestConditionV31Java(t *testing.T) {
	tests := []struct {
		name, doc string
		want      int
	}{
		{"multiply condition route", v31Head + `force: false
conditions:
  - from:
      match: env=gray
    to:
      - match: env!=gray
        weight: 100`,
			count(func(u string) bool { return strings.Contains(u, "env") && !strings.Contains(u, "gray") })},
		{"duplicate conditions", v31Head + `force: false
conditions:
  - from:
      match: env=gray
    to:
      - match: env!=gray
        weight: 100
  - from:
      match: env=gray
    to:
      - match: env!=gray
        weight: 100`,
			count(func(u string) bool { return strings.Contains(u, "env") && !strings.Contains(u, "gray") })},
		{"consequent conditions", v31Head + `force: false
conditions:
  - from:
      match: env=gray
    to:
      - match: env!=gray
        weight: 100
  - from:
      match: region=beijing
    to:
      - match: region=beijing
        weight: 100
  - from:
    to:
      - match: host!=127.0.0.1`,
			count(func(u string) bool {
				return strings.Contains(u, "env") && !strings.Contains(u, "gray") && strings.Contains(u, "region=beijing") && !strings.Contains(u, "127.0.0.1")
			})},
		{"unmatched conditions", v31Head + `force: false
conditions:
  - from:
      match: env!=gray
    to:
      - match: env=gray
        weight: 100
  - from:
      match: region!=beijing
    to:
      - match: region=beijing
        weight: 100
  - from:
    to:
      - match: host!=127.0.0.1`,
			count(func(u string) bool { return !strings.Contains(u, "127.0.0.1") })},
		{"match and route to nothing with force", v31Head + `force: true
conditions:
  - from:
      match: env=gray
    to:
      - match: env=ErrTag
        weight: 100
  - from:
      match: region!=beijing
    to:
      - match: region=beijing
        weight: 100
  - from:
    to:
      - match: host!=127.0.0.1`, 0},
		{"route to nothing without force is ignored", v31Head + `force: false
conditions:
  - from:
      match: region=beijing
    to:
      - match: region!=beijing
        weight: 100
  - from:
    to:
      - match: host!=127.0.0.1
  - from:
      match: env=gray
    to:
      - match: env=ErrTag
        weight: 100`,
			count(func(u string) bool {
				return strings.Contains(u, "region") && !strings.Contains(u, "beijing") && !strings.Contains(u, "127.0.0.1")
			})},
		{"traffic disabled whatever force says", v31Head + `force: false
conditions:
  - from:
      match: host=127.0.0.1
  - from:
      match: env=gray
    to:
      - match: env!=gray
        weight: 100
  - to:
      - match: region!=beijing`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := len(routeV31(t, tt.doc)); got != tt.want {
				t.Errorf("routed to %d providers, want %d", got, tt.want)
			}
		})
	}
}

// Java's testMultiplyDestination: two conditions with two weighted
// destinations each give four possible sets, each drawn.
func TestConditionV31MultiplyDestination(t *testing.T) {
	doc := v31Head + `force: false
conditions:
  - from:
      match: env=gray
    to:
      - match: env!=gray
        weight: 100
      - match: env=gray
        weight: 900
  - from:
      match: region=beijing
    to:
      - match: region!=beijing
        weight: 100
      - match: region=beijing
        weight: 200`
	sizes := map[int]int{}
	for range 1000 {
		sizes[len(routeV31(t, doc))]++
	}
	if len(sizes) != 4 || sizes[8] == 0 || sizes[6] == 0 || sizes[4] == 0 || sizes[2] == 0 {
		t.Errorf("result sizes %v, want 8, 6, 4 and 2 each drawn", sizes)
	}
}

// Destinations are drawn by weight, as Java's DestinationSet: with a fixed
// draw the boundaries fall where Java's do, and over many calls the shares
// follow the weights.
func TestConditionV31Weights(t *testing.T) {
	rule, err := ParseConditionRule([]byte(v31Head + `conditions:
  - from: {match: ''}
    to:
      - {match: env=gray, weight: 100}
      - {match: env=normal, weight: 300}
      - {match: env=nowhere, weight: 600}
      - {match: region=beijing}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := mustRouter(t, rule)
	// env=nowhere matches no provider and takes no share; the last
	// destination has the default weight 100: shares 100:300:100 of 500.
	for _, tt := range []struct{ draw, want int }{{0, 12}, {100, 12}, {101, 14}, {400, 14}, {401, 16}, {499, 16}} {
		r.rnd = func(n int) int {
			if n != 500 {
				t.Fatalf("drawn in [0,%d), want [0,500)", n)
			}
			return tt.draw
		}
		if got := len(r.Route(barProviders, grayBeijing, call("x"))); got != tt.want {
			t.Errorf("draw %d: %d providers, want %d", tt.draw, got, tt.want)
		}
	}
	r.rnd = randInt
	gray := 0
	const n = 10000
	for range n {
		ps := r.Route(barProviders, grayBeijing, call("x"))
		if ps[0].URL().Param("env") == "gray" {
			gray++
		}
	}
	if share := float64(gray) / n; share < 0.18 || share > 0.22 {
		t.Errorf("env=gray drawn %.3f of calls, want about 0.20", share)
	}
}

// Fields the v3.1 design added but Dubbo 3.3 does not apply are kept and
// reported; the conditions still run in the order written.
func TestConditionV31Warnings(t *testing.T) {
	rule, err := ParseConditionRule([]byte(v31Head + `conditions:
  - priority: 10
    from: {match: env=gray}
    trafficDisable: false
    to:
      - {match: region=hangzhou, weight: 100}
    force: true
    ratio: 20
  - priority: 20
    from: {match: env=gray}
    to:
      - {match: region=beijing}
`))
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(rule.Warnings(), "\n")
	for _, k := range []string{"conditions[0].force", "conditions[0].priority", "conditions[0].ratio", "conditions[0].trafficDisable", "conditions[1].priority"} {
		if !strings.Contains(w, k+" is not applied") {
			t.Errorf("warnings do not mention %s:\n%s", k, w)
		}
	}
	// In order: hangzhou first, then beijing leaves nothing and is ignored.
	for _, p := range mustRouter(t, rule).Route(barProviders, grayBeijing, call("x")) {
		if p.URL().Param("region") != "hangzhou" {
			t.Fatalf("routed to %s, want hangzhou only", p.URL())
		}
	}
}

// A rule written by new Admin (protojson: zero values left out) or by hand
// reads back as written, unknown fields included.
func TestConditionRuleRoundTrip(t *testing.T) {
	for _, in := range []string{
		v31Head + "force: false\nconditions:\n  - from:\n      match: method=sayHello\n    to:\n      - match: region=hangzhou\n        weight: 80\n      - match: region=beijing\n        weight: 20\n        note: canary\n    priority: 3\n",
		"configVersion: v3.0\nscope: application\nkey: shop\nenabled: true\nforce: true\nruntime: false\npriority: 0\nconditions:\n  - method=sayHello => region=hangzhou\n  - => host != 10.0.0.1\nowner: ops\n",
	} {
		rule, err := ParseConditionRule([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		sameYAML(t, in, rule, "priority") // 0 is written as absent
	}
}
