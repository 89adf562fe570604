package configurator

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/dubbo-lab/dubbo/node/url"
)

var (
	p1       = url.MustParse("dubbo://10.0.0.1:20880/org.example.Greeter?application=greeter&interface=org.example.Greeter&version=1.0.0&timeout=1000")
	p2       = url.MustParse("dubbo://10.0.0.2:20881/org.example.Greeter?application=greeter&interface=org.example.Greeter&version=1.0.0")
	other    = url.MustParse("dubbo://10.0.0.3:20880/org.example.Other?application=billing&interface=org.example.Other")
	consumer = url.MustParse("consumer://192.168.1.5/org.example.Greeter?application=shop")
)

// param shows what the consumer sees of key on each provider after rules.
func param(r Rules, key string, ps ...*url.URL) string {
	var out []string
	for _, p := range ps {
		out = append(out, r.Configure(p, consumer).Param(key))
	}
	return strings.Join(out, ",")
}

func TestParseAndConfigure(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		key  string
		want string // the key's value on p1,p2,other
	}{
		{"all providers", `
configVersion: v3.0
scope: service
key: org.example.Greeter
configs:
  - side: provider
    addresses: ["0.0.0.0"]
    parameters: {timeout: 6000}
`, "timeout", "6000,6000,"},
		{"one provider by host:port; specific wins over 0.0.0.0 whatever the order", `
configVersion: v3.0
scope: service
key: org.example.Greeter
configs:
  - side: provider
    addresses: ["10.0.0.2:20881"]
    parameters: {weight: 200}
  - side: provider
    addresses: ["0.0.0.0"]
    parameters: {weight: 50}
`, "weight", "50,200,"},
		{"by host only", `
configVersion: v2.7
scope: service
key: org.example.Greeter
configs:
  - side: provider
    addresses: [10.0.0.1]
    parameters: {disabled: true}
`, "disabled", "true,,"},
		{"versioned key must match", `
scope: service
key: org.example.Greeter:2.0.0
configs:
  - parameters: {retries: 0}
`, "retries", ",,"},
		{"group/interface:version key", `
scope: service
key: /org.example.Greeter:1.0.0
configs:
  - parameters: {retries: 0}
`, "retries", "0,0,"},
		{"consumer side by our host and provider address", `
scope: service
key: org.example.Greeter
configs:
  - side: consumer
    addresses: [192.168.1.5]
    providerAddresses: ["10.0.0.1:20880"]
    parameters: {loadbalance: roundrobin}
`, "loadbalance", "roundrobin,,"},
		{"consumer side for another consumer", `
scope: service
key: org.example.Greeter
configs:
  - side: consumer
    addresses: [192.168.1.6]
    parameters: {loadbalance: roundrobin}
`, "loadbalance", ",,"},
		{"application scope: the providers of that application", `
scope: application
key: greeter
configs:
  - side: provider
    parameters: {weight: 10}
`, "weight", "10,10,"},
		{"application scope narrowed by services", `
scope: application
key: billing
configs:
  - side: provider
    services: [org.example.Other]
    parameters: {weight: 10}
`, "weight", ",,10"},
		{"disabled rule", `
scope: service
key: org.example.Greeter
enabled: false
configs:
  - parameters: {timeout: 1}
`, "timeout", "1000,,"},
		{"disabled item", `
scope: service
key: org.example.Greeter
configs:
  - enabled: false
    parameters: {timeout: 1}
  - parameters: {weight: 7}
`, "timeout", "1000,,"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if got := param(r, tt.key, p1, p2, other); got != tt.want {
				t.Errorf("%s on p1,p2,other = %q, want %q", tt.key, got, tt.want)
			}
		})
	}
}

func TestConfigureLeavesInputAlone(t *testing.T) {
	r, err := Parse([]byte("scope: service\nkey: org.example.Greeter\nconfigs:\n  - parameters: {timeout: 5}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := r.Configure(p1, consumer)
	if p1.Param("timeout") != "1000" || got.Param("timeout") != "5" {
		t.Errorf("input timeout %s, output %s; want 1000 and 5", p1.Param("timeout"), got.Param("timeout"))
	}
	if r.Configure(other, consumer) != other {
		t.Error("a URL no rule matches should come back as is")
	}
}

func TestParseInvalid(t *testing.T) {
	tests := []struct{ name, yaml, hint string }{
		{"bad yaml", "configs: [", "YAML"},
		{"no key", "scope: service\nconfigs:\n  - parameters: {a: 1}\n", "key"},
		{"bad scope", "scope: cluster\nkey: a\nconfigs:\n  - parameters: {a: 1}\n", "scope"},
		{"no scope", "key: a\nconfigs:\n  - parameters: {a: 1}\n", "scope"},
		{"no configs", "scope: service\nkey: a\n", "configs"},
		{"bad side", "scope: service\nkey: a\nconfigs:\n  - side: both\n    parameters: {a: 1}\n", "side"},
		{"no parameters", "scope: service\nkey: a\nconfigs:\n  - side: provider\n", "parameters"},
		{"null parameter", "scope: service\nkey: a\nconfigs:\n  - parameters: {a: }\n", "no value"},
		{"version", "configVersion: v9\nscope: service\nkey: a\nconfigs:\n  - parameters: {a: 1}\n", "configVersion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if !errors.Is(err, ErrInvalidRule) || !strings.Contains(err.Error(), tt.hint) {
				t.Errorf("error = %v, want ErrInvalidRule mentioning %q", err, tt.hint)
			}
		})
	}
}

func TestParseURLs(t *testing.T) {
	tests := []struct {
		name string
		urls []string
		key  string
		want string
	}{
		{"one provider", []string{"override://10.0.0.1:20880/org.example.Greeter?category=configurators&dynamic=false&enabled=true&weight=200"}, "weight", "200,,"},
		{"condition keys are not copied", []string{"override://0.0.0.0/org.example.Greeter?category=configurators&weight=200"}, "category", ",,"},
		{"all providers of the interface", []string{"override://0.0.0.0/org.example.Greeter?weight=200"}, "weight", "200,200,"},
		{"port only", []string{"override://0.0.0.0:20881/org.example.Greeter?weight=200"}, "weight", ",200,"},
		{"application", []string{"override://0.0.0.0/*?application=billing&weight=3"}, "weight", ",,3"},
		{"disabled override", []string{"override://0.0.0.0/org.example.Greeter?enabled=false&weight=200"}, "weight", ",,"},
		{"absent keeps existing values", []string{"absent://0.0.0.0/org.example.Greeter?timeout=5"}, "timeout", "1000,5,"},
		{"disable one provider", []string{"override://10.0.0.2/org.example.Greeter?disabled=true"}, "disabled", ",true,"},
		{"empty means none", []string{"empty://192.168.1.5/org.example.Greeter?category=configurators"}, "weight", ",,"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var us []*url.URL
			for _, s := range tt.urls {
				us = append(us, url.MustParse(s))
			}
			r, err := ParseURLs(us)
			if err != nil {
				t.Fatal(err)
			}
			if got := param(r, tt.key, p1, p2, other); got != tt.want {
				t.Errorf("%s on p1,p2,other = %q, want %q", tt.key, got, tt.want)
			}
		})
	}
	if _, err := ParseURLs([]*url.URL{url.MustParse("dubbo://1.2.3.4/x")}); !errors.Is(err, ErrInvalidRule) {
		t.Errorf("dubbo:// as override: error = %v, want ErrInvalidRule", err)
	}
}

func TestDisabled(t *testing.T) {
	for _, tt := range []struct {
		q    string
		want bool
	}{{"", false}, {"disabled=true", true}, {"disabled=false&enabled=false", false}, {"enabled=false", true}, {"enabled=true", false}} {
		if got := Disabled(url.MustParse("dubbo://1.2.3.4:1/x?" + tt.q)); got != tt.want {
			t.Errorf("Disabled(%q) = %v, want %v", tt.q, got, tt.want)
		}
	}
}

// Java's ConfigParserTest.parseProviderConfigurationV3 (ConfiguratorV3.yml):
// an item's match by address, service and parameter.
func TestConditionMatchJava(t *testing.T) {
	doc, err := ParseDocument([]byte(`---
configVersion: v3.0
scope: application
key: demo-provider
configs:
  - match:
      address:
        wildcard: "10.0.0.1:20880"
      service:
        oneof:
          - exact: "DemoService"
          - exact: "DemoService2"
      param:
        - key: match_key1
          value:
            exact: value1
    side: provider
    parameters:
      weight: 200
...`))
	if err != nil {
		t.Fatal(err)
	}
	m := doc.Configs[0].Match
	for _, tt := range []struct {
		u    string
		want bool
	}{
		{"dubbo://10.0.0.1:20880/DemoService?match_key1=value1", true},
		{"dubbo://10.0.0.1:20880/DemoService2?match_key1=value1", true},
		{"dubbo://10.0.0.2:20880/DemoService?match_key1=value1", false},          // address
		{"dubbo://10.0.0.1:20880/DemoServiceNotMatch?match_key1=value1", false},  // service
		{"dubbo://10.0.0.1:20880/DemoService?match_key1=value_not_match", false}, // parameter
	} {
		u := url.MustParse(tt.u)
		if got := m.Matches(u.Address(), u, paramsOf(u)); got != tt.want {
			t.Errorf("%s: match %v, want %v", tt.u, got, tt.want)
		}
	}
	rules, err := doc.Rules()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ u, want string }{
		{"dubbo://10.0.0.1:20880/DemoService?application=demo-provider&match_key1=value1", "200"},
		{"dubbo://10.0.0.1:20880/DemoService?application=demo-provider&match_key1=other", ""},
		{"dubbo://10.0.0.1:20880/DemoService?application=other&match_key1=value1", ""},
	} {
		if got := rules.Configure(url.MustParse(tt.u), consumer).Param("weight"); got != tt.want {
			t.Errorf("%s: weight %q, want %q", tt.u, got, tt.want)
		}
	}
}

// Match through Configure: by the side's address, by provider address, by
// application (either spelling) and by the parameters of the consumer's
// view; ignored, with a warning, outside configVersion v3.0 rules.
func TestOverrideMatch(t *testing.T) {
	tests := []struct {
		name, item string
		version    string
		want       string // timeout on p1,p2,other
	}{
		{"provider address", "side: provider\n    match: {address: {cird: 10.0.0.2/32}}", "v3.0", "1000,5,"},
		{"provider address by exact host:port", "side: provider\n    match: {providerAddress: {exact: '10.0.0.1:20880'}}", "v3.0", "5,,"},
		{"consumer host", "side: consumer\n    match: {address: {wildcard: '192.168.1.*'}}", "v3.0", "5,5,"},
		{"another consumer", "side: consumer\n    match: {address: {exact: 192.168.1.9}}", "v3.0", "1000,,"},
		{"consumer side, provider parameter", "side: consumer\n    match: {param: [{key: version, value: {exact: 1.0.0}}]}", "v3.0", "5,5,"},
		{"consumer side, the consumer's application", "side: consumer\n    match: {app: {oneof: [{exact: shop}]}}", "v3.0", "5,5,"},
		{"provider side, the provider's application (Admin's spelling)", "side: provider\n    match: {application: {oneof: [{prefix: greet}]}}", "v3.0", "5,5,"},
		{"service key", "side: provider\n    match: {service: {oneof: [{exact: 'org.example.Greeter:1.0.0'}]}}", "v3.0", "5,5,"},
		{"absent parameter matches empty", "side: provider\n    match: {param: [{key: zone, value: {empty: 'true'}}]}", "v3.0", "5,5,"},
		{"not read in v2.7", "side: provider\n    match: {address: {exact: 10.9.9.9}}", "v2.7", "5,5,"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "configVersion: " + tt.version + "\nscope: service\nkey: org.example.Greeter\nconfigs:\n  - " + tt.item + "\n    parameters: {timeout: 5}\n"
			d, err := ParseDocument([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			r, err := d.Rules()
			if err != nil {
				t.Fatal(err)
			}
			if got := param(r, "timeout", p1, p2, other); got != tt.want {
				t.Errorf("timeout on p1,p2,other = %q, want %q", got, tt.want)
			}
			if w := d.Warnings(); (tt.version != "v3.0") != (len(w) == 1 && strings.Contains(w[0], "configs[0].match is not applied")) {
				t.Errorf("warnings %q", w)
			}
		})
	}
	if _, err := Parse([]byte("configVersion: v3.0\nscope: service\nkey: a\nconfigs:\n  - match: {param: [{key: k, value: {regex: '('}}]}\n    parameters: {a: 1}\n")); !errors.Is(err, ErrInvalidRule) {
		t.Errorf("a bad regex in match: %v, want ErrInvalidRule", err)
	}
}

// ConfigureConsumer applies the consumer-side items for the reference's
// service and host to the consumer URL, not those narrowed to providers.
func TestConfigureConsumer(t *testing.T) {
	c := url.MustParse("consumer://192.168.1.5/org.example.Greeter?application=shop&interface=org.example.Greeter&version=1.0.0")
	r, err := Parse([]byte(`configVersion: v3.0
scope: service
key: org.example.Greeter:1.0.0
configs:
  - side: consumer
    parameters: {mock: "force:return null"}
  - side: consumer
    providerAddresses: ["10.0.0.1:20880"]
    parameters: {timeout: 5}
  - side: provider
    parameters: {weight: 5}
  - side: consumer
    addresses: [192.168.1.6]
    parameters: {retries: 9}
  - side: consumer
    match: {app: {oneof: [{exact: shop}]}}
    parameters: {sayHello.mock: "fail:return hi"}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := r.ConfigureConsumer(c)
	if got.Param("mock") != "force:return null" || got.Param("sayHello.mock") != "fail:return hi" ||
		got.HasParam("timeout") || got.HasParam("weight") || got.HasParam("retries") {
		t.Errorf("configured consumer URL %s", got)
	}
	if c.HasParam("mock") {
		t.Error("ConfigureConsumer changed its input")
	}
	other := url.MustParse("consumer://192.168.1.5/org.example.Other?application=shop&interface=org.example.Other")
	if r.ConfigureConsumer(other) != other {
		t.Error("a rule of another service changed the consumer URL")
	}
	// Dubbo Admin 2.6's mock: an override URL of no side, for every host.
	old, err := ParseURLs([]*url.URL{url.MustParse("override://0.0.0.0/org.example.Greeter?category=configurators&dynamic=false&application=shop&mock=force:return+null")})
	if err != nil {
		t.Fatal(err)
	}
	if got := old.ConfigureConsumer(c).Param("mock"); got != "force:return+null" {
		t.Errorf("Admin 2.6's mock override: mock %q", got)
	}
}

// Unknown fields are kept when a rule is read and written back.
func TestDocumentRoundTrip(t *testing.T) {
	in := `configVersion: v3.0
scope: service
key: org.example.Greeter
enabled: true
configs:
  - type: weight
    enabled: true
    side: provider
    addresses: ["10.0.0.1:20880"]
    parameters:
      weight: 200
    match:
      param:
        - key: env
          value: {exact: gray}
    __generate_by_cp: true
owner: ops
`
	d, err := ParseDocument([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := yaml.Unmarshal([]byte(in), &a); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(out, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("round trip changed the rule:\n%s\nwant\n%s", out, in)
	}
	if w := d.Warnings(); len(w) != 1 || !strings.Contains(w[0], "owner") {
		t.Errorf("warnings %q, want one about owner", w)
	}
}
