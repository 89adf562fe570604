package plugins

import (
	"context"
	"fmt"

	"github.com/dubbo-lab/dubbo/node/generic"
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
	method, types, args, err := generic.Unpack(inv.Args)
	if err != nil {
		return nil, p.callError(inv, rpc.ErrBadRequest, err.Error())
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
	res.Value = generic.Generalize(res.Value)
	return res, nil
}
