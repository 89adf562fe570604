package provider

import (
	"testing"

	"github.com/dubbo-lab/dubbo/node/cluster/configurator"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Old override URLs reach providers as Java's AbstractConfigurator lets them.
func TestForProviders(t *testing.T) {
	for _, tc := range []struct {
		override string
		kept     bool
	}{
		{"override://0.0.0.0/org.example.Greeter?weight=200", true},
		{"override://10.0.0.1:20880/org.example.Greeter?weight=200", true},
		{"override://10.0.0.1/org.example.Greeter?weight=200", false}, // a consumer's host
		{"override://10.0.0.1/org.example.Greeter?weight=200&side=provider", true},
	} {
		rules, err := configurator.ParseURLs([]*url.URL{url.MustParse(tc.override)})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(forProviders(rules)) == 1; got != tc.kept {
			t.Errorf("%s: kept %v, want %v", tc.override, got, tc.kept)
		}
	}
}
