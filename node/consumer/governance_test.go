package consumer_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Governance rules written to the config center of a real registry, as
// Dubbo Admin writes them, moving the calls of a running consumer between
// real providers: condition rules of configVersion v3.1, tag rules with
// match, override items with match, affinity and script rules.

// startParamProvider starts a warm Greeter provider whose URL carries
// params (region, env ...), counting its calls in calls.
func startParamProvider(t *testing.T, zkAddr string, params map[string]string, calls *counter) string {
	t.Helper()
	p, err := provider.Start(testCtx(t), provider.Config{Application: "greeter-app", Registry: "zookeeper://" + zkAddr,
		Protocol: provider.ProtocolConfig{Host: "127.0.0.1", Port: -1}}, provider.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	addr := p.Addr()
	svc := providertest.Greeter(func(*rpc.Invocation) { calls.add(addr) })
	svc.Params = map[string]string{"warmup": "0"}
	maps.Copy(svc.Params, params)
	if err := p.Export(testCtx(t), svc); err != nil {
		t.Fatal(err)
	}
	return addr
}

// spread makes n calls of inv and returns how many each address served;
// failed calls count under their error kind.
func spread(t *testing.T, c *consumer.Consumer, calls *counter, n int, inv *rpc.Invocation, addrs ...string) map[string]int {
	t.Helper()
	calls.reset()
	out := map[string]int{}
	for range n {
		if _, err := c.Invoke(testCtx(t), inv); err != nil {
			out[rpc.ErrorKind(err)]++
		}
	}
	for _, a := range addrs {
		if k := calls.get(a); k > 0 {
			out[a] = k
		}
	}
	return out
}

func helloBob() *rpc.Invocation { return call("sayHello", []string{"java.lang.String"}, "bob") }

func addCall() *rpc.Invocation { return call("add", []string{"int", "int"}, int32(1), int32(2)) }

func taggedCall(inv *rpc.Invocation, tag string) *rpc.Invocation {
	inv.SetAttachment("dubbo.tag", tag)
	return inv
}

// publish writes a config-center document and waits until cond holds.
func publish(t *testing.T, zkAddr, key, doc, what string, cond func() bool) {
	t.Helper()
	if err := ruleAdmin(t, zkAddr).PublishConfig(testCtx(t), key, doc); err != nil {
		t.Fatal(err)
	}
	waitFor(t, what, cond)
}

const conditionKey = "org.example.Greeter:1.0.0:.condition-router"

// A v3.1 condition rule: calls it selects go to weighted destinations in
// proportion to their weights; force decides what a condition that leaves
// no provider does; a condition without to blocks; conditions run in the
// order written whatever their priority says, which is logged as not
// applied.
func TestConditionRuleV31(t *testing.T) {
	zktest.Both(t, func(t *testing.T, zkAddr string) {
		var calls counter
		gray := startParamProvider(t, zkAddr, map[string]string{"region": "hangzhou", "env": "gray"}, &calls)
		normal := startParamProvider(t, zkAddr, map[string]string{"region": "hangzhou", "env": "normal"}, &calls)
		far := startParamProvider(t, zkAddr, map[string]string{"region": "beijing", "env": "normal"}, &calls)
		ref := greeterRef()
		ref.Parameters = map[string]string{"region": "hangzhou"}
		c, logs := loggedConsumer(t, zkAddr, ref)
		waitProviders(t, c, ref, 3)
		all := []string{gray, normal, far}

		rule := `configVersion: v3.1
scope: service
key: org.example.Greeter:1.0.0
force: false
enabled: true
conditions:
  - from:
      match: method=sayHello
    to:
      - match: env=gray
        weight: 20
      - match: env=normal & region=$region
        weight: 80
`
		publish(t, zkAddr, conditionKey, rule, "sayHello kept off beijing", func() bool {
			return spread(t, c, &calls, 20, helloBob(), all...)[far] == 0
		})
		got := spread(t, c, &calls, 1000, helloBob(), all...)
		t.Logf("sayHello with destinations 20:80: %v", got)
		if got[far] != 0 || got[gray]+got[normal] != 1000 || got[gray] < 150 || got[gray] > 250 {
			t.Errorf("sayHello split %v, want about 200 to %s, 800 to %s, none to %s", got, gray, normal, far)
		}
		if got := spread(t, c, &calls, 60, addCall(), all...); len(got) != 3 {
			t.Errorf("add, which the rule does not select, went to %v; want all three", got)
		}

		// A destination nobody matches: ignored without force, no provider
		// with it.
		nowhere := strings.Replace(rule, "env=gray", "env=nowhere", 1)
		nowhere = strings.Replace(nowhere, "env=normal & region=$region", "env=nowhere2", 1)
		publish(t, zkAddr, conditionKey, nowhere, "the rule ignored", func() bool {
			return len(spread(t, c, &calls, 30, helloBob(), all...)) == 3
		})
		forced := strings.Replace(nowhere, "force: false", "force: true", 1)
		publish(t, zkAddr, conditionKey, forced, "force: no provider", func() bool {
			return spread(t, c, &calls, 5, helloBob(), all...)[rpc.KindNoProvider] == 5
		})

		// Without to, the calls from selects are blocked, force or not; the
		// priorities are read, logged as not applied, and change nothing:
		// beijing's condition runs first because it is written first.
		ordered := `configVersion: v3.1
scope: service
key: org.example.Greeter:1.0.0
force: false
conditions:
  - priority: 1
    from: {match: method=add}
  - priority: 1
    from: {match: method=sayHello}
    to: [{match: region=beijing}]
  - priority: 9
    from: {match: method=sayHello}
    to: [{match: env=gray}]
`
		publish(t, zkAddr, conditionKey, ordered, "add blocked", func() bool {
			return spread(t, c, &calls, 5, addCall(), all...)[rpc.KindNoProvider] == 5
		})
		if got := spread(t, c, &calls, 20, helloBob(), all...); got[far] != 20 {
			t.Errorf("sayHello went to %v, want all to %s (the first condition's; the second then leaves none and is ignored)", got, far)
		}
		if !strings.Contains(logs.String(), "conditions[2].priority is not applied") {
			t.Errorf("the unapplied priority was not logged:\n%s", logs)
		}

		if err := ruleAdmin(t, zkAddr).DeleteConfig(testCtx(t), conditionKey); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the rule gone", func() bool { return len(spread(t, c, &calls, 30, addCall(), all...)) == 3 })
	})
}

// A tag rule of configVersion v3.0 groups the provider application's
// providers by parameter match and by address, as Java 3.3 reads it.
func TestTagRuleMatch(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	var calls counter
	gray := startParamProvider(t, zkAddr, map[string]string{"env": "gray"}, &calls)
	normal := startParamProvider(t, zkAddr, map[string]string{"env": "normal"}, &calls)
	plain := startParamProvider(t, zkAddr, nil, &calls)
	ref := greeterRef()
	ref.LoadBalance = "roundrobin"
	c, logs := loggedConsumer(t, zkAddr, ref)
	waitProviders(t, c, ref, 3)
	all := []string{gray, normal, plain}

	rule := fmt.Sprintf(`configVersion: v3.0
force: false
enabled: true
key: greeter-app
tags:
  - name: gray
    match:
      - key: env
        value:
          exact: gray
  - name: gray|team1
    addresses: [%q]
`, normal)
	publish(t, zkAddr, "greeter-app.tag-router", rule, "the gray group by match", func() bool {
		got := spread(t, c, &calls, 10, taggedCall(helloBob(), "gray"), all...)
		return got[gray] == 10
	})
	for _, tt := range []struct {
		tag  string
		want map[string]int
	}{
		{"", map[string]int{plain: 10}},            // no group, no static tag
		{"gray|team1", map[string]int{normal: 10}}, // the deeper level
		{"gray|team2", map[string]int{gray: 10}},   // falls back a level
		{"blue", map[string]int{plain: 10}},        // no group: providers in none
	} {
		inv := helloBob()
		if tt.tag != "" {
			taggedCall(inv, tt.tag)
		}
		if got := spread(t, c, &calls, 10, inv, all...); fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("tag %q went to %v, want %v", tt.tag, got, tt.want)
		}
	}

	// Without configVersion v3.0 the match is not read (as Java): gray is
	// no group, and its calls fall back to the providers in no group and
	// without a static tag; the rule is logged as partly not applied.
	publish(t, zkAddr, "greeter-app.tag-router", strings.Replace(rule, "configVersion: v3.0\n", "", 1), "match not read", func() bool {
		got := spread(t, c, &calls, 10, taggedCall(helloBob(), "gray"), all...)
		return fmt.Sprint(got) == fmt.Sprint(map[string]int{gray: 5, plain: 5})
	})
	if !strings.Contains(logs.String(), "tags[0].match is not applied") {
		t.Errorf("the unread match was not logged:\n%s", logs)
	}
}

// Override items with match apply to the providers and consumers they
// match: by provider parameter, by the consumer's application, by
// provider address.
func TestOverrideMatch(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	var calls counter
	gray := startParamProvider(t, zkAddr, map[string]string{"env": "gray"}, &calls)
	normal := startParamProvider(t, zkAddr, map[string]string{"env": "normal"}, &calls)
	ref := greeterRef()
	ref.LoadBalance = "roundrobin"
	c, _ := loggedConsumer(t, zkAddr, ref)
	waitProviders(t, c, ref, 2)
	both := []string{gray, normal}
	item := func(match string) string {
		return "configVersion: v3.0\nscope: service\nkey: \"org.example.Greeter:1.0.0:\"\nenabled: true\nconfigs:\n" +
			"  - side: consumer\n    match:\n" + match + "    parameters:\n      weight: 300\n"
	}
	for _, tt := range []struct {
		name, match string
		gray        int // of 100 round-robin calls
	}{
		{"provider parameter", "      param:\n        - key: env\n          value: {exact: gray}\n", 75},
		{"the consumer's application and a provider address", fmt.Sprintf("      app: {oneof: [{exact: greeter-consumer}]}\n      providerAddress: {exact: %q}\n", normal), 25},
		{"Admin's spelling of the application", fmt.Sprintf("      application: {oneof: [{prefix: greeter-}]}\n      providerAddress: {exact: %q}\n", gray), 75},
		{"another application", "      app: {oneof: [{exact: billing}]}\n", 50},
	} {
		t.Run(tt.name, func(t *testing.T) {
			publish(t, zkAddr, greeterRuleKey, item(tt.match), "the split", func() bool {
				return spread(t, c, &calls, 100, helloBob(), both...)[gray] == tt.gray
			})
		})
	}
}

// Affinity rules keep calls on providers sharing the consumer's region
// while they are enough of them; a script rule is logged and not applied.
func TestAffinityAndScriptRules(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	var calls counter
	hz1 := startParamProvider(t, zkAddr, map[string]string{"region": "hangzhou"}, &calls)
	hz2 := startParamProvider(t, zkAddr, map[string]string{"region": "hangzhou"}, &calls)
	bj := startParamProvider(t, zkAddr, map[string]string{"region": "beijing"}, &calls)
	ref := greeterRef()
	ref.Parameters = map[string]string{"region": "hangzhou"}
	c, logs := loggedConsumer(t, zkAddr, ref)
	waitProviders(t, c, ref, 3)
	all := []string{hz1, hz2, bj}
	rule := func(scope, key string, ratio int) string {
		return fmt.Sprintf("configVersion: v3.1\nscope: %s\nkey: %s\nenabled: true\naffinityAware:\n  key: region\n  ratio: %d\n", scope, key, ratio)
	}
	for _, tt := range []struct {
		name, key, doc string
		beijing        bool // calls still reach beijing
	}{
		{"service, 2 of 3 share the region", "org.example.Greeter:1.0.0:.affinity-router", rule("service", "org.example.Greeter:1.0.0", 60), false},
		{"service, ratio above the share", "org.example.Greeter:1.0.0:.affinity-router", rule("service", "org.example.Greeter:1.0.0", 70), true},
		{"provider application", "greeter-app.affinity-router", rule("application", "greeter-app", 50), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			publish(t, zkAddr, tt.key, tt.doc, "the rule in force", func() bool {
				return (spread(t, c, &calls, 60, helloBob(), all...)[bj] > 0) == tt.beijing
			})
			if err := ruleAdmin(t, zkAddr).DeleteConfig(testCtx(t), tt.key); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the rule gone", func() bool { return spread(t, c, &calls, 60, helloBob(), all...)[bj] > 0 })
		})
	}

	script := "key: greeter-app\ntype: javascript\nenabled: true\nscript: |\n  (function route(invokers) { return []; })\n"
	publish(t, zkAddr, "greeter-app.script-router", script, "the script rule logged", func() bool {
		return strings.Contains(logs.String(), "not applied by this runtime")
	})
	if got := spread(t, c, &calls, 30, helloBob(), all...); len(got) != 3 {
		t.Errorf("with a script rule calls went to %v, want all three", got)
	}
}
