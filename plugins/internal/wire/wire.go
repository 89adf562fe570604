// Package wire is the contract between the node (plugins) and the handler
// plugins it launches (plugins/sdk): the go-plugin handshake, two gRPC
// services written by hand over protobuf well-known types, the stream that
// multiplexes calls over one of them, and the hessian2 encoding of calls
// and replies carried inside.
//
// Handler (served by the plugin):
//
//	Describe(UInt32Value callback broker id) -> BytesValue JSON Description
//	Start(Empty)                             -> Empty
//	Calls(stream BytesValue frame)           -> stream BytesValue frame
//	Stop(Empty)                              -> Empty
//
// The node calls Describe, then Start once it has accepted the description
// (the plugin's own start hook runs from then on), then opens Calls, one
// stream for the plugin's life that carries every call and its reply
// (calls.go); before closing the plugin it calls Stop, which ends the start
// hook while the node still answers the hook's calls.
//
// Host (served by the node over the go-plugin broker, for calls a handler
// makes to other services):
//
//	Calls(stream BytesValue frame) -> stream BytesValue frame
//
// Hessian is used inside the messages, not protobuf, so that the Java types
// the node decoded from a Dubbo request (int vs long, typed lists, POJO class
// names) reach the handler and come back unchanged.
package wire

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Handshake is checked by both sides before anything else: a binary that is
// not a handler plugin, or one built against another protocol version, is
// refused by go-plugin before it can serve. Bump ProtocolVersion on any
// incompatible change to this package.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  2,
	MagicCookieKey:   "DUBBO_HANDLER_PLUGIN",
	MagicCookieValue: "7c1d52e8-dubbo-handler-plugin",
}

// PluginName is the single plugin kind a handler binary dispenses.
const PluginName = "handler"

// MaxMessage bounds one gRPC message each way: above Dubbo's default 8 MiB
// payload, so anything the node accepted can cross, but not unbounded.
const MaxMessage = 16 << 20

// Invoker serves one call of the Calls stream: an encoded call in, the
// encoded reply out. Calls arrive concurrently; ctx ends when the caller
// gives up, its deadline passes, or the stream ends.
type Invoker interface {
	Invoke(ctx context.Context, call []byte) (reply []byte)
}

// HandlerServer is implemented in the plugin process by the SDK.
type HandlerServer interface {
	Describe(ctx context.Context, callbackBroker *wrapperspb.UInt32Value) (*wrapperspb.BytesValue, error)
	// Start tells the plugin that the node accepted its description and is
	// connected; it returns at once, the plugin's own work runs after.
	Start(ctx context.Context, in *emptypb.Empty) (*emptypb.Empty, error)
	// Stop ends the start hook and returns when it has returned.
	Stop(ctx context.Context, in *emptypb.Empty) (*emptypb.Empty, error)
	Invoker
}

// HostServer is implemented in the node for calls coming back from
// handlers.
type HostServer interface {
	Invoker
}

const (
	handlerService  = "dubbo.plugin.v1.Handler"
	hostService     = "dubbo.plugin.v1.Host"
	describeMethod  = "/" + handlerService + "/Describe"
	startMethod     = "/" + handlerService + "/Start"
	stopMethod      = "/" + handlerService + "/Stop"
	callsMethod     = "/" + handlerService + "/Calls"
	hostCallsMethod = "/" + hostService + "/Calls"
)

// unary builds a grpc.MethodHandler for a method taking message In; call
// type-asserts the service. Written once here instead of per method, which
// is what protoc-gen-go-grpc would have generated.
func unary[In any, PIn interface {
	*In
	proto.Message
}](full string, call func(srv any, ctx context.Context, in PIn) (any, error)) func(any, context.Context, func(any) error, grpc.UnaryServerInterceptor) (any, error) {
	return func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
		in := PIn(new(In))
		if err := dec(in); err != nil {
			return nil, err
		}
		if ic == nil {
			return call(srv, ctx, in)
		}
		info := &grpc.UnaryServerInfo{Server: srv, FullMethod: full}
		return ic(ctx, in, info, func(ctx context.Context, req any) (any, error) {
			return call(srv, ctx, req.(PIn))
		})
	}
}

// callsStream is the Calls method of either service.
var callsStream = grpc.StreamDesc{
	StreamName:    "Calls",
	Handler:       func(srv any, s grpc.ServerStream) error { return serveCalls(s, srv.(Invoker)) },
	ServerStreams: true,
	ClientStreams: true,
}

var handlerDesc = grpc.ServiceDesc{
	ServiceName: handlerService,
	HandlerType: (*HandlerServer)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Describe", Handler: unary(describeMethod, func(srv any, ctx context.Context, in *wrapperspb.UInt32Value) (any, error) {
			return srv.(HandlerServer).Describe(ctx, in)
		})},
		{MethodName: "Start", Handler: unary(startMethod, func(srv any, ctx context.Context, in *emptypb.Empty) (any, error) {
			return srv.(HandlerServer).Start(ctx, in)
		})},
		{MethodName: "Stop", Handler: unary(stopMethod, func(srv any, ctx context.Context, in *emptypb.Empty) (any, error) {
			return srv.(HandlerServer).Stop(ctx, in)
		})},
	},
	Streams:  []grpc.StreamDesc{callsStream},
	Metadata: "dubbo/plugin/v1",
}

var hostDesc = grpc.ServiceDesc{
	ServiceName: hostService,
	HandlerType: (*HostServer)(nil),
	Streams:     []grpc.StreamDesc{callsStream},
	Metadata:    "dubbo/plugin/v1",
}

// RegisterHost registers the node's callback service on s.
func RegisterHost(s *grpc.Server, h HostServer) { s.RegisterService(&hostDesc, h) }

// HandlerClient calls a plugin's Handler service.
type HandlerClient struct{ cc grpc.ClientConnInterface }

// Describe asks what the plugin serves; callbackBroker is the broker id on
// which the node serves the Host service for this plugin.
func (c HandlerClient) Describe(ctx context.Context, callbackBroker uint32) ([]byte, error) {
	out := new(wrapperspb.BytesValue)
	if err := c.cc.Invoke(ctx, describeMethod, wrapperspb.UInt32(callbackBroker), out); err != nil {
		return nil, err
	}
	return out.Value, nil
}

// Start tells the plugin it was accepted, which runs its start hook.
func (c HandlerClient) Start(ctx context.Context) error {
	return c.cc.Invoke(ctx, startMethod, &emptypb.Empty{}, new(emptypb.Empty))
}

// Stop ends the plugin's start hook, before the node closes the plugin.
func (c HandlerClient) Stop(ctx context.Context) error {
	return c.cc.Invoke(ctx, stopMethod, &emptypb.Empty{}, new(emptypb.Empty))
}

// OpenCalls opens the stream that carries the node's calls to the plugin.
func (c HandlerClient) OpenCalls() (*Calls, error) { return openCalls(c.cc, callsMethod) }

// OpenHostCalls opens, from the plugin, the stream that carries its calls
// to the node over a connection dialed through the broker.
func OpenHostCalls(cc grpc.ClientConnInterface) (*Calls, error) {
	return openCalls(cc, hostCallsMethod)
}

// Conn is what the node gets from dispensing the plugin.
type Conn struct {
	Handler HandlerClient
	Broker  *plugin.GRPCBroker
	// Exited is canceled by go-plugin when the plugin process has exited.
	Exited context.Context
}

// GRPCPlugin is the go-plugin Plugin of a handler binary. The plugin side
// sets Handler; the node leaves it nil and gets a *Conn from Dispense.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Handler func(*plugin.GRPCBroker) HandlerServer
}

// GRPCServer registers the Handler service (plugin side).
func (p *GRPCPlugin) GRPCServer(b *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Handler == nil {
		return errors.New("wire: GRPCPlugin.Handler is nil")
	}
	s.RegisterService(&handlerDesc, p.Handler(b))
	return nil
}

// GRPCClient returns a *Conn (node side).
func (p *GRPCPlugin) GRPCClient(ctx context.Context, b *plugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return &Conn{Handler: HandlerClient{cc}, Broker: b, Exited: ctx}, nil
}

// window is the HTTP/2 flow-control window of every connection and stream
// between the node and a plugin. Fixed, because setting it turns off
// gRPC's bandwidth estimation, whose PING frames would ride along with
// replies: the peer is a local process, never a slow link.
const window = 4 << 20

// NewGRPCServer builds the gRPC servers of both sides with the message limit.
func NewGRPCServer(opts []grpc.ServerOption) *grpc.Server {
	opts = append(opts, grpc.MaxRecvMsgSize(MaxMessage), grpc.MaxSendMsgSize(MaxMessage),
		grpc.InitialWindowSize(window), grpc.InitialConnWindowSize(window))
	return grpc.NewServer(opts...)
}

// DialOptions are the options of both sides for connecting to the other.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessage), grpc.MaxCallSendMsgSize(MaxMessage)),
		grpc.WithInitialWindowSize(window), grpc.WithInitialConnWindowSize(window),
	}
}
