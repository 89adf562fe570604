package generic

import (
	"reflect"
	"testing"
)

func TestEmpty(t *testing.T) {
	props := func(class string) map[string]string {
		switch class {
		case "org.example.User":
			return map[string]string{"id": "long", "name": "java.lang.String", "tags": "java.util.List<java.lang.String>", "boss": "org.example.User"}
		}
		return nil
	}
	tests := []struct {
		typ  string
		want any
	}{
		{"int", int32(0)}, {"java.lang.Integer", int32(0)}, {"long", int64(0)}, {"double", float64(0)},
		{"boolean", false}, {"java.lang.String", ""}, {"void", nil}, {"java.util.Date", nil},
		{"java.util.List<java.lang.String>", []any{}}, {"java.util.Map", map[any]any{}},
		{"java.lang.Object", []any{}}, {"int[]", []int32{}}, {"java.lang.String[]", []string{}},
		{"org.example.Other", map[any]any{"class": "org.example.Other"}},
		// Properties two levels deep, as Java: the boss's boss is empty.
		{"org.example.User", map[any]any{"class": "org.example.User", "id": int64(0), "name": "", "tags": []any{},
			"boss": map[any]any{"class": "org.example.User", "id": int64(0), "name": "", "tags": []any{},
				"boss": map[any]any{"class": "org.example.User"}}}},
	}
	for _, tt := range tests {
		got, err := Empty(tt.typ, props)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Empty(%s) = %#v, %v; want %#v", tt.typ, got, err, tt.want)
		}
	}
	if _, err := Empty("java.util.List<", nil); err == nil {
		t.Error("a bad type name gave no error")
	}
}
