package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// FuzzTextValue: any --set or DUBBO_* text for a list key either fails
// with an error or gives a list, and any duration text decodes or fails;
// nothing panics.
func FuzzTextValue(f *testing.F) {
	for _, s := range []string{"[]", `["a", "b"]`, "[a, b]", "a,b", "", "[", `[{interface = "x"}]`, "3000", "1.5s"} {
		f.Add(s)
	}
	strs := reflect.TypeOf([]string{})
	structs := reflect.TypeOf([]struct{ A string }{})
	dur := reflect.TypeOf(time.Duration(0))
	f.Fuzz(func(t *testing.T, text string) {
		for _, typ := range []reflect.Type{strs, structs} {
			v, err := textValue(text, typ)
			if err != nil {
				continue
			}
			if k := reflect.ValueOf(v).Kind(); k != reflect.Slice {
				t.Fatalf("textValue(%q, %v) = %#v, not a list", text, typ, v)
			}
		}
		_, _ = durationHook(reflect.TypeOf(""), dur, text)
	})
}

// FuzzLineOf: finding the line of a key, indexed or not, in any text
// never panics and answers a line that exists.
func FuzzLineOf(f *testing.F) {
	f.Add("[[provider.services]]\ninterface = \"a.B\"\n[[provider.services]]\nweight = 5\n", "provider.services[1].weight")
	f.Add("[[consumer.references]]\n[[consumer.references.methods]]\nname = \"m\"\n[[consumer.references]]\n[[consumer.references.methods]]\ntimeout = 1\n",
		"consumer.references[1].methods[0].timeout")
	f.Add("[a.b[0]]\nx = 1\n", "a.b[0].x")
	f.Fuzz(func(t *testing.T, raw, key string) {
		n := lineOf([]byte(raw), key)
		if n < 0 || n > strings.Count(raw, "\n")+1 {
			t.Fatalf("lineOf(%q, %q) = %d", raw, key, n)
		}
	})
}
