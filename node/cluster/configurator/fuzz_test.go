package configurator

import (
	"reflect"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/dubbo-lab/dubbo/node/url"
)

// FuzzParseDocument checks that no document panics the parser or
// Configure, that configuring never changes its input, and that a rule
// written back reads as the same overrides.
func FuzzParseDocument(f *testing.F) {
	f.Add("configVersion: v3.0\nscope: service\nkey: org.example.Greeter\nconfigs:\n  - side: provider\n    addresses: [\"10.0.0.1:20880\"]\n    parameters: {weight: 200}\n")
	f.Add("configVersion: v3.0\nscope: application\nkey: demo-provider\nconfigs:\n  - match:\n      address: {wildcard: \"10.0.0.1:20880\"}\n      service: {oneof: [{exact: DemoService}]}\n      param: [{key: match_key1, value: {exact: value1}}]\n    side: provider\n    parameters: {weight: 200}\n")
	f.Add("configVersion: v3.0\nscope: service\nkey: org.example.Greeter:1.0.0\nconfigs:\n  - side: consumer\n    match: {app: {oneof: [{regex: 'sh.p'}]}, providerAddress: {cird: 10.0.0.0/8}}\n    parameters: {sayHello.mock: 'force:return hi'}\n")
	f.Fuzz(func(t *testing.T, doc string) {
		d, err := ParseDocument([]byte(doc))
		if err != nil {
			return
		}
		rules, err := d.Rules()
		if err != nil {
			t.Fatalf("parsed but gives no rules: %v", err)
		}
		for _, u := range []*url.URL{p1, p2, other} {
			before, c := u.String(), consumer.String()
			rules.Configure(u, consumer)
			rules.ConfigureConsumer(consumer)
			if u.String() != before || consumer.String() != c {
				t.Fatal("Configure changed its input")
			}
		}
		out, err := yaml.Marshal(d)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		again, err := ParseDocument(out)
		if err != nil {
			t.Fatalf("written back as\n%s\nwhich does not read: %v", out, err)
		}
		r2, _ := again.Rules()
		if param(rules, "weight", p1, p2, other) != param(r2, "weight", p1, p2, other) ||
			!reflect.DeepEqual(rules.ConfigureConsumer(consumer).Params(), r2.ConfigureConsumer(consumer).Params()) {
			t.Fatalf("written back as\n%s\nwhich applies otherwise", out)
		}
	})
}
