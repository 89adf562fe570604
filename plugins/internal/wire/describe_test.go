package wire

import (
	"strings"
	"testing"
)

func TestParseDescription(t *testing.T) {
	tests := []struct{ json, err string }{
		{`{"services":[{"interface":"org.example.Greeter","version":"1.0.0","methods":[{"name":"sayHello","paramTypes":["java.lang.String"],"returnType":"java.lang.String"}]}]}`, ""},
		{`{"services":[{"interface":"a.B$C","methods":[{"name":"m","paramTypes":["int[]","java.util.List[][]"],"returnType":"void"}]}]}`, ""},
		{`not json`, "not valid JSON"},
		{`{"services":[]}`, ""}, // a consumer-side plugin
		{`{}`, ""},
		{`{"services":[{"interface":"","methods":[]}]}`, "not a Java class name"},
		{`{"services":[{"interface":"a..b","methods":[]}]}`, "not a Java class name"},
		{`{"services":[{"interface":"a.B","methods":[]}]}`, "has no methods"},
		{`{"services":[{"interface":"a.B","methods":[{"name":"1m","returnType":"int"}]}]}`, "not a Java identifier"},
		{`{"services":[{"interface":"a.B","methods":[{"name":"m","paramTypes":["void"],"returnType":"int"}]}]}`, "is not a Java type"},
		{`{"services":[{"interface":"a.B","methods":[{"name":"m","paramTypes":["java.lang.String;"],"returnType":"int"}]}]}`, "is not a Java type"},
		{`{"services":[{"interface":"a.B","methods":[{"name":"m","returnType":""}]}]}`, "return type"},
		{`{"services":[{"interface":"a.B","methods":[{"name":"m","returnType":"int"},{"name":"m","returnType":"int"}]}]}`, "described twice"},
		{`{"services":[{"interface":"a.B","version":"0.0.0","methods":[{"name":"m","returnType":"int"}]},{"interface":"a.B","methods":[{"name":"m","returnType":"int"}]}]}`, "described twice"},
		{`{"services":[{"interface":"a.B","methods":[{"name":"m","returnType":"int"}],"params":{"weight":"200","dubbo.tag":"gray"}}]}`, ""},
		{`{"services":[{"interface":"a.B","methods":[{"name":"m","returnType":"int"}],"params":{"weight":"heavy"}}]}`, `parameter weight: "heavy" is not a non-negative integer`},
		{`{"services":[{"interface":"a.B","methods":[{"name":"m","returnType":"int"}],"params":{"interface":"c.D"}}]}`, "parameter interface: written by the provider"},
		{`{"services":[{"interface":"a.B","methods":[{"name":"m","returnType":"int"}],"params":{"":"x"}}]}`, "not a URL parameter name"},
	}
	for _, tt := range tests {
		_, err := ParseDescription([]byte(tt.json))
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.json, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: err = %v, want %q", tt.json, err, tt.err)
		}
	}
}

// FuzzParseDescription: whatever a plugin answers to Describe, the node
// either refuses it with an error or gets services it can register.
func FuzzParseDescription(f *testing.F) {
	f.Add([]byte(`{"services":[{"interface":"org.example.Greeter","version":"1.0.0","methods":[{"name":"sayHello","paramTypes":["java.lang.String"],"returnType":"java.lang.String"}],"params":{"weight":"200","dubbo.tag":"gray","timeout":"3000"}}]}`))
	f.Add([]byte(`{"services":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDescription(b)
		if err != nil {
			return
		}
		for _, s := range d.Services {
			if !ValidJavaName(s.Interface) || len(s.Methods) == 0 {
				t.Fatalf("accepted service %+v", s)
			}
			for k, v := range s.Params {
				if k == "" || strings.ContainsAny(k, "&= ") || strings.Contains(v, "&") {
					t.Fatalf("accepted parameter %q=%q", k, v)
				}
			}
		}
	})
}
