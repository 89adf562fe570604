package console_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestGrayRelease is Dubbo's gray release through the console: a new
// provider joins, and a condition rule written with the console's API
// sends organization 102's calls (first argument 102) to it while every
// other call keeps balancing over the old providers.
func TestGrayRelease(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	old1, old2 := e.Providers[0], e.Providers[1]
	fresh := e.StartProvider(t)
	waitFor(t, "three providers in the console", func() bool {
		d, _ := e.console.Catalog().Service(greeter)
		return len(d.Providers) == 3
	})
	port := fresh[strings.LastIndex(fresh, ":")+1:]
	rule := fmt.Sprintf("scope: service\nkey: org.example.Greeter\nforce: true\nconditions:\n"+
		"  - \"method = add & arguments[0] = 102 => port = %[1]s\"\n"+
		"  - \"method = add & arguments[0] != 102 => port != %[1]s\"\n", port)
	st, body, _ := do(t, "PUT", e.ConsoleURL+"/api/v1/rules/condition/org.example.Greeter:1.0.0:", "application/yaml", rule)
	if st != 200 {
		t.Fatalf("PUT rule: %d %s", st, body)
	}
	const n = 200
	var got map[string]int64
	waitFor(t, "the rule in force", func() bool {
		before := e.Served()
		for i := 0; i < n; i++ {
			org := int32(100 + i%4) // 100, 101, 102, 103
			if err := e.Add(testCtx(t), org, 1); err != nil {
				t.Fatal(err)
			}
		}
		after := e.Served()
		got = map[string]int64{}
		for k, v := range after {
			got[k] = v - before[k]
		}
		return got[fresh+" add(102)"] == n/4
	})
	if got[old1+" add(102)"]+got[old2+" add(102)"] != 0 {
		t.Fatalf("organization 102 reached an old provider: %v", got)
	}
	if got[fresh+" add"] != 0 {
		t.Fatalf("other organizations reached the new provider: %v", got)
	}
	if got[old1+" add"] == 0 || got[old2+" add"] == 0 || got[old1+" add"]+got[old2+" add"] != 3*n/4 {
		t.Fatalf("other organizations do not balance over both old providers: %v", got)
	}
	t.Logf("%d calls: 102 -> new %d; others -> old %d / %d", n, got[fresh+" add(102)"], got[old1+" add"], got[old2+" add"])
}
