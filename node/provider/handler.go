package provider

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/node/generic"
	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats"
	"github.com/dubbo-lab/dubbo/node/transport"
	"github.com/dubbo-lab/dubbo/node/url"
)

// AsyncInvoker is an rpc.Invoker that can also start a call without
// waiting for it (a plugin, whose handler runs in another process):
// InvokeAsync returns at once and calls done exactly once, from any
// goroutine. The provider serves such services without a pool worker.
type AsyncInvoker interface {
	rpc.Invoker
	InvokeAsync(ctx context.Context, inv *rpc.Invocation, done func(*rpc.Result, error))
}

// Handle implements transport.Handler: it routes one request to its
// exporter as Java's DubboProtocol does and answers it.
func (p *Provider) Handle(ctx context.Context, req *protocol.Request) *protocol.Response {
	return p.serve(ctx, req, nil)
}

// Async implements transport.AsyncHandler: plain calls of services whose
// invoker is an AsyncInvoker are started on the IO goroutine, since the
// node's part is decoding and a socket write; the business code runs in
// the plugin. Echo and generic calls take the usual way.
func (p *Provider) Async(req *protocol.Request) bool {
	if p.async.Load() == 0 {
		return false // spare the lookup, which serve does anyway
	}
	switch req.Method {
	case protocol.MethodEcho, protocol.MethodInvoke, protocol.MethodInvokeAsync:
		return false
	}
	e, _ := p.lookupOn(p.dubbo, requestKey(req))
	if e == nil {
		return false
	}
	_, ok := e.svc.Invoker.(AsyncInvoker)
	return ok
}

// asyncCount is 1 for an exporter (nil or not) whose invoker is an
// AsyncInvoker, else 0.
func asyncCount(e *exporter) int32 {
	if e == nil {
		return 0
	}
	if _, ok := e.svc.Invoker.(AsyncInvoker); ok {
		return 1
	}
	return 0
}

// HandleAsync implements transport.AsyncHandler.
func (p *Provider) HandleAsync(ctx context.Context, req *protocol.Request, reply func(*protocol.Response)) {
	if resp := p.serve(ctx, req, reply); resp != nil {
		reply(resp)
	}
}

// requestKey is the service key a request asks for.
func requestKey(req *protocol.Request) string {
	version := req.Attachment(url.KeyVersion)
	if version == "" {
		version = req.Version
	}
	return url.ServiceKey(req.Path, version, req.Attachment(url.KeyGroup))
}

// serve answers req. With finish set, a call of an AsyncInvoker's service
// is only started: serve returns nil and finish gets the response later.
func (p *Provider) serve(ctx context.Context, req *protocol.Request, finish func(*protocol.Response)) (out *protocol.Response) {
	resp := protocol.ResponseTo(req)
	key := requestKey(req)
	e, ep := p.lookupOn(p.dubbo, key)
	if e == nil {
		// Java answers an unexported service with SERVICE_ERROR and this
		// wording, which consumers (ours included) recognise as "not found".
		resp.Status = protocol.StatusServiceError
		resp.ErrorMessage = fmt.Sprintf("Not found exported service: %s:%d in %v, may be version or group mismatch; "+
			"check the interface, version and group of the reference (consumer %s, provider %s)",
			key, p.dubbo.port, p.keysOn(p.dubbo), peer(ctx), p.dubbo.addr())
		return resp
	}
	at := arrival{ep: ep, peer: p.peers.ip(transport.Peer(ctx))}
	if e.token != "" && req.Attachment("token") != e.token {
		// Java's TokenFilter throws, which the exchange layer turns into
		// SERVICE_ERROR with the message.
		resp.Status = protocol.StatusServiceError
		resp.ErrorMessage = fmt.Sprintf("Invalid token! Forbid invoke remote service %s method %s() from consumer %s to provider %s: "+
			"the consumer must send the token published in the provider URL (subscribe through the registry, or set it)",
			e.svc.Interface, req.Method, peer(ctx), p.dubbo.addr())
		return resp
	}
	types, err := protocol.ParseDescriptor(req.ParamDesc)
	if err != nil || len(types) != len(req.Args) {
		resp.Status = protocol.StatusBadRequest
		resp.ErrorMessage = fmt.Sprintf("service %s method %s: parameter descriptor %q does not match %d arguments",
			key, req.Method, req.ParamDesc, len(req.Args))
		return resp
	}
	// The transport already bounds ctx by the same timeout, counted from
	// when the request arrived; a second, later deadline would only cost a
	// timer and a goroutine-safe registration per call.
	if t := timeoutOf(req); t > 0 && !deadlineWithin(ctx, t) {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		if finish == nil {
			defer cancel()
		} else {
			inner := finish
			finish = func(resp *protocol.Response) { cancel(); inner(resp) }
			defer func() {
				if out != nil { // answered without starting anything
					cancel()
				}
			}()
		}
	}

	switch req.Method {
	case protocol.MethodEcho:
		if len(req.Args) != 1 {
			resp.Exception = &protocol.Exception{Class: "java.lang.IllegalArgumentException",
				Message: fmt.Sprintf("$echo of %s takes one argument, got %d", key, len(req.Args))}
			return resp
		}
		resp.Value = req.Args[0]
		return resp
	case protocol.MethodInvoke, protocol.MethodInvokeAsync:
		method, gtypes, args, err := generic.Unpack(req.Args)
		if err != nil {
			resp.Exception = &protocol.Exception{Class: "java.lang.IllegalArgumentException",
				Message: fmt.Sprintf("generic call of %s: %v", key, err)}
			return resp
		}
		return p.invoke(ctx, resp, e, at, method, gtypes, args, req.Attachments, true, req.Size, finish)
	}
	return p.invoke(ctx, resp, e, at, req.Method, types, req.Args, req.Attachments, false, req.Size, finish)
}

// arrival is where a call came in: the endpoint of the service on the
// protocol that carried it, and the consumer's IP.
type arrival struct {
	ep   *endpoint
	peer string
}

// invoke runs one method of e and returns resp filled, or starts it and
// returns nil (serve). size is the request's, for the statistics.
func (p *Provider) invoke(ctx context.Context, resp *protocol.Response, e *exporter, at arrival, name string, types []string,
	args []any, att map[string]any, isGeneric bool, size int, finish func(*protocol.Response)) *protocol.Response {
	m, ok := e.method(name, types)
	if !ok {
		resp.Exception = &protocol.Exception{Class: "java.lang.UnsupportedOperationException",
			Message: fmt.Sprintf("cannot find method [%s] of service [%s]; it has %v", name, e.key, e.methodNames())}
		return resp
	}
	if len(args) != len(m.ParamTypes) {
		resp.Exception = &protocol.Exception{Class: "java.lang.IllegalArgumentException",
			Message: fmt.Sprintf("method %s of service %s takes %d arguments (%s), got %d",
				m.Name, e.key, len(m.ParamTypes), strings.Join(m.ParamTypes, ", "), len(args))}
		return resp
	}
	conv := make([]any, len(args))
	for i, a := range args {
		v, err := toJava(a, m.ParamTypes[i])
		if err != nil {
			resp.Exception = &protocol.Exception{Class: "java.lang.IllegalArgumentException",
				Message: fmt.Sprintf("method %s of service %s, argument %d: %v", m.Name, e.key, i, err)}
			return resp
		}
		conv[i] = v
	}
	inv := &rpc.Invocation{
		Service:     e.svc.Interface,
		Version:     e.svc.Version,
		Group:       e.svc.Group,
		Method:      m.Name,
		ParamTypes:  m.ParamTypes,
		Args:        conv,
		Attachments: att,
	}
	end := p.begin(e, m.Name, at.peer, size)
	executed, refusal, ok := e.beginExecute(at.ep, m.Name)
	if !ok {
		end.end(stats.Limit, resp)
		resp.Status = protocol.StatusServiceError
		resp.ErrorMessage = refusal
		return resp
	}
	if ai, ok := e.svc.Invoker.(AsyncInvoker); ok && finish != nil {
		safeInvokeAsync(ctx, ai, inv, func(res *rpc.Result, err error) {
			executed()
			p.complete(ctx, resp, e, m, att, isGeneric, end, res, err)
			finish(resp)
		})
		return nil
	}
	res, err := safeInvoke(ctx, e.svc.Invoker, inv)
	executed()
	p.complete(ctx, resp, e, m, att, isGeneric, end, res, err)
	return resp
}

// complete fills resp with the outcome of a call of method m of e.
func (p *Provider) complete(ctx context.Context, resp *protocol.Response, e *exporter, m Method, att map[string]any,
	isGeneric bool, end counting, res *rpc.Result, err error) {
	var ex *rpc.Exception
	switch {
	case errors.As(err, &ex):
		end.end(stats.BusinessFailed, resp)
		resp.Exception = &protocol.Exception{Class: exceptionClass(ex), Message: ex.Message}
	case err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, rpc.ErrTimeout)) && deadlinePassed(ctx):
		end.end(stats.Timeout, resp)
		// The consumer's timeout passed: say so, so the consumer reports a
		// timeout whichever of its timer and this answer comes first (Java
		// consumers read SERVER_TIMEOUT as a TimeoutException).
		resp.Status = protocol.StatusServerTimeout
		resp.ErrorMessage = fmt.Sprintf("Invoke remote method timeout: service %s method %s on provider %s did not finish within the consumer's timeout of %s: %v",
			e.key, m.Name, p.Addr(), timeoutText(ctx, att), err)
	case err != nil:
		end.end(stats.OutcomeOf(err), resp)
		// Not a business exception: the service itself failed (a plugin
		// crashed). SERVICE_ERROR lets consumers fail over.
		resp.Status = protocol.StatusServiceError
		resp.ErrorMessage = fmt.Sprintf("Failed to invoke service %s method %s on provider %s: %v", e.key, m.Name, p.Addr(), err)
	case res == nil:
		end.end(stats.Success, resp)
	case res.Exception != nil:
		end.end(stats.BusinessFailed, resp)
		resp.Exception = &protocol.Exception{Class: exceptionClass(res.Exception), Message: res.Exception.Message}
	default:
		end.end(stats.Success, resp)
		v := returnValue(res.Value, m.ReturnType)
		if isGeneric {
			v = generic.Generalize(v)
		}
		resp.Value = v
		resp.Attachments = stringAttachments(res.Attachments)
	}
}

// safeInvokeAsync is safeInvoke for an AsyncInvoker: done is called once,
// with the panic as the error if the invoker panicked before calling it.
func safeInvokeAsync(ctx context.Context, inv AsyncInvoker, call *rpc.Invocation, done func(*rpc.Result, error)) {
	var called atomic.Bool
	once := func(res *rpc.Result, err error) {
		if called.CompareAndSwap(false, true) {
			done(res, err)
		}
	}
	defer func() {
		if r := recover(); r != nil {
			once(nil, fmt.Errorf("service panicked: %v", r))
		}
	}()
	inv.InvokeAsync(ctx, call, once)
}

// safeInvoke turns a panic in a service into an error, so it is counted
// and answered like any other failure.
func safeInvoke(ctx context.Context, inv rpc.Invoker, call *rpc.Invocation) (res *rpc.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("service panicked: %v", r)
		}
	}()
	return inv.Invoke(ctx, call)
}

func exceptionClass(ex *rpc.Exception) string {
	if ex.Class == "" {
		return "java.lang.RuntimeException"
	}
	return ex.Class
}

// lookupOn finds the exporter of a service key served on s, the
// MetadataService included, and its endpoint there.
func (p *Provider) lookupOn(s *server, key string) (*exporter, *endpoint) {
	var e *exporter
	if key == p.metadata.exporter.key {
		e = p.metadata.exporter
	} else {
		p.mu.RLock()
		e = p.exporters[key]
		p.mu.RUnlock()
	}
	if e == nil {
		return nil, nil
	}
	if ep := e.endpoint(s); ep != nil {
		return e, ep
	}
	return nil, nil
}

// timeoutText is the consumer's timeout of a call, for messages: its
// timeout attachment, else what its deadline left it.
func timeoutText(ctx context.Context, att map[string]any) string {
	if t, ok := att["timeout"]; ok {
		return fmt.Sprint(t) + "ms"
	}
	if dl, ok := ctx.Deadline(); ok {
		return "its deadline (" + dl.Format("15:04:05.000") + ")"
	}
	return "none"
}

func (e *exporter) methodNames() []string {
	out := make([]string, 0, len(e.methods))
	for n := range e.methods {
		out = append(out, n)
	}
	sortStrings(out)
	return out
}

// timeoutOf reads the consumer's timeout attachment (milliseconds).
func timeoutOf(req *protocol.Request) time.Duration {
	if ms, err := strconv.ParseInt(req.Attachment("timeout"), 10, 64); err == nil && ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return 0
}

// deadlineWithin reports whether ctx already ends within d from now.
func deadlineWithin(ctx context.Context, d time.Duration) bool {
	dl, ok := ctx.Deadline()
	return ok && time.Until(dl) <= d
}

// peer names the consumer of a request in messages.
func peer(ctx context.Context) string {
	if a := transport.Peer(ctx); a != nil {
		return a.String()
	}
	return "unknown"
}

// stringAttachments keeps the attachments Java can read (String → String).
func stringAttachments(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// deadlinePassed reports whether ctx's deadline is behind us, even when
// its timer, late on a loaded machine, has not fired yet (a plugin reports
// its timeout by the clock).
func deadlinePassed(ctx context.Context) bool {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}
