package router

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

type fakeProvider struct{ u *url.URL }

func (f *fakeProvider) Invoke(context.Context, *rpc.Invocation) (*rpc.Result, error) {
	return &rpc.Result{}, nil
}
func (f *fakeProvider) URL() *url.URL   { return f.u }
func (f *fakeProvider) Available() bool { return true }

func providers(specs ...string) []cluster.ProviderInvoker {
	ps := make([]cluster.ProviderInvoker, len(specs))
	for i, s := range specs {
		ps[i] = &fakeProvider{url.MustParse("dubbo://" + s)}
	}
	return ps
}

// hosts names the routed providers by the last part of their IP.
func hosts(ps []cluster.ProviderInvoker) string {
	var out []string
	for _, p := range ps {
		h := p.URL().Host()
		out = append(out, h[strings.LastIndexByte(h, '.')+1:])
	}
	return strings.Join(out, ",")
}

var (
	greeters = providers(
		"10.20.153.10:20880/org.example.Greeter?application=app1&region=hangzhou",
		"10.20.153.11:20880/org.example.Greeter?application=app2&region=beijing",
		"10.20.153.12:20881/org.example.Greeter?application=app2&region=hangzhou",
	)
	shopConsumer = url.MustParse("consumer://192.168.1.5/org.example.Greeter?application=shop&region=hangzhou")
)

func call(method string, args ...any) *rpc.Invocation {
	return &rpc.Invocation{Service: "org.example.Greeter", Method: method, Args: args}
}

func TestConditionRoute(t *testing.T) {
	vip := call("sayHello", "x")
	vip.SetAttachment("user", "vip")
	tests := []struct {
		rule  string
		force bool
		inv   *rpc.Invocation
		want  string
	}{
		{rule: "method = sayHello => region = hangzhou", inv: call("sayHello"), want: "10,12"},
		{rule: "method = sayHello => region = hangzhou", inv: call("add"), want: "10,11,12"},
		{rule: "=> host = 10.20.153.11", inv: call("add"), want: "11"},
		{rule: "true => host = 10.20.153.10", inv: call("add"), want: "10"},
		{rule: "host = 10.20.153.11", inv: call("add"), want: "11"}, // no arrow: a then-side only
		{rule: "host = 192.168.1.5 => host = 10.20.153.10,10.20.153.12", inv: call("add"), want: "10,12"},
		{rule: "host = 192.168.1.9 => host = 10.20.153.10", inv: call("add"), want: "10,11,12"},
		{rule: "method = sayHello =>", inv: call("sayHello"), want: ""},
		{rule: "method = sayHello => false", inv: call("sayHello"), want: ""},
		{rule: "method = sayHello => false", inv: call("add"), want: "10,11,12"},
		{rule: "application = shop => application != app2", inv: call("add"), want: "10"},
		{rule: "=> port = 20881", inv: call("add"), want: "12"},
		{rule: "=> address = 10.20.153.11:20880", inv: call("add"), want: "11"},
		{rule: "arguments[0] = bob => host = 10.20.153.10", inv: call("sayHello", "bob"), want: "10"},
		{rule: "arguments[0] = bob => host = 10.20.153.10", inv: call("sayHello", "alice"), want: "10,11,12"},
		{rule: "arguments[1] = 7 => host = 10.20.153.10", inv: call("add", 3, 7), want: "10"},
		{rule: "arguments[5] = 7 => host = 10.20.153.10", inv: call("add", 3, 7), want: "10,11,12"},
		{rule: "attachments[user] = vip => host = 10.20.153.12", inv: vip, want: "12"},
		{rule: "method = say* => region = hang*", inv: call("sayHello"), want: "10,12"},
		{rule: "method = *Hello => region = *jing", inv: call("sayHello"), want: "11"},
		{rule: "=> host = 10.*.12", inv: call("add"), want: "12"},
		{rule: "=> region = $region", inv: call("add"), want: "10,12"},
		{rule: "consumer.host = 192.168.1.5 => provider.host = 10.20.153.11", inv: call("add"), want: "11"},
		{rule: "method != sayHello => host = 10.20.153.10", inv: call("sayHello"), want: "10,11,12"},
		{rule: "method != sayHello => host = 10.20.153.10", inv: call("add"), want: "10"},
		{rule: "=> region = hangzhou & application = app2", inv: call("add"), want: "12"},
		{rule: "=> region = hangzhou,beijing & region != beijing", inv: call("add"), want: "10,12"},
		{rule: "method = sayHello,add & application = shop => host = 10.20.153.11", inv: call("add"), want: "11"},
		{rule: "method = sayHello & application = other => host = 10.20.153.11", inv: call("add"), want: "10,11,12"},
		{rule: "=> zone = z1", inv: call("add"), want: "10,11,12"},           // nobody has zone: ignored
		{rule: "=> zone != z1", inv: call("add"), want: "10,11,12"},          // absent key passes !=
		{rule: "=> host = 1.1.1.1", force: true, inv: call("add"), want: ""}, // force keeps the empty list
		{rule: "=> host = 1.1.1.1", inv: call("add"), want: "10,11,12"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			c, err := ParseCondition(tt.rule, tt.force)
			if err != nil {
				t.Fatal(err)
			}
			if got := hosts(c.Route(greeters, shopConsumer, tt.inv)); got != tt.want {
				t.Errorf("%s(%v) routed to %q, want %q", tt.inv.Method, tt.inv.Args, got, tt.want)
			}
		})
	}
}

func TestParseConditionInvalid(t *testing.T) {
	for _, rule := range []string{
		"= sayHello => host = 1.2.3.4",
		"method = => host = 1.2.3.4",
		"method = a b => host = 1.2.3.4",
		"method ! a => host = 1.2.3.4",
		"method === a",
		"=> host = a,,b",
		"=> , a",
		"=> host",
		"method =! a =>",
		"=> host = a &",
	} {
		t.Run(rule, func(t *testing.T) {
			_, err := ParseCondition(rule, false)
			if !errors.Is(err, ErrInvalidRule) || !strings.Contains(err.Error(), rule) {
				t.Errorf("ParseCondition(%q) error = %v, want ErrInvalidRule quoting the rule", rule, err)
			}
		})
	}
}

func TestParseConditionRule(t *testing.T) {
	doc, err := ParseConditionRule([]byte(`
configVersion: v3.0
scope: service
key: "org.example.Greeter:1.0.0:"
force: true
priority: 2
conditions:
  - method = sayHello => region = hangzhou
  - => application = app2
`))
	if err != nil {
		t.Fatal(err)
	}
	if !doc.Force || !doc.Runtime || !doc.Enabled || doc.Priority != 2 || doc.Scope != "service" ||
		doc.Key != "org.example.Greeter:1.0.0:" || len(doc.Conditions) != 2 || doc.Conditions[1].Rule != "=> application = app2" {
		t.Errorf("parsed %+v", doc)
	}
	rule := mustRouter(t, doc)
	// The conditions run in order: region first, then application.
	if got := hosts(rule.Route(greeters, shopConsumer, call("sayHello"))); got != "12" {
		t.Errorf("sayHello routed to %q, want 12", got)
	}
	if got := hosts(rule.Route(greeters, shopConsumer, call("add"))); got != "11,12" {
		t.Errorf("add routed to %q, want 11,12", got)
	}

	off, err := ParseConditionRule([]byte("enabled: false\nconditions: ['=> host = 1.1.1.1']\n"))
	if err != nil {
		t.Fatal(err)
	}
	if off.Force || !off.Runtime || off.Priority != 0 {
		t.Errorf("defaults: %+v", off)
	}
	if got := hosts(mustRouter(t, off).Route(greeters, shopConsumer, call("add"))); got != "10,11,12" {
		t.Errorf("disabled rule routed to %q, want all", got)
	}
}

func mustRouter(t testing.TB, doc *ConditionRule) *ConditionRouter {
	t.Helper()
	r, err := NewConditionRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParseConditionRuleInvalid(t *testing.T) {
	tests := []struct{ name, yaml, hint string }{
		{"no conditions", "key: a\nforce: true\n", "no conditions"},
		{"bad yaml", "conditions: [\n", "YAML"},
		{"bad condition", "conditions:\n  - method = => host = a\n", "when-side"},
		{"v3.1 strings", "configVersion: v3.1\nconditions:\n  - => host = a\n", "set configVersion: v3.0"},
		{"v3.0 objects", "configVersion: v3.0\nconditions:\n  - from: {match: a=b}\n", "needs configVersion: v3.1"},
		{"v3.1 bad from", "configVersion: v3.1\nconditions:\n  - from: {match: '= b'}\n", "from"},
		{"v3.1 bad to", "configVersion: v3.1\nconditions:\n  - to: [{match: 'a ='}]\n", "to[0]"},
		{"v3.1 blocks everything", "configVersion: v3.1\nconditions:\n  - from: {match: ''}\n", "block every call"},
		{"later version", "configVersion: v3.2\nconditions:\n  - from: {match: a=b}\n", "v3.2"},
		{"bad scope", "scope: global\nconditions: ['=> host = a']\n", "scope"},
		{"wrong type", "force: maybe\nconditions: ['=> host = a']\n", "YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConditionRule([]byte(tt.yaml))
			if !errors.Is(err, ErrInvalidRule) || !strings.Contains(err.Error(), tt.hint) {
				t.Errorf("error = %v, want ErrInvalidRule mentioning %q", err, tt.hint)
			}
		})
	}
}

func TestParseConditionURL(t *testing.T) {
	tests := []struct {
		url, want string
		err       bool
	}{
		{url: "condition://0.0.0.0/org.example.Greeter?category=routers&dynamic=false&enabled=true&force=false&runtime=false&priority=0&rule=host+%3D+192.168.1.5+%3D%3E+host+%3D+10.20.153.11", want: "11"},
		{url: "route://0.0.0.0/org.example.Greeter?router=condition&rule=%3D%3E+region+%3D+beijing", want: "11"},
		{url: "condition://0.0.0.0/org.example.Greeter?enabled=false&rule=%3D%3E+region+%3D+beijing", want: "10,11,12"},
		{url: "condition://0.0.0.0/org.example.Greeter?force=true&rule=%3D%3E+region+%3D+shanghai", want: ""},
		{url: "route://0.0.0.0/org.example.Greeter?router=script&rule=x", err: true},
		{url: "condition://0.0.0.0/org.example.Greeter?category=routers", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			r, err := ParseConditionURL(url.MustParse(tt.url))
			if tt.err {
				if !errors.Is(err, ErrInvalidRule) {
					t.Errorf("error = %v, want ErrInvalidRule", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := hosts(r.Route(greeters, shopConsumer, call("add"))); got != tt.want {
				t.Errorf("routed to %q, want %q", got, tt.want)
			}
		})
	}
}

// markRouter appends its name to the invocation so the test sees the order.
type markRouter string

func (m markRouter) Route(ps []cluster.ProviderInvoker, _ *url.URL, inv *rpc.Invocation) []cluster.ProviderInvoker {
	inv.SetAttachment("order", inv.Attachment("order")+string(m))
	return ps
}

func TestChainOrderAndReplace(t *testing.T) {
	var c Chain
	c.Set("app", OrderAppCondition, markRouter("A"))
	c.Set("tag", OrderTag, markRouter("T"))
	c.Set("service", OrderServiceCondition, markRouter("S"))
	c.Set("app", OrderAppCondition, markRouter("a")) // replaces A
	c.Set("service", OrderServiceCondition, nil)     // removes S
	inv := call("x")
	c.Route(greeters, shopConsumer, inv)
	if got := inv.Attachment("order"); got != "Ta" {
		t.Errorf("routers ran as %q, want Ta", got)
	}
	block, _ := ParseCondition("=> false", false)
	c.Set("service", OrderServiceCondition, block)
	inv = call("x")
	if got := c.Route(greeters, shopConsumer, inv); len(got) != 0 || inv.Attachment("order") != "T" {
		t.Errorf("after a blocking router: %d providers, order %q; want none and only T", len(got), inv.Attachment("order"))
	}
}

func BenchmarkConditionRoute(b *testing.B) {
	doc, err := ParseConditionRule([]byte("conditions:\n  - method = say* & application = shop => region = hangzhou & host != 10.20.153.11\n"))
	if err != nil {
		b.Fatal(err)
	}
	rule := mustRouter(b, doc)
	inv := call("sayHello")
	b.ReportAllocs()
	for b.Loop() {
		rule.Route(greeters, shopConsumer, inv)
	}
}
