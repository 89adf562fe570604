// Package pluginsvc turns what a handler plugin serves
// (plugins.ServiceDesc) into a service the provider exports
// (provider.Service): a Dubbo service's calls go to the plugin as
// invocations, a protobuf service's as messages, through its CallProto and
// OpenStream adapted to the provider's ProtoInvoker. roles exports a
// plugin's services with it while the plugin is up; tests of the provider
// serve real plugins with it.
package pluginsvc

import (
	"context"
	"errors"
	"io"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/triple"
	"github.com/dubbo-lab/dubbo/plugins"
)

// Plugin serves the calls: a plugins.Supervisor, or a plugins.Plugin.
type Plugin interface {
	rpc.Invoker
	CallProto(ctx context.Context, c plugins.ProtoCall, req []byte, done func(resp []byte, trailer rpc.Metadata, st *plugins.Status))
	OpenStream(ctx context.Context, c plugins.ProtoCall) (*plugins.Stream, error)
}

// Service is the provider service of sd, whose calls go to pl, with the
// settings the plugin gave it (a [[provider.services]] table wins over
// them in the provider). A protobuf service's methods are its rpcs, each
// with its request message as the one parameter type and its response
// message as the return type.
func Service(sd plugins.ServiceDesc, pl Plugin) provider.Service {
	svc := provider.Service{Interface: sd.Interface, Version: sd.Version, Group: sd.Group, Params: sd.Params,
		Methods: make([]provider.Method, len(sd.Methods))}
	for i, m := range sd.Methods {
		svc.Methods[i] = provider.Method{Name: m.Name, ParamTypes: m.ParamTypes, ReturnType: m.ReturnType}
	}
	if sd.Proto == nil {
		svc.Invoker = pl
		return svc
	}
	for i := range svc.Methods {
		if md := sd.Proto.Methods().ByName(protoreflect.Name(svc.Methods[i].Name)); md != nil {
			svc.Methods[i].ParamTypes = []string{string(md.Input().FullName())}
			svc.Methods[i].ReturnType = string(md.Output().FullName())
		}
	}
	svc.Proto = &provider.ProtoService{Desc: sd.Proto, Files: sd.Files, Invoker: protoInvoker{pl}}
	return svc
}

// protoInvoker is a plugin as the provider calls a protobuf service.
type protoInvoker struct{ pl Plugin }

func (pi protoInvoker) CallProto(ctx context.Context, c provider.ProtoCall, req []byte, done func([]byte, rpc.Metadata, *triple.Status)) {
	pi.pl.CallProto(ctx, protoCall(c), req, func(resp []byte, trailer rpc.Metadata, st *plugins.Status) {
		done(resp, trailer, status(st))
	})
}

func (pi protoInvoker) OpenStream(ctx context.Context, c provider.ProtoCall) (provider.ProtoStream, error) {
	s, err := pi.pl.OpenStream(ctx, protoCall(c))
	if err != nil {
		return nil, statusErr(err)
	}
	return stream{s}, nil
}

// stream is a plugin's stream as the provider relays it.
type stream struct{ s *plugins.Stream }

func (s stream) Send(msg []byte) error { return statusErr(s.s.Send(msg)) }
func (s stream) CloseSend() error      { return statusErr(s.s.CloseSend()) }
func (s stream) Recv() ([]byte, error) {
	msg, err := s.s.Recv()
	return msg, statusErr(err)
}
func (s stream) Header() (rpc.Metadata, error) {
	md, err := s.s.Header()
	return md, statusErr(err)
}
func (s stream) Trailer() rpc.Metadata { return s.s.Trailer() }

func protoCall(c provider.ProtoCall) plugins.ProtoCall {
	return plugins.ProtoCall{Service: c.Service, Version: c.Version, Group: c.Group, Method: c.Method, Metadata: c.Metadata}
}

// status is a plugin's status as Triple's: the same gRPC codes.
func status(st *plugins.Status) *triple.Status {
	if st == nil {
		return nil
	}
	return &triple.Status{Code: triple.Code(st.Code), Message: st.Message, Details: st.Details}
}

// statusErr passes nil and io.EOF, and makes a plugin's *Status Triple's.
func statusErr(err error) error {
	var st *plugins.Status
	if err == nil || err == io.EOF || !errors.As(err, &st) {
		return err
	}
	return status(st)
}
