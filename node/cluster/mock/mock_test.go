package mock

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// Java's MockInvokerTest.testNormalizeMock and the settings of
// MockClusterInvokerTest.
func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want *Mock // nil: off
		err  bool
	}{
		{"", nil, false}, {"false", nil, false}, {"0", nil, false}, {"null", nil, false}, {"N/A", nil, false}, {"  ", nil, false},
		{"return", &Mock{Return: "null"}, false},
		{"return null", &Mock{Return: "null"}, false},
		{"return ", &Mock{Return: "null"}, false},
		{"force:return null", &Mock{Force: true, Return: "null"}, false},
		{"force:return 1688", &Mock{Force: true, Return: "1688"}, false},
		{"fail:return x", &Mock{Return: "x"}, false},
		{"return aa", &Mock{Return: "aa"}, false},
		{"force:return [`hi`,`hi2`]", &Mock{Force: true, Return: `["hi","hi2"]`}, false},
		{"force:return%20%7B%22a%22%3A1%7D", &Mock{Force: true, Return: `{"a":1}`}, false},
		{"force:return+null", &Mock{Force: true, Return: "null"}, false},
		{"return 1+1", &Mock{Return: "1 1"}, false}, // as Java decodes it
		{"return 100%", &Mock{Return: "100%"}, false},
		{"throw", &Mock{Throw: true}, false},
		{"force:throw ", &Mock{Force: true, Throw: true}, false},
		{"fail:throw java.lang.IllegalStateException", &Mock{Throw: true, Exception: "java.lang.IllegalStateException"}, false},
		{"true", nil, true}, {"default", nil, true}, {"fail", nil, true}, {"force", nil, true},
		{"force:true", nil, true}, {"org.example.GreeterMock", nil, true}, {"fail:", nil, true},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if tt.err {
			if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "force:return <value>") {
				t.Errorf("Parse(%q) error %v, want ErrUnsupported saying what to write", tt.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if tt.want != nil {
			tt.want.Raw = tt.in
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Parse(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

// Java's MockInvokerTest.testParseMockValue and the typed cases of
// MockClusterInvokerTest (String, int, boolean, List<String>, List<User>).
func TestValue(t *testing.T) {
	users := func(class string) map[string]string {
		if class == "org.example.User" {
			return map[string]string{"id": "int", "name": "java.lang.String"}
		}
		return nil
	}
	user := func(id int32, name string) map[any]any {
		return map[any]any{"class": "org.example.User", "id": id, "name": name}
	}
	tests := []struct {
		value, typ string
		want       any
		err        bool
	}{
		{"null", "", nil, false},
		{"empty", "", nil, false},
		{"true", "", true, false},
		{"false", "", false, false},
		{"123", "", int32(123), false},
		{"foo", "", "foo", false},
		{`"foo"`, "", "foo", false},
		{`'foo'`, "", "foo", false},
		{"{}", "", map[any]any{}, false},
		{"[]", "", []any{}, false},
		{"foo", "java.lang.String", "foo", false},
		{"1688", "java.lang.String", "1688", false},
		{"true", "java.lang.String", "true", false},
		{"1688", "int", int32(1688), false},
		{"1688", "long", int64(1688), false},
		{`"1688"`, "java.lang.Integer", int32(1688), false},
		{"true", "boolean", true, false},
		{"true", "java.lang.Boolean", true, false},
		{"empty", "java.util.List<java.lang.String>", []any{}, false},
		{`["hi","hi2"]`, "java.util.List<java.lang.String>", []any{"hi", "hi2"}, false},
		{"empty", "java.util.List<org.example.User>", []any{}, false},
		{`[{id:1, name:"hi1"}, {id:2, name:"hi2"}]`, "java.util.List<org.example.User>", []any{user(1, "hi1"), user(2, "hi2")}, false},
		{`[{id:x, name:"hi1"}]`, "java.util.List<org.example.User>", nil, true},
		{"empty", "org.example.User", user(0, ""), false},
		{`{"id": 7, "name": "x"}`, "org.example.User", user(7, "x"), false},
		{`{"a": 1}`, "java.util.Map", map[any]any{"a": int32(1)}, false},
		{"empty", "int", int32(0), false},
		{"x", "int", nil, true},
		{"null", "void", nil, false},
	}
	for _, tt := range tests {
		m := &Mock{Return: tt.value}
		got, err := m.Value(tt.typ, users)
		if tt.err {
			if err == nil {
				t.Errorf("Value(%s as %q) = %#v, want an error", tt.value, tt.typ, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Value(%s as %q) = %#v, %v; want %#v", tt.value, tt.typ, got, err, tt.want)
		}
	}
}

func TestLenientJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{id:1, name:"hi1"}`:         `{"id":1, "name":"hi1"}`,
		`[{id:1},{ a_b : true }]`:    `[{"id":1},{ "a_b" : true }]`,
		`{"k": "a:b, c:d", e: null}`: `{"k": "a:b, c:d", "e": null}`,
		`[true, x]`:                  `[true, x]`,
		`{id:x}`:                     `{"id":x}`,
	} {
		if got := lenientJSON(in); got != want {
			t.Errorf("lenientJSON(%s) = %s, want %s", in, got, want)
		}
	}
}
