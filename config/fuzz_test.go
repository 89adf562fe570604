package config

import (
	"reflect"
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
