package router

import (
	"testing"

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
