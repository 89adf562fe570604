package sdk

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
	"github.com/dubbo-lab/dubbo/plugins/internal/wire"
)

type callKey struct{}

// callInfo is what Serve puts in the context of each handler call.
type callInfo struct {
	caller    *Caller
	calledOut atomic.Bool // the handler called through the node

	// The caller's attachments: decoded from raw (wire.CallDecoder) when
	// the handler first asks, as most never do.
	raw         []byte
	inv         *rpc.Invocation // whose names the attachments may repeat
	decode      sync.Once
	attachments map[string]any
}

// attachmentMap returns the call's attachments, decoding them first if
// need be.
func (ci *callInfo) attachmentMap() map[string]any {
	ci.decode.Do(func() {
		if ci.raw == nil {
			return
		}
		var err error
		if ci.attachments, err = wire.DecodeAttachments(ci.raw, ci.inv); err != nil {
			// The node wrote them: this is a bug, not the caller's doing.
			slog.Error("the call's attachments cannot be read", "err", err)
		}
	})
	return ci.attachments
}

// Attachments returns the attachments the caller sent with this call (nil
// outside a call). Treat the map as read-only.
func Attachments(ctx context.Context) map[string]any {
	ci, _ := ctx.Value(callKey{}).(*callInfo)
	if ci == nil {
		return nil
	}
	return ci.attachmentMap()
}

// Client returns the Caller that reaches other Dubbo services through the
// node that launched this plugin, from the context of a call or of the
// start hook (Options.Start, Run). Elsewhere (for instance in a Dispatcher
// test) it returns a Caller whose calls fail.
func Client(ctx context.Context) *Caller {
	ci, _ := ctx.Value(callKey{}).(*callInfo)
	if ci == nil || ci.caller == nil {
		return &Caller{}
	}
	return ci.caller
}

// WithClient returns a context whose Client is c; for tests that call a
// Dispatcher directly with a fake node.
func WithClient(ctx context.Context, inv rpc.Invoker) context.Context {
	ci := &callInfo{caller: &Caller{invoker: inv}}
	if old, _ := ctx.Value(callKey{}).(*callInfo); old != nil {
		ci.attachments = old.attachmentMap()
	}
	return context.WithValue(ctx, callKey{}, ci)
}

// outKey is the context key of the attachments a Caller sends.
type outKey struct{}

// WithAttachment returns a context whose calls through a Caller carry the
// attachment key=value, as Java's RpcContext client attachments: for
// instance "dubbo.force.tag" = "true", or "timeout" in milliseconds (the
// timeout of each attempt). An attachment the invocation sets itself wins.
func WithAttachment(ctx context.Context, key string, value any) context.Context {
	old, _ := ctx.Value(outKey{}).(map[string]any)
	m := make(map[string]any, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[key] = value
	return context.WithValue(ctx, outKey{}, m)
}

// WithTag returns a context whose calls through a Caller carry the request
// tag (Dubbo's dubbo.tag attachment): the node's consumer sends them to the
// providers of that tag, else to untagged ones (unless "dubbo.force.tag" is
// "true", see WithAttachment).
func WithTag(ctx context.Context, tag string) context.Context {
	return WithAttachment(ctx, tagKey, tag)
}

// tagKey is Dubbo's request tag attachment (the node's router.KeyTag; not
// imported, to keep the routers out of every plugin binary).
const tagKey = "dubbo.tag"

// withAttachments returns inv with the context's attachments added under
// its own.
func withAttachments(ctx context.Context, inv *rpc.Invocation) *rpc.Invocation {
	out, _ := ctx.Value(outKey{}).(map[string]any)
	if len(out) == 0 {
		return inv
	}
	cp := *inv
	cp.Attachments = make(map[string]any, len(out)+len(inv.Attachments))
	for k, v := range out {
		cp.Attachments[k] = v
	}
	for k, v := range inv.Attachments {
		cp.Attachments[k] = v
	}
	return &cp
}

// Caller calls Dubbo services through the node: the node's consumer side
// picks the provider, routes by tag, applies timeouts and retries, and
// answers. Attachments for a call go in its context (WithAttachment,
// WithTag) or in the invocation.
type Caller struct {
	host    *wire.Link  // set in a plugin
	invoker rpc.Invoker // set by WithClient
}

var errNoNode = errors.New("no node to call through: Client is only usable inside a call or the start hook of sdk.Serve")

// Invoke makes one call; it is an rpc.Invoker. A business exception comes
// back in the Result; failures of the call itself as errors wrapping the
// rpc.Err* categories.
func (c *Caller) Invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	inv = withAttachments(ctx, inv)
	switch {
	case c.invoker != nil:
		return c.invoker.Invoke(ctx, inv)
	case c.host == nil:
		return nil, &rpc.CallError{Kind: rpc.ErrConnection, Service: inv.Service, Method: inv.Method, Detail: errNoNode.Error()}
	}
	if ci, _ := ctx.Value(callKey{}).(*callInfo); ci != nil {
		ci.calledOut.Store(true)
	}
	call, err := wire.EncodeCall(inv)
	if err != nil {
		return nil, &rpc.CallError{Kind: rpc.ErrBadRequest, Service: inv.Service, Method: inv.Method, Detail: err.Error()}
	}
	reply, err := c.host.Call(ctx, call)
	if err != nil {
		if ctx.Err() != nil {
			return nil, &rpc.CallError{Kind: rpc.ErrTimeout, Service: inv.Service, Method: inv.Method, Detail: ctx.Err().Error()}
		}
		return nil, &rpc.CallError{Kind: rpc.ErrConnection, Service: inv.Service, Method: inv.Method, Detail: "node: " + err.Error()}
	}
	res, err := wire.DecodeReply(reply)
	if ce, ok := err.(*rpc.CallError); ok {
		ce.Service, ce.Method = inv.Service, inv.Method
	} else if err != nil {
		return nil, &rpc.CallError{Kind: rpc.ErrProvider, Service: inv.Service, Method: inv.Method, Detail: err.Error()}
	}
	return res, err
}

// Call calls method of service, given as Dubbo's service key
// [group/]interface[:version], with args of the Java types paramTypes, and
// returns the value. A business exception is returned as the error, a
// *rpc.Exception, so returning it from a handler passes it on unchanged.
func (c *Caller) Call(ctx context.Context, service, method string, paramTypes []string, args ...any) (any, error) {
	iface, version, group := url.ParseServiceKey(service)
	inv := &rpc.Invocation{Service: iface, Version: version, Group: group, Method: method, ParamTypes: paramTypes, Args: args}
	res, err := c.Invoke(ctx, inv)
	if err != nil {
		return nil, err
	}
	if res.Exception != nil {
		return nil, res.Exception
	}
	return res.Value, nil
}
