package generic

import (
	"reflect"
	"testing"

	hessian "github.com/apache/dubbo-go-hessian2"
)

func TestUnpack(t *testing.T) {
	tests := []struct {
		name    string
		args    []any
		method  string
		types   []string
		values  []any
		wantErr bool
	}{
		{"java lists", []any{"add", []string{"int", "int"}, []any{int32(2), int32(3)}}, "add", []string{"int", "int"}, []any{int32(2), int32(3)}, false},
		{"dubbo-go lists", []any{"sayHello", []any{"java.lang.String"}, []hessian.Object{"w"}}, "sayHello", []string{"java.lang.String"}, []any{"w"}, false},
		{"no types", []any{"sayHello", nil, []any{"w"}}, "sayHello", nil, []any{"w"}, false},
		{"two args", []any{"sayHello", []string{}}, "", nil, nil, true},
		{"method not a string", []any{7, []string{}, []any{}}, "", nil, nil, true},
		{"type not a string", []any{"m", []any{1}, []any{"x"}}, "", nil, nil, true},
		{"count mismatch", []any{"m", []string{"int"}, []any{}}, "", nil, nil, true},
		{"args not a list", []any{"m", []string{"int"}, "x"}, "", nil, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ty, v, err := Unpack(tt.args)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && (m != tt.method || !reflect.DeepEqual(ty, tt.types) || !reflect.DeepEqual(v, tt.values)) {
				t.Errorf("got %q %v %v, want %q %v %v", m, ty, v, tt.method, tt.types, tt.values)
			}
		})
	}
}

func TestGeneralize(t *testing.T) {
	in := map[string]any{hessian.ClassKey: "com.example.User", "name": "n", "pets": []any{map[string]any{hessian.ClassKey: "com.example.Pet"}}}
	want := map[string]any{"class": "com.example.User", "name": "n", "pets": []any{map[string]any{"class": "com.example.Pet"}}}
	if got := Generalize(in); !reflect.DeepEqual(got, want) {
		t.Errorf("Generalize = %v, want %v", got, want)
	}
}

// TestWalk: fix sees every map bottom-up, as Walk's own copy, and what it
// returns takes the map's place; the input is left as it was.
func TestWalk(t *testing.T) {
	in := map[any]any{"a": []any{map[string]any{"x": int32(1)}}, int32(7): map[any]any{"k": "v"}}
	var seen int
	got := Walk(in, func(m any) any {
		seen++
		if sm, ok := m.(map[string]any); ok {
			sm["walked"] = true
			return sm
		}
		return len(m.(map[any]any))
	})
	if seen != 3 {
		t.Errorf("fix saw %d maps, want 3", seen)
	}
	if got != 2 {
		t.Errorf("Walk = %v, want the outer map's replacement 2", got)
	}
	if _, changed := in["a"].([]any)[0].(map[string]any)["walked"]; changed {
		t.Error("Walk changed its input")
	}
}
