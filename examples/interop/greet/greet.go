// Package greet is the example protobuf service greet.GreetService written
// the way a dubbo-go v3.3.0 user serves an IDL service over Triple, with
// the ServiceInfo that protoc-gen-go-triple would generate written out by
// hand (dubbo-go's "non-generated registration"):
//
//	rpc Greet(GreetRequest) returns (GreetResponse)                          "Hello, <name>"
//	rpc GreetServerStream(GreetStreamRequest) returns (stream GreetResponse) count x "Hello, <name> #i"
//	rpc GreetClientStream(stream GreetRequest) returns (GreetResponse)       "Hello, " + names joined by ","
//	rpc GreetStream(stream GreetRequest) returns (stream GreetResponse)      "Hello, <name>" each
//
// A name "fail:<message>" makes Greet return an error with that message,
// which dubbo-go sends as its business-error status (17).
package greet

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	triple "dubbo.apache.org/dubbo-go/v3/protocol/triple/triple_protocol"

	"github.com/dubbo-lab/dubbo/examples/interop/greet/greetpb"
)

// Service is the service's full name: the interface it is registered
// under.
const Service = "greet.GreetService"

// Handler implements the service.
type Handler struct{}

func response(greeting string) *greetpb.GreetResponse {
	return &greetpb.GreetResponse{Greeting: greeting}
}

// Greet answers "Hello, <name>", or fails for "fail:<message>".
func (Handler) Greet(_ context.Context, req *greetpb.GreetRequest) (*greetpb.GreetResponse, error) {
	if msg, ok := strings.CutPrefix(req.Name, "fail:"); ok {
		return nil, errors.New(msg)
	}
	return response("Hello, " + req.Name), nil
}

// GreetServerStream sends count greetings.
func (Handler) GreetServerStream(_ context.Context, req *greetpb.GreetStreamRequest, send func(*greetpb.GreetResponse) error) error {
	for i := int32(1); i <= req.Count; i++ {
		if err := send(response(fmt.Sprintf("Hello, %s #%d", req.Name, i))); err != nil {
			return err
		}
	}
	return nil
}

// GreetClientStream greets every name it received, at once.
func (Handler) GreetClientStream(_ context.Context, recv func() (*greetpb.GreetRequest, bool)) (*greetpb.GreetResponse, error) {
	var names []string
	for {
		req, ok := recv()
		if !ok {
			return response("Hello, " + strings.Join(names, ",")), nil
		}
		names = append(names, req.Name)
	}
}

// GreetStream answers each message with "Hello, <name>".
func (Handler) GreetStream(_ context.Context, recv func() (*greetpb.GreetRequest, error), send func(*greetpb.GreetResponse) error) error {
	for {
		req, err := recv()
		if err != nil {
			return nil // the client half-closed (or went)
		}
		if err := send(response("Hello, " + req.Name)); err != nil {
			return err
		}
	}
}

// ServiceInfo is what server.Register needs to serve h over Triple: each
// method's kind, how to make its request message and how to call it.
func ServiceInfo(h Handler) *common.ServiceInfo {
	return &common.ServiceInfo{
		InterfaceName: Service,
		ServiceType:   h,
		Methods: []common.MethodInfo{
			{
				Name:        "Greet",
				Type:        constant.CallUnary,
				ReqInitFunc: func() any { return new(greetpb.GreetRequest) },
				MethodFunc: func(ctx context.Context, args []any, _ any) (any, error) {
					res, err := h.Greet(ctx, args[0].(*greetpb.GreetRequest))
					if err != nil {
						return nil, err
					}
					return triple.NewResponse(res), nil
				},
			},
			{
				Name:           "GreetServerStream",
				Type:           constant.CallServerStream,
				ReqInitFunc:    func() any { return new(greetpb.GreetStreamRequest) },
				StreamInitFunc: func(base any) any { return base.(*triple.ServerStream) },
				MethodFunc: func(ctx context.Context, args []any, _ any) (any, error) {
					st := args[1].(*triple.ServerStream)
					send := func(m *greetpb.GreetResponse) error { return st.Send(m) }
					return nil, h.GreetServerStream(ctx, args[0].(*greetpb.GreetStreamRequest), send)
				},
			},
			{
				Name:           "GreetClientStream",
				Type:           constant.CallClientStream,
				StreamInitFunc: func(base any) any { return base.(*triple.ClientStream) },
				MethodFunc: func(ctx context.Context, args []any, _ any) (any, error) {
					st := args[0].(*triple.ClientStream)
					recv := func() (*greetpb.GreetRequest, bool) {
						m := new(greetpb.GreetRequest)
						if !st.Receive(m) {
							return nil, false
						}
						return m, true
					}
					res, err := h.GreetClientStream(ctx, recv)
					if err != nil {
						return nil, err
					}
					return triple.NewResponse(res), nil
				},
			},
			{
				Name:           "GreetStream",
				Type:           constant.CallBidiStream,
				StreamInitFunc: func(base any) any { return base.(*triple.BidiStream) },
				MethodFunc: func(ctx context.Context, args []any, _ any) (any, error) {
					st := args[0].(*triple.BidiStream)
					recv := func() (*greetpb.GreetRequest, error) {
						m := new(greetpb.GreetRequest)
						return m, st.Receive(m)
					}
					send := func(m *greetpb.GreetResponse) error { return st.Send(m) }
					return nil, h.GreetStream(ctx, recv, send)
				},
			},
		},
	}
}
