// Package providertest holds the example service org.example.Greeter as an
// in-process provider.Service, for tests of the provider, the consumer and
// anything that needs a real Dubbo service to call.
package providertest

import (
	"context"
	"fmt"
	"time"

	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// The example service's coordinates (docs/ARCHITECTURE.md, "Contracts").
const (
	GreeterInterface = "org.example.Greeter"
	GreeterVersion   = "1.0.0"
)

// GreeterMethods describe org.example.Greeter.
var GreeterMethods = []provider.Method{
	{Name: "sayHello", ParamTypes: []string{"java.lang.String"}, ReturnType: "java.lang.String"},
	{Name: "add", ParamTypes: []string{"int", "int"}, ReturnType: "int"},
	{Name: "echoMap", ParamTypes: []string{"java.util.Map"}, ReturnType: "java.util.Map"},
	{Name: "fail", ParamTypes: []string{"java.lang.String"}, ReturnType: "void"},
	{Name: "sleep", ParamTypes: []string{"int"}, ReturnType: "java.lang.String"},
}

// Greeter returns the example service. onCall, if not nil, is called with
// every invocation before it runs (tests count calls with it).
func Greeter(onCall func(inv *rpc.Invocation)) provider.Service {
	return provider.Service{
		Interface: GreeterInterface,
		Version:   GreeterVersion,
		Methods:   GreeterMethods,
		Invoker: rpc.InvokerFunc(func(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
			if onCall != nil {
				onCall(inv)
			}
			return greet(ctx, inv)
		}),
	}
}

func greet(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	switch inv.Method {
	case "sayHello":
		return &rpc.Result{Value: "Hello, " + inv.Args[0].(string)}, nil
	case "add":
		return &rpc.Result{Value: int(inv.Args[0].(int32)) + int(inv.Args[1].(int32))}, nil
	case "echoMap":
		return &rpc.Result{Value: inv.Args[0]}, nil
	case "fail":
		msg, _ := inv.Args[0].(string)
		return &rpc.Result{Exception: &rpc.Exception{Class: "java.lang.IllegalStateException", Message: msg}}, nil
	case "sleep":
		t := time.NewTimer(time.Duration(inv.Args[0].(int32)) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			return &rpc.Result{Value: "slept"}, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("sleep interrupted: %w", ctx.Err())
		}
	}
	return nil, fmt.Errorf("greeter: no method %s", inv.Method)
}
