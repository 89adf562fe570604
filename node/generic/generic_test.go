package generic

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	hessian "github.com/apache/dubbo-go-hessian2"
	"github.com/apache/dubbo-go-hessian2/java_exception"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// roundTrip encodes v with hessian and decodes it again, as a provider would.
func roundTrip(t *testing.T, v any) (any, []byte) {
	t.Helper()
	enc := hessian.NewEncoder()
	if err := enc.Encode(v); err != nil {
		t.Fatalf("encode %#v: %v", v, err)
	}
	buf := append([]byte(nil), enc.Buffer()...)
	got, err := hessian.NewDecoder(buf).Decode()
	if err != nil {
		t.Fatalf("decode % x: %v", buf, err)
	}
	return got, buf
}

func TestFromJSON(t *testing.T) {
	user := map[any]any{"class": "com.example.User", "name": "ann", "age": int32(3)}
	tests := []struct {
		typ, json string
		want      any
		// wire is what decoding the hessian bytes gives back, when it is
		// not want itself; tag is the first byte expected on the wire.
		wire any
		tag  byte
	}{
		{typ: "java.lang.String", json: `"world"`, want: "world", tag: 0x05},
		{typ: "String", json: `""`, want: "", tag: 0x00},
		{typ: "java.lang.String", json: `null`, want: nil, tag: 'N'},
		{typ: "char", json: `"x"`, want: "x", tag: 0x01},
		{typ: "int", json: `42`, want: int32(42), tag: 0x90 + 42},
		{typ: "java.lang.Integer", json: `-2147483648`, want: int32(-2147483648), tag: 'I'},
		{typ: "int", json: `4.2e1`, want: int32(42)},
		{typ: "int", json: `7.0`, want: int32(7)},
		{typ: "short", json: `-32768`, want: int32(-32768)},
		{typ: "byte", json: `127`, want: int32(127)},
		{typ: "java.lang.Integer", json: `null`, want: nil},
		{typ: "long", json: `42`, want: int64(42), tag: 0xf8},
		{typ: "java.lang.Long", json: `9223372036854775807`, want: int64(9223372036854775807), tag: 'L'},
		{typ: "double", json: `1.5`, want: 1.5, tag: 'D'},
		{typ: "java.lang.Double", json: `3`, want: 3.0},
		{typ: "float", json: `0.25`, want: 0.25},
		{typ: "boolean", json: `true`, want: true, tag: 'T'},
		{typ: "java.lang.Boolean", json: `false`, want: false, tag: 'F'},
		{typ: "byte[]", json: `"AQL/"`, want: []byte{1, 2, 255}, tag: 0x23},
		{typ: "byte[]", json: `[1, -1, 255]`, want: []byte{1, 255, 255}},
		{typ: "[B", json: `[]`, want: []byte{}},
		{typ: "char[]", json: `"abc"`, want: "abc"},
		{typ: "java.util.Date", json: `1700000000000`, want: time.UnixMilli(1700000000000).UTC(), tag: 'J'},
		{typ: "java.util.Date", json: `"2024-05-01T10:00:00Z"`, want: time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)},
		{
			typ: "java.util.Map", json: `{"a":1,"b":[1,"x",null],"c":{"d":3000000000,"e":1.5,"f":true}}`,
			want: map[any]any{"a": int32(1), "b": []any{int32(1), "x", nil},
				"c": map[any]any{"d": int64(3000000000), "e": 1.5, "f": true}},
			tag: 'H',
		},
		{typ: "java.util.HashMap", json: `{}`, want: map[any]any{}, tag: 'H'},
		{
			typ: "java.util.Map<java.lang.Integer, java.lang.Long>", json: `{"1":2,"-3":4}`,
			want: map[any]any{int32(1): int64(2), int32(-3): int64(4)},
		},
		{
			typ: "java.util.Map<String, java.util.List<long>>", json: `{"k":[1,2]}`,
			want: map[any]any{"k": []any{int64(1), int64(2)}},
		},
		{typ: "java.util.List", json: `[1, "a", {"b": 2}]`, want: []any{int32(1), "a", map[any]any{"b": int32(2)}}, tag: 0x58},
		{typ: "java.util.ArrayList<java.lang.Long>", json: `[1, null]`, want: []any{int64(1), nil}},
		{typ: "java.util.Set<com.example.User>", json: `[{"name":"ann","age":3}]`, want: []any{user}},
		{typ: "int[]", json: `[1, 2]`, want: []int32{1, 2}, tag: 'V'},
		{typ: "[I", json: `[3]`, want: []int32{3}},
		{typ: "short[]", json: `[1]`, want: []int16{1}, wire: []int32{1}},
		{typ: "long[]", json: `[1, 2]`, want: []int64{1, 2}},
		{typ: "float[]", json: `[1.5]`, want: []float32{1.5}, wire: []float64{1.5}},
		{typ: "double[]", json: `[1.5]`, want: []float64{1.5}},
		{typ: "boolean[]", json: `[true, false]`, want: []bool{true, false}},
		{typ: "java.lang.String[]", json: `["a", "b"]`, want: []string{"a", "b"}},
		{typ: "[Ljava.lang.String;", json: `["a"]`, want: []string{"a"}},
		{typ: "java.lang.String...", json: `["a"]`, want: []string{"a"}},
		{typ: "java.lang.String[]", json: `["a", null]`, want: []hessian.Object{"a", nil}},
		{typ: "java.lang.Object[]", json: `[1, "a"]`, want: []hessian.Object{int32(1), "a"}},
		{typ: "java.lang.Long[]", json: `[1]`, want: []hessian.Object{int64(1)}},
		{typ: "int[][]", json: `[[1], []]`, want: []hessian.Object{[]int32{1}, []int32{}}},
		{typ: "int[]", json: `null`, want: nil},
		{typ: "java.lang.Object", json: `7`, want: int32(7)},
		{typ: "java.lang.Object", json: `3000000000`, want: int64(3000000000)},
		{typ: "java.lang.Object", json: `1e3`, want: 1000.0},
		{typ: "java.lang.Object", json: `99999999999999999999`, want: 1e20},
		{typ: "java.lang.Object", json: `"s"`, want: "s"},
		{typ: "java.lang.Object", json: `null`, want: nil},
		{typ: "com.example.User", json: `{"name":"ann","age":3}`, want: user, tag: 'H'},
		{
			typ: "com.example.User", json: `{"class":"com.example.Admin","name":"bob"}`,
			want: map[any]any{"class": "com.example.Admin", "name": "bob"},
		},
		{typ: "com.example.Color", json: `"RED"`, want: "RED"},
		{typ: " java.lang.String ", json: ` "x" `, want: "x"},
	}
	for _, tt := range tests {
		t.Run(tt.typ+"="+tt.json, func(t *testing.T) {
			got, err := FromJSON(tt.typ, json.RawMessage(tt.json))
			if err != nil {
				t.Fatalf("FromJSON: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("FromJSON = %#v (%T), want %#v (%T)", got, got, tt.want, tt.want)
			}
			decoded, buf := roundTrip(t, got)
			wire := tt.wire
			if wire == nil {
				wire = tt.want
			}
			if wt, ok := wire.(time.Time); ok {
				if dt, ok := decoded.(time.Time); !ok || !dt.Equal(wt) {
					t.Fatalf("decoded %#v, want %v", decoded, wt)
				}
			} else if !reflect.DeepEqual(decoded, wire) {
				t.Fatalf("decoded %#v (%T) from % x, want %#v (%T)", decoded, decoded, buf, wire, wire)
			}
			if tt.tag != 0 && buf[0] != tt.tag {
				t.Fatalf("wire starts % x, want %02x", buf, tt.tag)
			}
		})
	}
}

// TestFromJSONWireTypes checks the hessian list types Java relies on to
// read arrays and generic-call argument lists.
func TestFromJSONWireTypes(t *testing.T) {
	tests := []struct{ typ, json, listType string }{
		{"int[]", `[1]`, "[int"},
		{"long[]", `[1]`, "[long"},
		{"short[]", `[1]`, "[short"},
		{"float[]", `[1]`, "[float"},
		{"double[]", `[1]`, "[double"},
		{"boolean[]", `[true]`, "[boolean"},
		{"java.lang.String[]", `["a"]`, "[string"},
		{"java.lang.Object[]", `["a"]`, "[object"},
		{"com.example.User[]", `[{}]`, "[object"},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			v, err := FromJSON(tt.typ, json.RawMessage(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			_, buf := roundTrip(t, v)
			// 'V', then the type as a short string: length byte and text.
			if buf[0] != 'V' || int(buf[1]) != len(tt.listType) || string(buf[2:2+len(tt.listType)]) != tt.listType {
				t.Fatalf("wire % x, want V %q", buf, tt.listType)
			}
		})
	}
}

func TestFromJSONErrors(t *testing.T) {
	tests := []struct{ typ, json, msg string }{
		{"int", `"abc"`, `want int, got "abc"`},
		{"int", `1.5`, `want int, got 1.5 (not an integer)`},
		{"int", `2147483648`, `want int, got 2147483648 (out of range)`},
		{"short", `40000`, `want short, got 40000 (out of range)`},
		{"byte", `-129`, `(out of range)`},
		{"long", `9223372036854775808`, `want long, got 9223372036854775808 (out of range)`},
		{"long", `1e30`, `(out of range)`},
		{"int", `null`, `want int, got null (a primitive cannot be null)`},
		{"boolean", `1`, `want boolean, got 1`},
		{"java.lang.String", `42`, `want String, got 42`},
		{"char", `"ab"`, `want char, got "ab"`},
		{"float", `1e39`, `want float, got 1e39 (out of range)`},
		{"double", `"x"`, `want double, got "x"`},
		{"java.util.Map", `[1]`, `want Map, got [1]`},
		{"java.util.List", `{}`, `want List, got {}`},
		{"java.util.List<int>", `[1, "x"]`, `at [1]: want int, got "x"`},
		{"java.util.Map<String,int>", `{"a": 1, "b": true}`, `at .b: want int, got true`},
		{"java.util.Map<java.lang.Integer,String>", `{"x": "y"}`, `at {x}: want Integer, got "x"`},
		{"int[]", `[1, null]`, `at [1]: want int, got null`},
		{"int[]", `{"a":1}`, `want int[], got {"a":1}`},
		{"byte[]", `"!!"`, `want byte[], got "!!" (base64`},
		{"byte[]", `[256]`, `at [0]: want byte, got 256`},
		{"com.example.User", `[1]`, `want com.example.User, got [1]`},
		{"com.example.User", `{"class": 3}`, `at .class: want a class name string, got 3`},
		{"java.util.Date", `"yesterday"`, `want Date, got "yesterday"`},
		{"java.lang.String", `world`, `malformed JSON for String`},
		{"java.lang.String", `"a" "b"`, `more than one JSON value`},
		{"java.lang.String", ``, `empty value`},
		{"java.lang.Object", `1e999`, `out of range for double`},
		{"java.util.List<", `[]`, `unbalanced`},
		{"int[", `[]`, `bad Java type name`},
		{"int", `"` + strings.Repeat("x", 100) + `"`, `got "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…`},
	}
	for _, tt := range tests {
		t.Run(tt.typ+"="+tt.json, func(t *testing.T) {
			v, err := FromJSON(tt.typ, json.RawMessage(tt.json))
			if err == nil {
				t.Fatalf("FromJSON = %#v, want error", v)
			}
			if !errors.Is(err, rpc.ErrBadRequest) {
				t.Errorf("error %v is not ErrBadRequest", err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q, want it to contain %q", err, tt.msg)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	raws := []json.RawMessage{json.RawMessage(`1`), json.RawMessage(`"abc"`)}
	got, err := Args([]string{"int", "long"}, []json.RawMessage{raws[0], json.RawMessage(`2`)})
	if err != nil || !reflect.DeepEqual(got, []any{int32(1), int64(2)}) {
		t.Fatalf("Args = %#v, %v", got, err)
	}
	tests := []struct {
		types []string
		msg   string
	}{
		{[]string{"int", "int"}, `argument 2: want int, got "abc"`},
		{[]string{"int"}, `1 argument types (int) for 2 arguments`},
	}
	for _, tt := range tests {
		_, err := Args(tt.types, raws)
		if err == nil || !errors.Is(err, rpc.ErrBadRequest) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("Args(%v) error = %v, want bad request containing %q", tt.types, err, tt.msg)
		}
	}
}

func TestInferTypes(t *testing.T) {
	args := []string{`"world"`, `1`, `-2147483648`, `2147483648`, `1.5`, `1e3`, `true`, `false`,
		`null`, `[1]`, `{"a":1}`, `{"class":"com.example.User","name":"x"}`, `{"class":1}`, ``, ` "pad" `}
	want := []string{"java.lang.String", "int", "int", "long", "double", "double", "boolean", "boolean",
		"java.lang.Object", "java.util.List", "java.util.Map", "com.example.User", "java.util.Map", "java.lang.Object", "java.lang.String"}
	raws := make([]json.RawMessage, len(args))
	for i, a := range args {
		raws[i] = json.RawMessage(a)
	}
	got := InferTypes(raws)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("InferTypes = %q\nwant %q", got, want)
	}
	// Whatever is inferred must convert the same argument.
	for i, raw := range raws {
		if len(raw) == 0 {
			continue
		}
		if _, err := FromJSON(got[i], raw); err != nil {
			t.Errorf("FromJSON(%s, %s): %v", got[i], raw, err)
		}
	}
}

// pojoUser is a registered Go POJO, as a decoded result might contain.
type pojoUser struct {
	Name  string
	Age   int32
	Email string `hessian:"mail"`
}

func (pojoUser) JavaClassName() string { return "com.example.PojoUser" }

func TestToJSON(t *testing.T) {
	hessian.RegisterPOJO(&pojoUser{})
	self := map[any]any{"k": "v"}
	self["me"] = self
	ex := java_exception.NewIllegalArgumentException("bad name")
	tests := []struct {
		name string
		in   any
		want string // JSON
	}{
		{"nil", nil, `null`},
		{"string", "x", `"x"`},
		{"int32", int32(-3), `-3`},
		{"int64 keeps digits", int64(9007199254740993), `9007199254740993`},
		{"float", 1.5, `1.5`},
		{"nan", nanValue(), `"NaN"`},
		{"bool", true, `true`},
		{"bytes", []byte{1, 2, 255}, `"AQL/"`},
		{"time", time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC), `"2024-05-01T10:00:00Z"`},
		{"untyped map", map[any]any{"a": int32(1), int32(2): []any{"x"}, true: nil}, `{"2":["x"],"a":1,"true":null}`},
		{"generic pojo map", map[any]any{"class": "com.example.User", "name": "ann"}, `{"class":"com.example.User","name":"ann"}`},
		{"unknown class object", map[string]any{"_class": "com.example.User", "name": "ann"}, `{"class":"com.example.User","name":"ann"}`},
		{"typed lists", []any{[]int32{1}, []int64{2}, []string{"s"}, []hessian.Object{nil, 1.5}}, `[[1],[2],["s"],[null,1.5]]`},
		{"registered pojo", &pojoUser{Name: "ann", Age: 3, Email: "a@x"}, `{"age":3,"class":"com.example.PojoUser","mail":"a@x","name":"ann"}`},
		{"exception", ex, `{"class":"java.lang.IllegalArgumentException","message":"bad name"}`},
		{"cycle", self, `{"k":"v","me":null}`},
		{"pointer", ptr(int32(5)), `5`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(ToJSON(tt.in))
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			if string(b) != tt.want {
				t.Fatalf("ToJSON → %s, want %s", b, tt.want)
			}
		})
	}
}

// TestToJSONDecoded renders values as they come out of the hessian decoder,
// including an exception whose cause refers to itself (B.9).
func TestToJSONDecoded(t *testing.T) {
	ex := java_exception.NewRuntimeException("boom")
	ex.Cause = ex
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"exception with self cause", ex, `{"class":"java.lang.RuntimeException","message":"boom"}`},
		{"generic map result", map[any]any{"class": "com.example.User", "tags": []string{"a"}, "n": int64(1)},
			`{"class":"com.example.User","n":1,"tags":["a"]}`},
		{"java map", map[string]any{"x": []int32{1, 2}}, `{"x":[1,2]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decoded, _ := roundTrip(t, tt.in)
			b, err := json.Marshal(ToJSON(decoded))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Fatalf("ToJSON(%#v) → %s, want %s", decoded, b, tt.want)
			}
		})
	}
}

// TestRoundTripJSON: JSON → Java value → hessian → decoded → JSON gives the
// same JSON back for the example service's shapes.
func TestRoundTripJSON(t *testing.T) {
	tests := []struct{ typ, json string }{
		{"java.lang.String", `"Hello, world"`},
		{"int", `3`},
		{"long", `-9223372036854775808`},
		{"java.util.Map", `{"a":1,"b":{"c":[true,null,"x"]},"d":2.5}`},
		{"com.example.User", `{"age":3,"class":"com.example.User","name":"ann"}`},
		{"java.lang.String[]", `["a","b"]`},
		{"byte[]", `"AQI="`},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			v, err := FromJSON(tt.typ, json.RawMessage(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			decoded, _ := roundTrip(t, v)
			b, err := json.Marshal(ToJSON(decoded))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.json {
				t.Fatalf("round trip → %s, want %s", b, tt.json)
			}
		})
	}
}

func nanValue() float64 {
	zero := 0.0
	return zero / zero
}

func ptr[T any](v T) *T { return &v }

func TestParseTypes(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  bool
	}{
		{"", []string{}, false},
		{"java.lang.String,int", []string{"java.lang.String", "int"}, false},
		{" java.util.Map<String, int> , long[] ", []string{"java.util.Map<String, int>", "long[]"}, false},
		{"int,,long", nil, true},
		{"java.util.Map<String", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseTypes(tt.in)
		if (err != nil) != tt.err || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseTypes(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.err)
		}
		if err != nil && !errors.Is(err, rpc.ErrBadRequest) {
			t.Errorf("ParseTypes(%q) error %v is not ErrBadRequest", tt.in, err)
		}
	}
}

// An argument that does not convert is a bad request to every caller.
func TestArgErrorIsABadRequest(t *testing.T) {
	if k := rpc.ErrorKind(fmt.Errorf("call: %w", &ArgError{Msg: "m"})); k != rpc.KindBadRequest {
		t.Errorf("ErrorKind(ArgError) = %q, want %q", k, rpc.KindBadRequest)
	}
}

func TestInvocation(t *testing.T) {
	inv := Invocation("org.example.Greeter", "1.0.0", "g", "add", []string{"int", "int"}, []any{int32(1), int32(2)})
	if inv.Method != "$invoke" || inv.Attachment("generic") != "true" || inv.Service != "org.example.Greeter" ||
		inv.Version != "1.0.0" || inv.Group != "g" || !reflect.DeepEqual(inv.ParamTypes, []string{"java.lang.String", "java.lang.String[]", "java.lang.Object[]"}) {
		t.Fatalf("Invocation = %+v", inv)
	}
	// On the wire: "add", a "[string" list and an "[object" list (B.8).
	want := []any{"add", []string{"int", "int"}, []hessian.Object{int32(1), int32(2)}}
	for i, a := range inv.Args {
		decoded, buf := roundTrip(t, a)
		if !reflect.DeepEqual(decoded, want[i]) {
			t.Errorf("argument %d decodes to %#v from % x, want %#v", i, decoded, buf, want[i])
		}
	}
}
