package mock

import (
	"testing"

	"github.com/dubbo-lab/dubbo/node/generic"
)

// FuzzParse checks that no setting panics Parse or Value, that a setting
// parses the same way twice, and that values are what a provider's answer
// could be (generic.ToJSON renders them).
func FuzzParse(f *testing.F) {
	f.Add("force:return [{id:1, name:\"hi1\"}]", "java.util.List<org.example.User>")
	f.Add("fail:throw java.lang.IllegalStateException", "")
	f.Add("return empty", "org.example.User")
	f.Add("force:return%20%7B%22a%22%3A1%7D", "java.util.Map<java.lang.String,java.lang.Integer>")
	f.Add("return '12'", "long")
	f.Fuzz(func(t *testing.T, setting, returnType string) {
		m, err := Parse(setting)
		if err != nil || m == nil {
			return
		}
		if again, err := Parse(setting); err != nil || *again != *m {
			t.Fatalf("parsed %+v, then %+v, %v", m, again, err)
		}
		if m.Throw {
			return
		}
		v, err := m.Value(returnType, func(string) map[string]string { return map[string]string{"id": "int"} })
		if err == nil {
			generic.ToJSON(v)
		}
	})
}
