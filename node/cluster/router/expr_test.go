package router

import (
	"testing"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// The matching cases of Java's ConditionStateRouterTest (forced rules, so
// that a condition that selects the call shows what it left, even none).
func TestConditionMatchersJava(t *testing.T) {
	ps := providers("10.20.3.3:20880/com.foo.BarService?region=hangzhou&then_key=a",
		"10.20.3.4:20880/com.foo.BarService", "10.20.3.5:20880/com.foo.BarService")
	consumer := url.MustParse("consumer://10.20.3.4/com.foo.BarService?when_key=a&application=consumer_app")
	with := func(args []any, att map[string]any) *rpc.Invocation {
		return &rpc.Invocation{Service: "com.foo.BarService", Method: "getFoo", Args: args, Attachments: att}
	}
	tests := []struct {
		name, rule string
		inv        *rpc.Invocation
		want       string
	}{
		{"when: one of several hosts", "host = 2.2.2.2,10.20.3.4,3.3.3.3 => host = 10.20.3.3", with(nil, nil), "3"},
		{"when: != wins over =", "host = 2.2.2.2,10.20.3.4 & host != 10.20.3.4 => host = 10.20.3.3", with(nil, nil), "3,4,5"},
		{"when: != glob", "host != 4.4.4.* & host = 10.20.3.4 => host = 10.20.3.3", with(nil, nil), "3"},
		{"then: glob and !=", "=> host = 10.20.3.* & host != 10.20.3.3", with(nil, nil), "4,5"},
		{"then: = and != of one value", "=> host = 10.20.3.3 & host != 10.20.3.3", with(nil, nil), ""},
		{"then: absent parameter", "=> serialization = fastjson", with(nil, nil), ""},
		{"methods key", "methods = getFoo => host = 10.20.3.3", with(nil, nil), "3"},
		{"methods key, other method", "methods = other => host = 10.20.3.3", with(nil, nil), "3,4,5"},
		{"argument null is \"null\"", "arguments[0] = a => host = 1.2.3.4", with([]any{nil}, nil), "3,4,5"},
		{"argument matches", "arguments[0] = a => host = 1.2.3.4", with([]any{"a"}, nil), ""},
		{"arguments without index", "arguments = b => host = 1.2.3.4", with([]any{"b"}, nil), "3,4,5"},
		{"argument out of range", "arguments[10].inner = a => host = 1.2.3.4", with([]any{"a"}, nil), "3,4,5"},
		{"argument out of range passes !=", "arguments[10] != a => host = 1.2.3.4", with([]any{"a"}, nil), ""},
		{"what follows the index is ignored", "arguments[0].inner = 1 => host = 1.2.3.4", with([]any{int32(1)}, nil), ""},
		{"attachment absent", "attachments[foo] = a => host = 1.2.3.4", with(nil, nil), "3,4,5"},
		{"attachment matches", "attachments[foo] = a => region = hangzhou", with(nil, map[string]any{"foo": "a"}), "3"},
		{"attachments without key", "attachments = a => host = 1.2.3.4", with(nil, map[string]any{"foo": "a"}), "3,4,5"},
		{"range: absent attachment", "attachments[user_id] = 1~100 => region=hangzhou", with(nil, nil), "3,4,5"},
		{"range: inside", "attachments[user_id] = 1~100 => region=hangzhou", with(nil, map[string]any{"user_id": "80"}), "3"},
		{"range: above", "attachments[user_id] = 1~100 => region=hangzhou", with(nil, map[string]any{"user_id": "101"}), "3,4,5"},
		{"range: no lower bound", "attachments[user_id] = ~100 => region = hangzhou", with(nil, map[string]any{"user_id": "1"}), "3"},
		{"range: no upper bound is unreadable", "attachments[user_id] = 1~ => region = hangzhou", with(nil, map[string]any{"user_id": "1"}), "3,4,5"},
		{"range on the provider side", "=> port = 20000~20880", with(nil, nil), "3,4,5"},
		{"then key absent everywhere", "when_key = a => not_exist_then_key = any_value", with(nil, nil), ""},
		{"when key absent", "not_exist_when_key = a => then_key = a", with(nil, nil), "3,4,5"},
		{"when key absent fails != too", "not_exist_when_key != a => then_key = a", with(nil, nil), "3,4,5"},
		{"several when keys", "application = consumer_app & arguments[0] = a => host = 10.20.3.4", with([]any{"a"}, nil), "4"},
		{"$ on the then side", "=> host = $host", with(nil, nil), "4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseCondition(tt.rule, true)
			if err != nil {
				t.Fatal(err)
			}
			if got := hosts(c.Route(ps, consumer, tt.inv)); got != tt.want {
				t.Errorf("%q routed to %q, want %q", tt.rule, got, tt.want)
			}
		})
	}
}
