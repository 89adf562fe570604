// Package wire is the contract between the node (plugins) and the handler
// plugins it launches (plugins/sdk): the go-plugin handshake and a gRPC
// service for the plugin's life cycle, written by hand over protobuf
// well-known types; the description of what a plugin serves (describe.go);
// the link that carries calls both ways (link.go); the hessian2 encoding
// of Dubbo calls and replies (codec.go); and the framing of protobuf calls
// (proto.go), whose messages it carries as the caller's bytes.
//
// Handler (served by the plugin over go-plugin's gRPC, mutual TLS on):
//
//	Describe(Empty) -> BytesValue JSON Description
//	Start(Empty)    -> Empty
//	Stop(Empty)     -> Empty
//
// The node calls Describe, then Start once it has accepted the description
// (the plugin's own start hook runs from then on); before closing the
// plugin it calls Stop, which ends the start hook while the node still
// answers the hook's calls.
//
// Calls do not travel over gRPC: the node makes two pipes, one each way,
// before launching the plugin and passes their ends to it (LinkFDEnv), and
// both sides call each other over them: the node its handlers, the
// handlers other services through the node. Only the two processes hold
// them.
//
// Dubbo calls carry hessian, not protobuf, so that the Java types the node
// decoded from a Dubbo request (int vs long, typed lists, POJO class names)
// reach the handler and come back unchanged. Protobuf calls carry their
// messages as they came: neither the link nor the node decodes them.
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
	ProtocolVersion:  7,
	MagicCookieKey:   "DUBBO_HANDLER_PLUGIN",
	MagicCookieValue: "7c1d52e8-dubbo-handler-plugin",
}

// PluginName is the single plugin kind a handler binary dispenses.
const PluginName = "handler"

// maxMessage bounds one gRPC message each way (a description).
const maxMessage = 4 << 20

// Invoker serves the calls from the other side of a Link. Prepare runs on
// the link's reader: it decodes call, which is its own to keep (run may
// read it later), and returns what serves it. Calls
// arrive concurrently; run's ctx ends when the caller gives up, its
// deadline passes, or the link ends.
//
// inline says that run returns at once without waiting on anything (a
// handler that has been quick), so the reader runs it itself:
// handing a call to a worker goroutine costs a wake-up, tens of µs on a
// small VM. Should an inline call call the other side after all, the link
// starts another reader before it waits.
type Invoker interface {
	Prepare(call []byte) (run Runner, inline bool)
}

// A ProtoInvoker is an Invoker that serves protobuf calls too; a side whose
// Invoker is not one answers them Unimplemented. PrepareProto is Prepare
// for a unary protobuf call (ParseProtoCall), whose run answers as
// AppendProtoOK or AppendProtoError write.
type ProtoInvoker interface {
	Invoker
	PrepareProto(call []byte) (run Runner, inline bool)
}

// Runner serves one call Prepare decoded. An interface rather than a
// func, so that the SDK's call, which holds all a call needs in one
// allocation, serves itself without a closure around it.
type Runner interface {
	Run(ctx context.Context) (reply []byte)
}

// RunFunc is a Runner that calls itself.
type RunFunc func(ctx context.Context) (reply []byte)

// Run calls f.
func (f RunFunc) Run(ctx context.Context) []byte { return f(ctx) }

// HandlerServer is implemented in the plugin process by the SDK.
type HandlerServer interface {
	Describe(ctx context.Context, in *emptypb.Empty) (*wrapperspb.BytesValue, error)
	// Start tells the plugin that the node accepted its description and is
	// connected; it returns at once, the plugin's own work runs after.
	Start(ctx context.Context, in *emptypb.Empty) (*emptypb.Empty, error)
	// Stop ends the start hook and returns when it has returned.
	Stop(ctx context.Context, in *emptypb.Empty) (*emptypb.Empty, error)
}

const (
	handlerService = "dubbo.plugin.v1.Handler"
	describeMethod = "/" + handlerService + "/Describe"
	startMethod    = "/" + handlerService + "/Start"
	stopMethod     = "/" + handlerService + "/Stop"
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

var handlerDesc = grpc.ServiceDesc{
	ServiceName: handlerService,
	HandlerType: (*HandlerServer)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Describe", Handler: unary(describeMethod, func(srv any, ctx context.Context, in *emptypb.Empty) (any, error) {
			return srv.(HandlerServer).Describe(ctx, in)
		})},
		{MethodName: "Start", Handler: unary(startMethod, func(srv any, ctx context.Context, in *emptypb.Empty) (any, error) {
			return srv.(HandlerServer).Start(ctx, in)
		})},
		{MethodName: "Stop", Handler: unary(stopMethod, func(srv any, ctx context.Context, in *emptypb.Empty) (any, error) {
			return srv.(HandlerServer).Stop(ctx, in)
		})},
	},
	Metadata: "dubbo/plugin/v1",
}

// HandlerClient calls a plugin's Handler service.
type HandlerClient struct{ cc grpc.ClientConnInterface }

// Describe asks what the plugin serves.
func (c HandlerClient) Describe(ctx context.Context) ([]byte, error) {
	out := new(wrapperspb.BytesValue)
	if err := c.cc.Invoke(ctx, describeMethod, &emptypb.Empty{}, out); err != nil {
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

// Conn is what the node gets from dispensing the plugin.
type Conn struct {
	Handler HandlerClient
	// Exited is canceled by go-plugin when the plugin process has exited.
	Exited context.Context
}

// GRPCPlugin is the go-plugin Plugin of a handler binary. The plugin side
// sets Handler; the node leaves it nil and gets a *Conn from Dispense.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Handler HandlerServer
}

// GRPCServer registers the Handler service (plugin side).
func (p *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Handler == nil {
		return errors.New("wire: GRPCPlugin.Handler is nil")
	}
	s.RegisterService(&handlerDesc, p.Handler)
	return nil
}

// GRPCClient returns a *Conn (node side).
func (p *GRPCPlugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return &Conn{Handler: HandlerClient{cc}, Exited: ctx}, nil
}

// NewGRPCServer builds the plugin's gRPC server with the message limit.
func NewGRPCServer(opts []grpc.ServerOption) *grpc.Server {
	opts = append(opts, grpc.MaxRecvMsgSize(maxMessage), grpc.MaxSendMsgSize(maxMessage))
	return grpc.NewServer(opts...)
}

// DialOptions are the node's options for connecting to a plugin.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage), grpc.MaxCallSendMsgSize(maxMessage)),
	}
}
