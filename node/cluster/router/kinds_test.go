package router

import (
	"errors"
	"strings"
	"testing"

	"github.com/dubbo-lab/dubbo/node/cluster"
)

func TestEnabled(t *testing.T) {
	tests := []struct {
		spec, want string
	}{
		{"", "app,application.affinity,consumer.script,service,service.affinity,tag"},
		{"-tag", "app,application.affinity,consumer.script,service,service.affinity"},
		{" -tag , -app , -consumer.script, -application.affinity, -service.affinity", "service"},
		{"-default", ""},
		{"-default,tag", "tag"},
		{"tag", "app,application.affinity,consumer.script,service,service.affinity,tag"},
	}
	for _, tt := range tests {
		got, err := Enabled(tt.spec)
		if err != nil || strings.Join(got, ",") != tt.want {
			t.Errorf("Enabled(%q) = %v, %v; want %s", tt.spec, got, err, tt.want)
		}
	}
	_, err := Enabled("-tga")
	if !errors.Is(err, cluster.ErrUnknownName) || !strings.Contains(err.Error(), `"tga"`) || !strings.Contains(err.Error(), "app, application.affinity, consumer.script, service, service.affinity, tag") {
		t.Errorf("Enabled(-tga): %v; want the unknown name and the known ones", err)
	}
}

// Every router of the table is made from a rule document, and without one.
func TestKinds(t *testing.T) {
	docs := map[string]string{
		"tag":                  "force: false\nkey: greeter-app\ntags:\n  - name: gray\n    addresses: [10.0.0.1:20880]\n",
		"service":              "scope: service\nkey: org.example.Greeter\nconditions:\n  - => host = 10.0.0.1\n",
		"app":                  "scope: application\nkey: shop\nconditions:\n  - => host = 10.0.0.1\n",
		"service.affinity":     "configVersion: v3.1\nscope: service\nkey: org.example.Greeter\naffinityAware: {key: region, ratio: 20}\n",
		"application.affinity": "configVersion: v3.1\nscope: application\nkey: greeter-app\naffinity: {key: region}\n",
		"consumer.script":      "key: greeter-app\ntype: javascript\nscript: function route(invokers) { return invokers; }\n",
	}
	for _, n := range Names() {
		k, ok := Lookup(n)
		if !ok {
			t.Fatalf("Lookup(%q) failed", n)
		}
		if r, err := k.New([]byte(docs[n])); err != nil || r == nil {
			t.Errorf("%s: New(rule) = %v, %v", n, r, err)
		}
		if _, err := k.New(nil); err != nil {
			t.Errorf("%s: New(nil): %v", n, err)
		}
		if _, err := k.New([]byte("conditions: {")); !errors.Is(err, ErrInvalidRule) {
			t.Errorf("%s: a broken rule gave %v, want ErrInvalidRule", n, err)
		}
	}
}
