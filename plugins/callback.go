package plugins

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/plugins/internal/wire"
)

// hostServer answers the calls a plugin's handlers make through the node
// (sdk.Client) with the owner's invoker.
type hostServer struct {
	name    string
	log     *slog.Logger
	invoker rpc.Invoker
}

// Prepare decodes a call from the plugin; it runs on a worker, since it goes
// through the consumer pipeline to other providers.
func (h *hostServer) Prepare(call []byte) (run wire.Runner, inline bool) {
	inv, err := wire.DecodeCall(call)
	if err != nil {
		h.log.Warn("plugin sent a call that cannot be decoded", "err", err)
		b := reply(nil, &rpc.CallError{Kind: rpc.ErrBadRequest, Detail: err.Error()})
		return wire.RunFunc(func(context.Context) []byte { return b }), true
	}
	return wire.RunFunc(func(ctx context.Context) []byte { return reply(h.invoke(ctx, inv)) }), false
}

func (h *hostServer) invoke(ctx context.Context, inv *rpc.Invocation) (res *rpc.Result, err error) {
	if h.invoker == nil {
		return nil, &rpc.CallError{Kind: rpc.ErrServiceNotFound, Service: inv.Service, Method: inv.Method,
			Detail: "the node gives plugin " + h.name + " no services to call (plugins.Config.Host is nil)"}
	}
	// The owner's invoker runs on a link worker, where a panic would take
	// the node down.
	defer func() {
		if r := recover(); r != nil {
			h.log.Error("host invoker panicked on a plugin callback", "service", inv.Service, "method", inv.Method, "panic", r)
			res, err = nil, &rpc.CallError{Kind: rpc.ErrProvider, Service: inv.Service, Method: inv.Method, Detail: fmt.Sprint("panic: ", r)}
		}
	}()
	return h.invoker.Invoke(ctx, inv)
}

// reply encodes the outcome of a call; one whose result cannot be encoded
// becomes a provider error saying so.
func reply(res *rpc.Result, callErr error) []byte {
	b, err := wire.EncodeReply(res, callErr)
	if err != nil {
		b = wire.ErrorReply(&rpc.CallError{Kind: rpc.ErrProvider, Detail: "the result cannot be encoded: " + err.Error()})
	}
	return b
}
