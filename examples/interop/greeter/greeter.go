// Package greeter is the example service org.example.Greeter written the way
// a dubbo-go v3.3.0 user writes a hessian2 service: exported methods with a
// context and Go types that map onto the Java signature.
//
//	String sayHello(String name)      -> SayHello(ctx, string) (string, error)
//	int    add(int a, int b)          -> Add(ctx, int32, int32) (int32, error)
//	Map    echoMap(Map m)             -> EchoMap(ctx, any) (map[string]any, error)
//	void   fail(String message)       -> Fail(ctx, string) error
//	String sleep(int ms)              -> Sleep(ctx, int32) (string, error)
//
// dubbo-go's dubbo protocol finds methods by reflection and also answers the
// name with its first letter swapped, so Java's "sayHello" reaches SayHello.
// Arguments are passed to the method as decoded, without conversion: a Java
// int arrives as int32 and a map as map[interface{}]interface{}.
package greeter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
)

// Service identity shared by the provider and the consumer.
const (
	Interface = "org.example.Greeter"
	Version   = "1.0.0"
)

// Handler implements the service.
type Handler struct{}

// SayHello returns "Hello, " + name.
func (Handler) SayHello(_ context.Context, name string) (string, error) {
	return "Hello, " + name, nil
}

// Add returns a + b; int32 is Java's int on the wire.
func (Handler) Add(_ context.Context, a, b int32) (int32, error) {
	return a + b, nil
}

// EchoMap returns its argument as a string-keyed map: dubbo-go's generic
// ($invoke) result conversion collapses maps keyed by interface{}.
func (Handler) EchoMap(_ context.Context, m any) (map[string]any, error) {
	out := map[string]any{}
	switch m := m.(type) {
	case nil:
		return nil, nil
	case map[any]any:
		for k, v := range m {
			out[fmt.Sprint(k)] = v
		}
	case map[string]any:
		for k, v := range m {
			out[k] = v
		}
	default:
		return nil, fmt.Errorf("echoMap: argument is %T, not a map", m)
	}
	return out, nil
}

// Fail always fails with message; the consumer receives it as the
// detailMessage of a java.lang.Throwable.
func (Handler) Fail(_ context.Context, message string) error {
	return errors.New(message)
}

// Sleep waits ms milliseconds, or until the call is cancelled, and returns
// "slept".
func (Handler) Sleep(ctx context.Context, ms int32) (string, error) {
	select {
	case <-time.After(time.Duration(ms) * time.Millisecond):
		return "slept", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// ServiceInfo describes the service for server.Register, which panics on a
// nil ServiceInfo. The dubbo protocol dispatches by reflection on Handler;
// the triple protocol (wrapper mode, hessian2) calls MethodFunc with the
// arguments ReqInitFunc's pointers were decoded into.
func ServiceInfo(h Handler) *common.ServiceInfo {
	// params are the Go types each method's arguments decode into.
	method := func(name string, params func() []any, call func(ctx context.Context, args []any) (any, error)) common.MethodInfo {
		return common.MethodInfo{
			Name:        name,
			Type:        constant.CallUnary,
			ReqInitFunc: func() any { return params() },
			MethodFunc: func(ctx context.Context, args []any, _ any) (any, error) {
				return call(ctx, args)
			},
		}
	}
	arg := func(args []any, i int) any {
		if i < len(args) {
			return args[i]
		}
		return nil
	}
	return &common.ServiceInfo{
		InterfaceName: Interface,
		ServiceType:   h,
		Methods: []common.MethodInfo{
			method("sayHello", func() []any { return []any{new(string)} }, func(ctx context.Context, args []any) (any, error) {
				name, _ := arg(args, 0).(string)
				return h.SayHello(ctx, name)
			}),
			method("add", func() []any { return []any{new(int32), new(int32)} }, func(ctx context.Context, args []any) (any, error) {
				a, _ := arg(args, 0).(int32)
				b, _ := arg(args, 1).(int32)
				return h.Add(ctx, a, b)
			}),
			method("echoMap", func() []any { return []any{new(any)} }, func(ctx context.Context, args []any) (any, error) {
				return h.EchoMap(ctx, arg(args, 0))
			}),
			method("fail", func() []any { return []any{new(string)} }, func(ctx context.Context, args []any) (any, error) {
				msg, _ := arg(args, 0).(string)
				return nil, h.Fail(ctx, msg)
			}),
			method("sleep", func() []any { return []any{new(int32)} }, func(ctx context.Context, args []any) (any, error) {
				ms, _ := arg(args, 0).(int32)
				return h.Sleep(ctx, ms)
			}),
		},
	}
}
