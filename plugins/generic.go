package plugins

import (
	"context"
	"fmt"

	hessian "github.com/apache/dubbo-go-hessian2"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// invokeGeneric serves a generic call (PROTOCOLS.md B.8): $invoke(method,
// parameter types, arguments) with generic=true. POJO arguments arrive as
// maps with a "class" key, which the SDK turns into the handler's types; POJO
// results go back as maps with "class", as Java's GenericFilter does.
func (p *Plugin) invokeGeneric(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	if g := inv.Attachment("generic"); g != "" && g != "true" {
		return nil, p.callError(inv, rpc.ErrBadRequest, "generic="+g+" is not supported; use generic=true")
	}
	if len(inv.Args) != 3 {
		return nil, p.callError(inv, rpc.ErrBadRequest, fmt.Sprintf("%s takes 3 arguments (method, parameter types, arguments), got %d", inv.Method, len(inv.Args)))
	}
	method, ok := inv.Args[0].(string)
	if !ok {
		return nil, p.callError(inv, rpc.ErrBadRequest, fmt.Sprintf("%s: the method name is %T, not a string", inv.Method, inv.Args[0]))
	}
	types, err := stringList(inv.Args[1])
	if err != nil {
		return nil, p.callError(inv, rpc.ErrBadRequest, inv.Method+": parameter types: "+err.Error())
	}
	args, err := anyList(inv.Args[2])
	if err != nil {
		return nil, p.callError(inv, rpc.ErrBadRequest, inv.Method+": arguments: "+err.Error())
	}
	if len(types) != len(args) {
		return nil, p.callError(inv, rpc.ErrBadRequest, fmt.Sprintf("%s: %d parameter types for %d arguments", inv.Method, len(types), len(args)))
	}
	call := &rpc.Invocation{Service: inv.Service, Version: inv.Version, Group: inv.Group, Method: method,
		ParamTypes: types, Args: args, Attachments: inv.Attachments}
	res, err := p.Invoke(ctx, call)
	if err != nil || res.Exception != nil {
		return res, err
	}
	res.Value = generalize(res.Value)
	return res, nil
}

func stringList(v any) ([]string, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case []string:
		return t, nil
	case []any:
		out := make([]string, len(t))
		for i, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("element %d is %T, not a string", i, e)
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, fmt.Errorf("%T is not a list of strings", v)
}

func anyList(v any) ([]any, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case []any:
		return t, nil
	}
	return nil, fmt.Errorf("%T is not a list", v)
}

// generalize turns POJOs the node could not decode into Go types (maps
// keyed "_class" by hessian) into generic maps keyed "class".
func generalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			if k == hessian.ClassKey {
				k = "class"
			}
			out[k] = generalize(e)
		}
		return out
	case map[any]any:
		out := make(map[any]any, len(t))
		for k, e := range t {
			out[k] = generalize(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = generalize(e)
		}
		return out
	}
	return v
}
