package consumer

import (
	"context"
	"fmt"
	"strings"

	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// GenericCall is one call made without the interface's classes.
type GenericCall struct {
	Interface, Version, Group string
	Method                    string
	// Types are the Java parameter types ("java.lang.String", "int"). When
	// nil they are read from the service definition in the metadata report.
	Types []string
	// Args are plain values: strings, numbers, bools, lists, and maps for
	// objects (with a "class" key naming the Java class when it matters).
	Args []any
	// Attachments travel with the call.
	Attachments map[string]any
}

// Generic calls a method with Dubbo's generic invocation ($invoke, map
// generalization) and returns the provider's generalized result. A
// business exception is returned as the error (an *rpc.Exception).
func (c *Consumer) Generic(ctx context.Context, call GenericCall) (any, error) {
	types := call.Types
	if types == nil {
		var err error
		if types, err = c.ParamTypes(ctx, call.Interface, call.Version, call.Group, call.Method, len(call.Args)); err != nil {
			return nil, err
		}
	}
	if len(types) != len(call.Args) {
		return nil, &rpc.CallError{Kind: rpc.ErrBadRequest, Service: call.Interface, Method: call.Method,
			Detail: fmt.Sprintf("%d parameter types (%s) for %d arguments", len(types), strings.Join(types, ","), len(call.Args))}
	}
	args := call.Args
	if args == nil {
		args = []any{}
	}
	inv := &rpc.Invocation{
		Service: call.Interface, Version: call.Version, Group: call.Group,
		Method:      protocol.MethodInvoke,
		ParamTypes:  protocol.GenericParamTypes(),
		Args:        []any{call.Method, append([]string{}, types...), args},
		Attachments: cloneAttachments(call.Attachments),
	}
	inv.Attachments["generic"] = "true"
	res, err := c.Invoke(ctx, inv)
	if err != nil {
		return nil, err
	}
	if res.Exception != nil {
		return nil, res.Exception
	}
	return res.Value, nil
}

// ParamTypes finds the Java parameter types of method with nargs
// parameters in the service definition its providers reported.
func (c *Consumer) ParamTypes(ctx context.Context, iface, version, group, method string, nargs int) ([]string, error) {
	fail := func(detail string) error {
		return &rpc.CallError{Kind: rpc.ErrBadRequest, Service: iface, Method: method, Detail: detail}
	}
	if c.meta == nil {
		return nil, fail("no metadata report to read parameter types from; give them (--types java.lang.String,int)")
	}
	def, err := c.meta.GetServiceDefinition(ctx, iface, version, group)
	if err != nil {
		return nil, fail(fmt.Sprintf("cannot read the service definition (%v); give the parameter types (--types java.lang.String,int)", err))
	}
	overloads, ok := def.Method(method)
	if !ok {
		names := make([]string, 0, len(def.Methods))
		for _, m := range def.Methods {
			names = append(names, m.Name)
		}
		return nil, &rpc.CallError{Kind: rpc.ErrServiceNotFound, Service: iface, Method: method,
			Detail: fmt.Sprintf("the service definition has no method %s; it has %s", method, strings.Join(names, ", "))}
	}
	var found [][]string
	for _, m := range overloads {
		if len(m.ParameterTypes) == nargs {
			found = append(found, m.ParameterTypes)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, fail(fmt.Sprintf("no overload of %s takes %d arguments", method, nargs))
	}
	var alts []string
	for _, f := range found {
		alts = append(alts, "("+strings.Join(f, ",")+")")
	}
	return nil, fail(fmt.Sprintf("%s is overloaded with %d arguments: %s; give the types", method, nargs, strings.Join(alts, " or ")))
}
