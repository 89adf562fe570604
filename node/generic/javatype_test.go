package generic

import (
	"reflect"
	"testing"
)

func TestParseTypeExported(t *testing.T) {
	tests := []struct {
		in   string
		want JavaType
	}{
		{"java.lang.String", JavaType{Name: "java.lang.String"}},
		{"java.util.Map<java.lang.String, java.util.List<Item>>", JavaType{Name: "java.util.Map", Args: []string{"java.lang.String", "java.util.List<Item>"}}},
		{"[I", JavaType{Name: "int", Dims: 1}},
		{"com.example.Item[][]", JavaType{Name: "com.example.Item", Dims: 2}},
	}
	for _, tt := range tests {
		got, err := ParseType(tt.in)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseType(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	if _, err := ParseType("java.util.List<"); err == nil {
		t.Error("an unbalanced type was parsed")
	}
	for class, list := range map[string]bool{"java.util.ArrayList": true, "java.util.Set": true, "java.util.HashMap": false, "com.example.Item": false} {
		if IsList(class) != list {
			t.Errorf("IsList(%s) = %v", class, !list)
		}
	}
	for class, isMap := range map[string]bool{"java.util.HashMap": true, "java.util.Map": true, "java.util.List": false, "com.example.Item": false} {
		if IsMap(class) != isMap {
			t.Errorf("IsMap(%s) = %v", class, !isMap)
		}
	}
}
