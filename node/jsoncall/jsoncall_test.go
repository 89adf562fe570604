package jsoncall

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"testing"
	"time"

	hessian "github.com/apache/dubbo-go-hessian2"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// metadata is the registry's metadata of one service, org.example.Greeter.
type metadata struct{}

func (metadata) ParamTypes(_ context.Context, iface, _, _, method string, argc int) ([]string, error) {
	if iface != "org.example.Greeter" {
		return nil, &rpc.CallError{Kind: rpc.ErrBadRequest, Service: iface, Method: method, Detail: "cannot read the service definition"}
	}
	switch {
	case method == "add" && argc == 2:
		return []string{"int", "int"}, nil
	case method == "add":
		return nil, &rpc.CallError{Kind: rpc.ErrBadRequest, Service: iface, Method: method, Detail: "no overload of add takes that many arguments"}
	}
	return nil, &rpc.CallError{Kind: rpc.ErrServiceNotFound, Service: iface, Method: method, Detail: "the service definition has no method " + method}
}

func raws(args ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(args))
	for i, a := range args {
		out[i] = json.RawMessage(a)
	}
	return out
}

func TestParamTypes(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	tests := []struct {
		name    string
		r       TypeResolver
		c       Call
		want    []string
		wantErr error
	}{
		{"given", metadata{}, Call{Interface: "org.example.Greeter", Method: "add", Args: raws("1", "2"), Types: []string{"long", "long"}}, []string{"long", "long"}, nil},
		{"given: none", metadata{}, Call{Interface: "org.example.Greeter", Method: "add", Types: []string{}}, []string{}, nil},
		{"from the metadata", metadata{}, Call{Interface: "org.example.Greeter", Method: "add", Args: raws("1", "2")}, []string{"int", "int"}, nil},
		{"metadata without the method", metadata{}, Call{Interface: "org.example.Greeter", Method: "nope", Args: raws(`"x"`)}, nil, rpc.ErrServiceNotFound},
		{"no overload of that many: inferred", metadata{}, Call{Interface: "org.example.Greeter", Method: "add", Args: raws(`"x"`)}, []string{"java.lang.String"}, nil},
		{"no metadata: inferred", metadata{}, Call{Interface: "org.example.Other", Method: "m", Args: raws(`"x"`, "true")}, []string{"java.lang.String", "boolean"}, nil},
		{"no resolver: inferred", nil, Call{Interface: "org.example.Greeter", Method: "add", Args: raws(`"x"`)}, []string{"java.lang.String"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParamTypes(context.Background(), tt.r, tt.c, quiet)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("types %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestInvocation(t *testing.T) {
	plain := func(method string, types []string, args []any, att map[string]any) *rpc.Invocation {
		return &rpc.Invocation{Service: "org.example.Greeter", Version: "1.0.0", Method: method, ParamTypes: types, Args: args, Attachments: att}
	}
	genericOf := func(method string, types []string, args []hessian.Object, att map[string]any) *rpc.Invocation {
		att["generic"] = "true"
		return &rpc.Invocation{Service: "org.example.Greeter", Version: "1.0.0", Method: "$invoke",
			ParamTypes:  []string{"java.lang.String", "java.lang.String[]", "java.lang.Object[]"},
			Args:        []any{method, types, args},
			Attachments: att}
	}
	tests := []struct {
		name  string
		c     Call
		types []string
		want  *rpc.Invocation
	}{
		{"JDK types: plain", Call{Method: "add", Args: raws("1", "2")}, []string{"int", "long"},
			plain("add", []string{"int", "long"}, []any{int32(1), int64(2)}, nil)},
		{"a POJO: generic", Call{Method: "greet", Args: raws(`{"name":"x"}`)}, []string{"org.example.Person"},
			genericOf("greet", []string{"org.example.Person"}, []hessian.Object{map[any]any{"name": "x", "class": "org.example.Person"}}, map[string]any{})},
		{"generic asked for", Call{Method: "add", Args: raws("1", "2"), Generic: true}, []string{"int", "int"},
			genericOf("add", []string{"int", "int"}, []hessian.Object{int32(1), int32(2)}, map[string]any{})},
		{"attachments, the timeout over them", Call{Method: "sayHello", Args: raws(`"x"`), Timeout: 1500 * time.Millisecond,
			Attachments: map[string]string{"timeout": "9", "dubbo.tag": "gray"}}, []string{"java.lang.String"},
			plain("sayHello", []string{"java.lang.String"}, []any{"x"}, map[string]any{"timeout": "1500", "dubbo.tag": "gray"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.c.Interface, tt.c.Version = "org.example.Greeter", "1.0.0"
			got, err := Invocation(tt.c, tt.types)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("invocation %#v\nwant       %#v", got, tt.want)
			}
		})
	}
	if _, err := Invocation(Call{Method: "add", Args: raws(`"two"`)}, []string{"int"}); !errors.Is(err, rpc.ErrBadRequest) {
		t.Errorf("an argument that does not fit its type: %v, want a bad request", err)
	}
}

// invoker answers with a fixed result and changes the invocation it gets,
// as a filter may.
type invoker struct {
	res *rpc.Result
	err error
}

func (i invoker) Invoke(_ context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	inv.Method, inv.Args = "changed", nil
	return i.res, i.err
}

func TestInvoke(t *testing.T) {
	ex := &rpc.Exception{Class: "java.lang.RuntimeException", Message: "boom"}
	failed := &rpc.CallError{Kind: rpc.ErrNoProvider, Service: "org.example.Greeter", Method: "sayHello"}
	tests := []struct {
		name    string
		inv     invoker
		want    *rpc.Result
		wantErr error
	}{
		{"a value", invoker{res: &rpc.Result{Value: "Hello, x", Provider: "127.0.0.1:20880"}}, &rpc.Result{Value: "Hello, x", Provider: "127.0.0.1:20880"}, nil},
		{"no result", invoker{}, &rpc.Result{}, nil},
		{"an exception is the error, with its provider", invoker{res: &rpc.Result{Exception: ex, Provider: "127.0.0.1:20880"}},
			&rpc.Result{Exception: ex, Provider: "127.0.0.1:20880"}, ex},
		{"a failed call", invoker{err: failed}, nil, rpc.ErrNoProvider},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := &rpc.Invocation{Service: "org.example.Greeter", Method: "sayHello", Args: []any{"x"}}
			got, err := Invoke(context.Background(), tt.inv, inv)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("result %+v, want %+v", got, tt.want)
			}
			if inv.Method != "sayHello" || len(inv.Args) != 1 {
				t.Errorf("the invocation was changed: %+v", inv)
			}
		})
	}
}
