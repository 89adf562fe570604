package router

import (
	"errors"
	"strings"
	"testing"

	"github.com/dubbo-lab/dubbo/node/url"
)

// The cases of dubbo-go 3.3's affinity router: providers sharing the
// consumer's value of the key, when they are at least ratio percent of
// the list, else the whole list.
func TestAffinityRouter(t *testing.T) {
	ps := providers("10.0.0.1:20880/g?region=hangzhou", "10.0.0.2:20880/g?region=hangzhou",
		"10.0.0.3:20880/g?region=beijing", "10.0.0.4:20880/g?region=shanghai", "10.0.0.5:20880/g")
	hz := url.MustParse("consumer://1.1.1.1/g?region=hangzhou")
	bj := url.MustParse("consumer://1.1.1.1/g?region=beijing")
	none := url.MustParse("consumer://1.1.1.1/g")
	tests := []struct {
		name, doc string
		consumer  *url.URL
		want      string
	}{
		{"same region", "affinityAware: {key: region, ratio: 20}", hz, "1,2"},
		{"Admin's spelling", "affinity: {key: region, ratio: 20}", hz, "1,2"},
		{"at the ratio exactly", "affinityAware: {key: region, ratio: 40}", hz, "1,2"},
		{"below the ratio: everyone", "affinityAware: {key: region, ratio: 41}", hz, "1,2,3,4,5"},
		{"one of five is 20%", "affinityAware: {key: region, ratio: 20}", bj, "3"},
		{"ratio 0 keeps even none", "affinityAware: {key: region}", none, ""},
		{"consumer without the key", "affinityAware: {key: region, ratio: 10}", none, "1,2,3,4,5"},
		{"disabled", "enabled: false\naffinityAware: {key: region, ratio: 20}", hz, "1,2,3,4,5"},
		{"no key", "affinityAware: {key: '', ratio: 20}", hz, "1,2,3,4,5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rule, err := ParseAffinityRule([]byte("configVersion: v3.1\nscope: service\nkey: g\n" + tt.doc + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			r, err := NewAffinityRouter(rule)
			if err != nil {
				t.Fatal(err)
			}
			if got := hosts(r.Route(ps, tt.consumer, call("x"))); got != tt.want {
				t.Errorf("routed to %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseAffinityRuleInvalid(t *testing.T) {
	for _, tt := range []struct{ doc, hint string }{
		{"key: g\n", "no affinityAware"},
		{"affinityAware: {key: region, ratio: 101}\n", "ratio 101"},
		{"affinityAware: {key: region, ratio: -1}\n", "ratio -1"},
		{"scope: cluster\naffinityAware: {key: region}\n", "scope"},
		{"affinityAware: [\n", "YAML"},
	} {
		if _, err := ParseAffinityRule([]byte(tt.doc)); !errors.Is(err, ErrInvalidRule) || !strings.Contains(err.Error(), tt.hint) {
			t.Errorf("%q: error %v, want ErrInvalidRule mentioning %q", tt.doc, err, tt.hint)
		}
	}
}

// A script rule is read, passes every provider on, and says it is not
// applied.
func TestScriptRuleNotApplied(t *testing.T) {
	k, _ := Lookup("consumer.script")
	r, err := k.New([]byte("key: p\ntype: javascript\nscript: |\n  (function route(invokers) { return []; })\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := hosts(r.Route(greeters, shopConsumer, call("x"))); got != "10,11,12" {
		t.Errorf("routed to %q, want every provider", got)
	}
	if w := Warnings(r); len(w) != 1 || !strings.Contains(w[0], "not applied") {
		t.Errorf("warnings %q", w)
	}
}
