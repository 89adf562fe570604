// Package sdktest tests handler plugins without a node. New serves a
// plugin's services in the test's process (sdk.ServeConn) and plays the
// node on the other end of the link's pipes, so every call crosses what it
// crosses in a running node: the node's encoding of the call (hessian2 for
// a Dubbo service, the caller's protobuf bytes for a protobuf one), the
// link, the SDK's decoding, conversion and dispatch, and the way back. A
// type that would not cross the wire fails the test as it would fail the
// call:
//
//	func TestSayHello(t *testing.T) {
//		h := sdktest.New(t, sdk.Service{Interface: "org.example.Greeter", Version: "1.0.0", Handler: Greeter{}})
//		got, err := h.Call(context.Background(), "sayHello", "world")
//		if err != nil || got != "Hello, world" {
//			t.Fatalf("sayHello(world) = %v, %v", got, err)
//		}
//	}
//
// New fails the test at once when sdk.Serve would refuse the services: a
// struct without a JavaClassName method where a POJO is needed, an unsigned
// integer, a method of the wrong shape.
//
// Arguments go out as a Go Dubbo consumer (dubbo-go) sends them, with the
// parameter types the handler describes: int32 as Java's int, int and
// int64 as long, a struct with JavaClassName as that class, a map as a
// Map. The handler gets them converted as in a node: a long that does not
// fit an int32 parameter fails the call with
// java.lang.IllegalArgumentException. Results come back as the node
// decodes them: int32 for an int, int64 for a long (so a handler that
// returns a Go int where Java expects int shows up as int64),
// map[any]any for a Map, []any for a List, the registered Go struct of a
// POJO.
//
// A business exception is returned as a *rpc.Exception error, with the
// Java class the caller sees; the failure of the call itself (a method the
// handler does not serve, a result hessian cannot encode, the deadline) as
// a *rpc.CallError wrapping its rpc.Err* category.
//
// The context of a call carries its deadline to the handler's context, as
// the node carries a Dubbo timeout, and the attachments given with
// WithAttachment, which the handler reads with sdk.Attachments beside the
// ones every Dubbo consumer sends (path, interface, version, group). The
// calls a handler makes through sdk.Client are answered by the invoker
// given to SetClient.
//
// Protobuf services (sdk.ProtoService) are called with CallProto and
// OpenStream; the caller's metadata is grpc-go's outgoing metadata of the
// context (metadata.NewOutgoingContext), and a failure is a grpc-go status
// error (status.Code(err)).
package sdktest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
	"github.com/dubbo-lab/dubbo/plugins/internal/wire"
	"github.com/dubbo-lab/dubbo/plugins/sdk"
)

// Handler is a plugin's services served in-process, called as the node
// calls them. It is an rpc.Invoker, safe for concurrent use.
type Handler struct {
	link     *wire.Link
	services []wire.Service // as the plugin described them
	client   atomic.Pointer[rpc.Invoker]
}

// New serves services as sdk.Serve would and returns the Handler that
// calls them; the test fails at once when Serve would refuse them. They
// stop serving when the test ends.
func New(t testing.TB, services ...sdk.Servable) *Handler {
	t.Helper()
	h, stop, err := start(services)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return h
}

func start(services []sdk.Servable) (*Handler, func(), error) {
	nodeEnd, pluginEnd := linkPipes()
	b, stopPlugin, err := sdk.ServeConn(pluginEnd, services...)
	if err != nil {
		nodeEnd.Close()
		pluginEnd.Close()
		return nil, nil, err
	}
	// The node's own check of what a plugin describes.
	desc, err := wire.ParseDescription(b)
	if err != nil {
		stopPlugin()
		nodeEnd.Close()
		return nil, nil, fmt.Errorf("a node would refuse this plugin: %w", err)
	}
	h := &Handler{link: wire.NewLink(nodeEnd), services: desc.Services}
	h.link.Start(clientServer{h})
	return h, func() {
		h.link.Close()
		stopPlugin()
	}, nil
}

// linkPipes are the link's pipes, as the node makes them; an in-memory
// pipe where the system has none.
func linkPipes() (node, plugin net.Conn) {
	node, child, err := wire.NewLinkPipes()
	if err != nil {
		return net.Pipe()
	}
	return node, child.Conn()
}

// SetClient makes inv answer the calls the handlers make through
// sdk.Client, as the node's consumer answers them in a running node.
// Without it they fail with rpc.ErrNoProvider.
func (h *Handler) SetClient(inv rpc.Invoker) { h.client.Store(&inv) }

// Call calls method of the plugin's Dubbo service with args and returns
// the value as the node gets it; a business exception is the error, a
// *rpc.Exception. method is the method's Dubbo name (sayHello); when the
// plugin serves more than one Dubbo service, it is preceded by the
// service's key and a slash: "org.example.Greeter:1.0.0/sayHello".
func (h *Handler) Call(ctx context.Context, method string, args ...any) (any, error) {
	svc, name, err := h.service(method, false)
	if err != nil {
		return nil, err
	}
	inv := &rpc.Invocation{Service: svc.Interface, Version: svc.Version, Group: svc.Group, Method: name, Args: args}
	res, err := h.Invoke(ctx, inv)
	if err != nil {
		return nil, err
	}
	if res.Exception != nil {
		return nil, res.Exception
	}
	return res.Value, nil
}

// Invoke makes one call as the node makes it; it is an rpc.Invoker. A call
// without ParamTypes gets the ones the method describes. A business
// exception comes back in the Result; failures of the call itself as
// errors wrapping the rpc.Err* categories.
func (h *Handler) Invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	// The attachments of ctx (WithAttachment) go with the call as an
	// sdk.Caller sends them.
	return sdk.Client(sdk.WithClient(ctx, rpc.InvokerFunc(h.invoke))).Invoke(ctx, inv)
}

// invoke is Invoke with the context's attachments in inv.
func (h *Handler) invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	m, err := h.method(inv)
	if err != nil {
		return nil, err
	}
	out := *inv
	if out.ParamTypes == nil {
		out.ParamTypes = m.ParamTypes
	}
	out.Attachments = attachments(inv)
	call, err := wire.EncodeCall(&out)
	if err != nil {
		return nil, callError(inv, rpc.ErrBadRequest, "the arguments cannot be encoded: "+err.Error())
	}
	reply, err := h.link.Call(ctx, call)
	switch {
	case err == nil:
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, callError(inv, rpc.ErrTimeout, "the handler did not answer in time")
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s.%s: %w", inv.Service, inv.Method, ctx.Err())
	case errors.Is(err, wire.ErrTooBig):
		return nil, callError(inv, rpc.ErrBadRequest, err.Error())
	default:
		return nil, callError(inv, rpc.ErrConnection, err.Error())
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		// An answer that raced the deadline home (typically the handler's
		// own "deadline exceeded") is a timeout, as the node reports it.
		return nil, callError(inv, rpc.ErrTimeout, "the handler did not answer in time")
	}
	res, err := wire.DecodeReply(reply)
	var ce *rpc.CallError
	if errors.As(err, &ce) {
		ce.Service, ce.Method = inv.Service, inv.Method
	}
	return res, err
}

// method is the described method inv calls; a service or method the
// plugin did not describe is refused as the node refuses it.
func (h *Handler) method(inv *rpc.Invocation) (wire.Method, error) {
	id := wire.IDOf(inv.Service, inv.Version, inv.Group)
	for _, s := range h.services {
		if wire.IDOf(s.Interface, s.Version, s.Group) != id {
			continue
		}
		key := url.ServiceKey(s.Interface, s.Version, s.Group)
		if s.Proto != nil {
			return wire.Method{}, callError(inv, rpc.ErrServiceNotFound, key+" is a protobuf service: call it with CallProto or OpenStream")
		}
		for _, m := range s.Methods {
			if m.Name == inv.Method {
				return m, nil
			}
		}
		return wire.Method{}, callError(inv, rpc.ErrServiceNotFound, fmt.Sprintf("%s has no method %s; it has %s", key, inv.Method, methodNames(s)))
	}
	return wire.Method{}, callError(inv, rpc.ErrServiceNotFound, "the plugin does not serve "+url.ServiceKey(inv.Service, inv.Version, inv.Group)+"; it serves "+h.serviceKeys())
}

// service finds the service a method given to Call or CallProto names
// (proto: a protobuf service), and the method's own name.
func (h *Handler) service(method string, proto bool) (wire.Service, string, error) {
	key, name, qualified := cutLast(method, "/")
	var found []wire.Service
	for _, s := range h.services {
		if (s.Proto != nil) != proto {
			continue
		}
		if qualified && wire.IDOf(url.ParseServiceKey(key)) != wire.IDOf(s.Interface, s.Version, s.Group) {
			continue
		}
		found = append(found, s)
	}
	kind := "Dubbo"
	if proto {
		kind = "protobuf"
	}
	switch {
	case len(found) == 1:
		return found[0], name, nil
	case qualified:
		return wire.Service{}, "", fmt.Errorf("sdktest: %s: the plugin serves no %s service %s; it serves %s", method, kind, key, h.serviceKeys())
	case len(found) == 0:
		return wire.Service{}, "", fmt.Errorf("sdktest: %s: the plugin serves no %s service; it serves %s", method, kind, h.serviceKeys())
	}
	return wire.Service{}, "", fmt.Errorf("sdktest: %s: the plugin serves %d %s services: say which, as %s/%s", method, len(found), kind,
		url.ServiceKey(found[0].Interface, found[0].Version, found[0].Group), name)
}

// cutLast cuts s around the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return "", s, false
}

func (h *Handler) serviceKeys() string {
	keys := make([]string, len(h.services))
	for i, s := range h.services {
		keys[i] = url.ServiceKey(s.Interface, s.Version, s.Group)
	}
	if len(keys) == 0 {
		return "nothing"
	}
	return strings.Join(keys, ", ")
}

func methodNames(s wire.Service) string {
	names := make([]string, len(s.Methods))
	for i, m := range s.Methods {
		names[i] = m.Name
	}
	return strings.Join(names, ", ")
}

func callError(inv *rpc.Invocation, kind error, detail string) error {
	return &rpc.CallError{Kind: kind, Service: inv.Service, Method: inv.Method, Detail: detail}
}

// WithAttachment returns a context whose calls carry the attachment
// key=value, which the handler reads with sdk.Attachments: it is
// sdk.WithAttachment, so sdk.WithTag's request tag goes with them too.
// Java's attachments are strings; a Go consumer may send other values.
func WithAttachment(ctx context.Context, key string, value any) context.Context {
	return sdk.WithAttachment(ctx, key, value)
}

// attachments are those a Dubbo consumer sends with inv: the names it
// repeats, then inv's own.
func attachments(inv *rpc.Invocation) map[string]any {
	m := make(map[string]any, 4+len(inv.Attachments))
	m["path"], m["interface"] = inv.Service, inv.Service
	if inv.Version != "" {
		m["version"] = inv.Version
	}
	if inv.Group != "" {
		m["group"] = inv.Group
	}
	for k, v := range inv.Attachments {
		m[k] = v
	}
	return m
}

// clientServer answers the calls the handlers make through sdk.Client, as
// the node does, with SetClient's invoker.
type clientServer struct{ h *Handler }

func (c clientServer) Prepare(call []byte) (wire.Runner, bool) {
	inv, err := wire.DecodeCall(call)
	if err != nil {
		b := wire.ErrorReply(&rpc.CallError{Kind: rpc.ErrBadRequest, Detail: "the plugin sent a call that cannot be decoded: " + err.Error()})
		return wire.RunFunc(func(context.Context) []byte { return b }), true
	}
	return wire.RunFunc(func(ctx context.Context) []byte {
		res, err := c.invoke(ctx, inv)
		b, encErr := wire.EncodeReply(res, err)
		if encErr != nil {
			b = wire.ErrorReply(&rpc.CallError{Kind: rpc.ErrProvider, Detail: "the result cannot be encoded: " + encErr.Error()})
		}
		return b
	}), false
}

func (c clientServer) invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	p := c.h.client.Load()
	if p == nil {
		return nil, callError(inv, rpc.ErrNoProvider, "sdktest: no client: give the Handler one with SetClient to answer the handler's calls through sdk.Client")
	}
	return (*p).Invoke(ctx, inv)
}
