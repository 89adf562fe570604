package sdk_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/dubbo-go-hessian2/java_exception"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/plugins/sdk"
)

type Point struct {
	X, Y  int32
	Label string `hessian:"name"`
}

func (*Point) JavaClassName() string { return "org.example.Point" }

type NoClass struct{ A int }

// Types has one method per Go type whose Java type is checked.
type Types struct{}

func (Types) Str(context.Context, string) (string, error)                    { return "", nil }
func (Types) Ints(context.Context, int8, int16, int32, int64, int) error     { return nil }
func (Types) Floats(context.Context, float32, float64) (bool, error)         { return false, nil }
func (Types) Bytes(context.Context, []byte) ([]byte, error)                  { return nil, nil }
func (Types) List(context.Context, []string) ([]int32, error)                { return nil, nil }
func (Types) Map(context.Context, map[string]any) (map[int64]string, error)  { return nil, nil }
func (Types) Boxes(context.Context, *int32, *int64, *bool) (*float64, error) { return nil, nil }
func (Types) Obj(context.Context, any) (any, error)                          { return nil, nil }
func (Types) Pojo(context.Context, Point) (*Point, error)                    { return nil, nil }
func (Types) When(context.Context, time.Time) (time.Time, error)             { return time.Time{}, nil }
func (Types) Override(context.Context, int32) (int32, error)                 { return 0, nil }
func (Types) NotDubbo(int) int                                               { return 0 } // no ctx: not served

func TestJavaTypes(t *testing.T) {
	d, err := sdk.NewDispatcher(sdk.Service{Interface: "org.example.Types", Handler: Types{},
		Signatures: map[string]sdk.Signature{"override": {Params: []string{"java.lang.Integer"}}}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]sdk.Signature{
		"str":      {[]string{"java.lang.String"}, "java.lang.String"},
		"ints":     {[]string{"byte", "short", "int", "long", "long"}, "void"},
		"floats":   {[]string{"float", "double"}, "boolean"},
		"bytes":    {[]string{"byte[]"}, "byte[]"},
		"list":     {[]string{"java.util.List"}, "java.util.List"},
		"map":      {[]string{"java.util.Map"}, "java.util.Map"},
		"boxes":    {[]string{"java.lang.Integer", "java.lang.Long", "java.lang.Boolean"}, "java.lang.Double"},
		"obj":      {[]string{"java.lang.Object"}, "java.lang.Object"},
		"pojo":     {[]string{"org.example.Point"}, "org.example.Point"},
		"when":     {[]string{"java.util.Date"}, "java.util.Date"},
		"override": {[]string{"java.lang.Integer"}, "int"},
	}
	got := d.Signatures("org.example.Types")
	if len(got) != len(want) {
		t.Fatalf("signatures = %+v", got)
	}
	for name, sig := range got {
		if !reflect.DeepEqual(sig, want[name]) {
			t.Errorf("%s = %+v, want %+v", name, sig, want[name])
		}
	}
}

type badUnsigned struct{}

func (badUnsigned) M(context.Context, uint32) error { return nil }

type badStruct struct{}

func (badStruct) M(context.Context, NoClass) error { return nil }

type badShape struct{}

func (badShape) M(context.Context) (int, int) { return 0, 0 }

type noMethods struct{}

func TestNewDispatcherErrors(t *testing.T) {
	tests := []struct {
		svc  sdk.Service
		want string
	}{
		{sdk.Service{Interface: "a.B"}, "no Handler"},
		{sdk.Service{Interface: "", Handler: Types{}}, "not a Java class name"},
		{sdk.Service{Interface: "a.B", Handler: badUnsigned{}}, "use int32 or int64"},
		{sdk.Service{Interface: "a.B", Handler: badStruct{}}, "add one returning the Java class"},
		{sdk.Service{Interface: "a.B", Handler: badShape{}}, "must return (T, error) or error"},
		{sdk.Service{Interface: "a.B", Handler: noMethods{}}, "has no methods of the form"},
		{sdk.Service{Interface: "a.B", Handler: Types{}, Signatures: map[string]sdk.Signature{"nope": {}}}, "not a method"},
		{sdk.Service{Interface: "a.B", Handler: Types{}, Signatures: map[string]sdk.Signature{"str": {Params: []string{"a", "b"}}}}, "2 parameter types for 1"},
		{sdk.Service{Interface: "a.B", Handler: Types{}, Settings: sdk.Settings{Executes: -1}},
			`service a.B: Settings: parameter executes: "-1" is not a non-negative integer`},
		{sdk.Service{Interface: "a.B", Handler: Types{}, Settings: sdk.Settings{Parameters: map[string]string{"version": "2"}}},
			"parameter version: written by the provider"},
	}
	for _, tt := range tests {
		_, err := sdk.NewDispatcher(tt.svc)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%T: err = %v, want %q", tt.svc.Handler, err, tt.want)
		}
	}
	if _, err := sdk.NewDispatcher(sdk.Service{Interface: "a.B", Handler: Types{}}, sdk.Service{Interface: "a.B", Version: "0.0.0", Handler: Types{}}); err == nil {
		t.Error("the same service twice was accepted")
	}
}

// Conv echoes its arguments so conversions can be checked.
type Conv struct{}

func (Conv) I32(_ context.Context, v int32) (int32, error)                 { return v, nil }
func (Conv) F64(_ context.Context, v float64) (float64, error)             { return v, nil }
func (Conv) M(_ context.Context, v map[string]any) (map[string]any, error) { return v, nil }
func (Conv) L(_ context.Context, v []int64) ([]int64, error)               { return v, nil }
func (Conv) P(_ context.Context, v *Point) (*Point, error)                 { return v, nil }
func (Conv) B(_ context.Context, v *int32) (*int32, error)                 { return v, nil }
func (Conv) S(_ context.Context, v string) (string, error)                 { return v, nil }

func TestConvert(t *testing.T) {
	d, err := sdk.NewDispatcher(sdk.Service{Interface: "a.Conv", Handler: Conv{}})
	if err != nil {
		t.Fatal(err)
	}
	seven := int32(7)
	tests := []struct {
		method string
		arg    any
		want   any    // value, when ok
		ex     string // exception message part, when not
	}{
		{"i32", int32(7), int32(7), ""},
		{"i32", int64(7), int32(7), ""},
		{"i32", 7.0, int32(7), ""},
		{"i32", 7.5, nil, "got double (Go float64) where int (Go int32) is required"},
		{"i32", int64(1) << 31, nil, "does not fit in int"},
		{"i32", nil, nil, "null where int"},
		{"i32", "7", nil, "got java.lang.String (Go string) where int (Go int32) is required"},
		{"f64", int32(2), 2.0, ""},
		{"m", map[any]any{"a": int32(1)}, map[string]any{"a": int32(1)}, ""},
		{"m", map[any]any{int32(1): "x"}, nil, "key 1"},
		{"m", nil, map[string]any(nil), ""},
		{"l", []any{int32(1), int64(2)}, []int64{1, 2}, ""},
		{"l", []any{"x"}, nil, "element 0"},
		{"p", map[any]any{"class": "org.example.Point", "x": int32(1), "y": int64(2), "name": "n", "extra": true},
			&Point{X: 1, Y: 2, Label: "n"}, ""},
		{"p", map[string]any{"_class": "org.example.Point", "x": "bad"}, nil, "property x"},
		{"p", &Point{X: 3}, &Point{X: 3}, ""},
		{"b", int32(7), &seven, ""},
		{"b", nil, (*int32)(nil), ""},
		{"s", nil, nil, "null where java.lang.String"},
	}
	for _, tt := range tests {
		res, err := d.Invoke(context.Background(), &rpc.Invocation{Service: "a.Conv", Method: tt.method, Args: []any{tt.arg}})
		if err != nil {
			t.Fatalf("%s(%#v): %v", tt.method, tt.arg, err)
		}
		switch {
		case tt.ex == "" && res.Exception != nil:
			t.Errorf("%s(%#v): %v", tt.method, tt.arg, res.Exception)
		case tt.ex == "" && !reflect.DeepEqual(res.Value, tt.want):
			t.Errorf("%s(%#v) = %#v, want %#v", tt.method, tt.arg, res.Value, tt.want)
		case tt.ex != "" && (res.Exception == nil || res.Exception.Class != "java.lang.IllegalArgumentException" || !strings.Contains(res.Exception.Message, tt.ex)):
			t.Errorf("%s(%#v): exception %v, want IllegalArgumentException with %q", tt.method, tt.arg, res.Exception, tt.ex)
		}
	}
}

// Errs returns the error it is given.
type Errs struct{ err error }

func (e Errs) Do(context.Context) error { return e.err }

func TestErrorsBecomeExceptions(t *testing.T) {
	tests := []struct {
		err        error
		class, msg string
	}{
		{errors.New("plain"), "java.lang.RuntimeException", "plain"},
		{java_exception.NewIllegalArgumentException("bad"), "java.lang.IllegalArgumentException", "bad"},
		{&rpc.Exception{Class: "com.example.BizException", Message: "biz"}, "com.example.BizException", "biz"},
	}
	for _, tt := range tests {
		d, err := sdk.NewDispatcher(sdk.Service{Interface: "a.E", Handler: Errs{tt.err}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := d.Invoke(context.Background(), &rpc.Invocation{Service: "a.E", Method: "do"})
		if err != nil || res.Exception == nil || res.Exception.Class != tt.class || res.Exception.Message != tt.msg {
			t.Errorf("%v: %+v, %v", tt.err, res, err)
		}
	}
}

// Strs has the string-to-string shape the dispatcher calls without reflect.
type Strs struct{}

func (Strs) Echo(_ context.Context, s string) (string, error) {
	switch s {
	case "fail":
		return "", java_exception.NewIllegalArgumentException("bad")
	case "panic":
		panic("oops")
	}
	return "echo " + s, nil
}

// TestStringShape checks that a string-to-string method behaves as every
// other: result, error, panic, and an argument of another type.
func TestStringShape(t *testing.T) {
	d, err := sdk.NewDispatcher(sdk.Service{Interface: "a.S", Handler: Strs{}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args       []any
		value      any
		class, msg string
	}{
		{[]any{"x"}, "echo x", "", ""},
		{[]any{"fail"}, nil, "java.lang.IllegalArgumentException", "bad"},
		{[]any{"panic"}, nil, "java.lang.RuntimeException", "panic in a.S.echo: oops"},
		{[]any{int32(1)}, nil, "java.lang.IllegalArgumentException", "argument 1 of echo"},
		{[]any{"a", "b"}, nil, "java.lang.IllegalArgumentException", "takes 1 arguments, got 2"},
	}
	for _, tt := range tests {
		res, err := d.Invoke(context.Background(), &rpc.Invocation{Service: "a.S", Method: "echo", Args: tt.args})
		switch {
		case err != nil:
			t.Errorf("%v: %v", tt.args, err)
		case tt.class == "" && (res.Exception != nil || res.Value != tt.value):
			t.Errorf("%v: %+v, want %v", tt.args, res, tt.value)
		case tt.class != "" && (res.Exception == nil || res.Exception.Class != tt.class || !strings.Contains(res.Exception.Message, tt.msg)):
			t.Errorf("%v: %+v, want %s with %q", tt.args, res, tt.class, tt.msg)
		}
	}
}

// Callback uses the node client.
type Callback struct{}

func (Callback) Ask(ctx context.Context, q string) (any, error) {
	return sdk.Client(ctx).Call(ctx, "g/a.Other:2.0", "answer", []string{"java.lang.String"}, q)
}

func TestClientInDispatcher(t *testing.T) {
	d, err := sdk.NewDispatcher(sdk.Service{Interface: "a.C", Handler: Callback{}})
	if err != nil {
		t.Fatal(err)
	}
	inv := &rpc.Invocation{Service: "a.C", Method: "Ask", Args: []any{"q"}} // Go name works too
	res, _ := d.Invoke(context.Background(), inv)
	if res.Exception == nil || !strings.Contains(res.Exception.Message, "only usable inside a call") {
		t.Errorf("without a node: %+v", res)
	}
	var seen *rpc.Invocation
	ctx := sdk.WithClient(context.Background(), rpc.InvokerFunc(func(_ context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
		seen = inv
		return &rpc.Result{Value: int32(42)}, nil
	}))
	res, _ = d.Invoke(ctx, inv)
	if res.Value != int32(42) || seen.Service != "a.Other" || seen.Group != "g" || seen.Version != "2.0" || seen.Method != "answer" {
		t.Errorf("with a node: %+v, saw %+v", res, seen)
	}
}

func TestServeOutsideNode(t *testing.T) {
	err := sdk.Serve(sdk.Service{Interface: "a.C", Handler: Callback{}})
	if err == nil || !strings.Contains(err.Error(), "provider.plugins") {
		t.Errorf("Serve outside a node: %v", err)
	}
}

func TestServeWithNothing(t *testing.T) {
	if err := sdk.ServeWith(sdk.Options{}); err == nil || !strings.Contains(err.Error(), "use Run") {
		t.Errorf("ServeWith without services or Start: %v", err)
	}
	err := sdk.Run(func(context.Context, *sdk.Caller) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "consumer.plugins") {
		t.Errorf("Run outside a node: %v", err)
	}
}

// WithTag and WithAttachment add attachments to the calls made with the
// context, under the invocation's own; contexts derived later add more and
// leave their parent's alone.
func TestCallerAttachments(t *testing.T) {
	var seen *rpc.Invocation
	ctx := sdk.WithClient(context.Background(), rpc.InvokerFunc(func(_ context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
		seen = inv
		return &rpc.Result{}, nil
	}))
	tagged := sdk.WithTag(ctx, "gray")
	forced := sdk.WithAttachment(tagged, "dubbo.force.tag", "true")
	tests := []struct {
		ctx  context.Context
		own  map[string]any
		want map[string]any
	}{
		{ctx, nil, nil},
		{tagged, nil, map[string]any{"dubbo.tag": "gray"}},
		{forced, nil, map[string]any{"dubbo.tag": "gray", "dubbo.force.tag": "true"}},
		{forced, map[string]any{"dubbo.tag": "blue", "k": "v"}, map[string]any{"dubbo.tag": "blue", "dubbo.force.tag": "true", "k": "v"}},
	}
	for i, tt := range tests {
		inv := &rpc.Invocation{Service: "a.B", Method: "m", Attachments: tt.own}
		if _, err := sdk.Client(tt.ctx).Invoke(tt.ctx, inv); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(seen.Attachments, tt.want) {
			t.Errorf("case %d: the node saw attachments %v, want %v", i, seen.Attachments, tt.want)
		}
		if len(inv.Attachments) != len(tt.own) {
			t.Errorf("case %d: the caller's invocation was changed: %v", i, inv.Attachments)
		}
	}
}
