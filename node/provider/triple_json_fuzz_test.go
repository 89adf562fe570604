package provider

import (
	"testing"
)

// jsonArgs reads request bodies from any HTTP client: whatever the body, it
// returns an error or an overload of the method with one converted
// argument per parameter, and never panics.
func FuzzJSONArgs(f *testing.F) {
	overloads := map[string][]Method{
		"sayHello": {{Name: "sayHello", ParamTypes: []string{"java.lang.String"}}},
		"add": {{Name: "add", ParamTypes: []string{"int", "int"}},
			{Name: "add", ParamTypes: []string{"long", "long", "long"}}},
		"echoMap": {{Name: "echoMap", ParamTypes: []string{"java.util.Map"}}},
		"order":   {{Name: "order", ParamTypes: []string{"com.example.Order", "java.util.List<java.lang.String>", "byte[]"}}},
		"ping":    {{Name: "ping"}},
	}
	for _, seed := range []string{`["world"]`, `"alone"`, `[2, 3]`, `[1, 2, 3]`, `{"k": "v"}`, `[{"k": [1, {"a": null}]}]`,
		`[{"id": 7, "items": ["a"]}, ["x"], "AAE="]`, ``, `[]`, `[`, `nul`, `[1e999, -0]`, `["\ud800"]`} {
		for name := range overloads {
			f.Add(name, []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, name string, body []byte) {
		ms, ok := overloads[name]
		if !ok {
			return
		}
		m, args, err := jsonArgs(ms, body)
		if err != nil {
			return
		}
		if m.Name != name || len(args) != len(m.ParamTypes) {
			t.Fatalf("%s %q: picked %s%v with %d arguments", name, body, m.Name, m.ParamTypes, len(args))
		}
	})
}
