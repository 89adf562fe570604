package sdktest

import (
	"context"
	"errors"
	"fmt"
	"io"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/plugins/internal/wire"
)

// CallProto calls the unary method of the plugin's protobuf service with
// req and fills resp with the response, as a Triple caller's call reaches
// the handler through the node. It returns the trailer the handler set,
// and a grpc-go status error when the call fails. method is the name the
// service's descriptor gives it (Greet), preceded by the service's key and
// a slash when the plugin serves more than one protobuf service
// ("greet.GreetService/Greet"). ctx's outgoing metadata
// (metadata.NewOutgoingContext) and deadline go with the call.
func (h *Handler) CallProto(ctx context.Context, method string, req, resp proto.Message) (trailer metadata.MD, err error) {
	ref, m, err := h.protoMethod(method)
	if err != nil {
		return nil, err
	}
	if m.Kind != rpc.Unary {
		return nil, status.Errorf(codes.Internal, "%s is a %v method: open a stream (OpenStream) to call it", method, m.Kind)
	}
	head, err := wire.AppendProtoCall(nil, ref, outgoing(ctx))
	if err != nil {
		return nil, status.Errorf(codes.ResourceExhausted, "%s: %v", method, err)
	}
	b, err := proto.Marshal(req)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s: the request cannot be encoded: %v", method, err)
	}
	type outcome struct {
		reply []byte
		err   error
	}
	ch := make(chan outcome, 1)
	h.link.CallProtoAsync(ctx, head, b, func(reply []byte, err error) { ch <- outcome{reply, err} })
	o := <-ch
	if o.err != nil {
		return nil, linkStatus(ctx, o.err)
	}
	msg, tr, st, err := wire.ParseProtoReply(o.reply)
	switch {
	case err != nil:
		return nil, status.Errorf(codes.Internal, "the plugin sent a reply that cannot be decoded: %v", err)
	case st != nil:
		return fromWire(tr), statusError(st)
	}
	if err := proto.Unmarshal(msg, resp); err != nil {
		return fromWire(tr), status.Errorf(codes.Internal, "the response is not a %s: %v", resp.ProtoReflect().Descriptor().FullName(), err)
	}
	return fromWire(tr), nil
}

// Stream is a stream to a streaming method of a protobuf service
// (OpenStream), as a Triple caller's reaches the handler through the
// node. Send and CloseSend may run on one goroutine while Recv runs on
// another.
type Stream struct {
	ctx context.Context
	s   *wire.Stream
}

// OpenStream opens a stream to a server-, client- or bidi-streaming method
// of the plugin's protobuf service, named as CallProto's method. ctx's
// outgoing metadata and deadline go with it; when ctx ends, the stream
// ends on both sides. Errors are grpc-go status errors.
func (h *Handler) OpenStream(ctx context.Context, method string) (*Stream, error) {
	ref, m, err := h.protoMethod(method)
	if err != nil {
		return nil, err
	}
	if m.Kind == rpc.Unary {
		return nil, status.Errorf(codes.Internal, "%s is a unary method: call it with CallProto", method)
	}
	head, err := wire.AppendProtoCall(nil, ref, outgoing(ctx))
	if err != nil {
		return nil, status.Errorf(codes.ResourceExhausted, "%s: %v", method, err)
	}
	s, err := h.link.OpenStream(ctx, head)
	if err != nil {
		return nil, linkStatus(ctx, err)
	}
	return &Stream{ctx: ctx, s: s}, nil
}

// Send sends one request message, waiting while the handler is behind on
// reading. It returns io.EOF once the handler ended the stream (Recv then
// says how).
func (s *Stream) Send(m proto.Message) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return status.Errorf(codes.Internal, "the request cannot be encoded: %v", err)
	}
	if err = s.s.Send(b); err == nil || err == io.EOF {
		return err
	}
	return linkStatus(s.ctx, err)
}

// CloseSend tells the handler that no more requests come.
func (s *Stream) CloseSend() error {
	if err := s.s.CloseSend(); err != nil {
		return linkStatus(s.ctx, err)
	}
	return nil
}

// Header waits for the handler's response header.
func (s *Stream) Header() (metadata.MD, error) {
	md, err := s.s.Header()
	if err != nil {
		return nil, linkStatus(s.ctx, err)
	}
	return fromWire(md), nil
}

// Recv fills m with the next response; it returns io.EOF once the stream
// ended OK, or the status error it ended with.
func (s *Stream) Recv(m proto.Message) error {
	b, err := s.s.Recv()
	switch {
	case err == nil:
		if err := proto.Unmarshal(b, m); err != nil {
			return status.Errorf(codes.Internal, "the response is not a %s: %v", m.ProtoReflect().Descriptor().FullName(), err)
		}
		return nil
	case err != io.EOF:
		return linkStatus(s.ctx, err)
	}
	if st, _ := s.s.End(); st != nil {
		return statusError(st)
	}
	return io.EOF
}

// Trailer is the trailer the handler ended the stream with, once Recv
// returned an error.
func (s *Stream) Trailer() metadata.MD {
	_, tr := s.s.End()
	return fromWire(tr)
}

// protoMethod finds the protobuf method a name given to CallProto or
// OpenStream names, and the reference calls name it by.
func (h *Handler) protoMethod(method string) (wire.MethodRef, wire.Method, error) {
	svc, name, err := h.service(method, true)
	if err != nil {
		return wire.MethodRef{}, wire.Method{}, status.Error(codes.Unimplemented, err.Error())
	}
	for i, s := range h.services {
		if s.Interface != svc.Interface || s.Version != svc.Version || s.Group != svc.Group {
			continue
		}
		for j, m := range s.Methods {
			if m.Name == name {
				return wire.MethodRef{Service: uint32(i), Method: uint32(j)}, m, nil
			}
		}
		return wire.MethodRef{}, wire.Method{}, status.Errorf(codes.Unimplemented, "%s has no method %s; it has %s", s.Interface, name, methodNames(s))
	}
	return wire.MethodRef{}, wire.Method{}, status.Errorf(codes.Unimplemented, "no service for %s", method) // service found it
}

// outgoing is ctx's outgoing metadata as the link carries it.
func outgoing(ctx context.Context) rpc.Metadata {
	md, _ := metadata.FromOutgoingContext(ctx)
	var out rpc.Metadata
	for k, vs := range md {
		for _, v := range vs {
			out = append(out, rpc.MetadataField{Key: k, Value: v})
		}
	}
	return out
}

func fromWire(md rpc.Metadata) metadata.MD {
	if len(md) == 0 {
		return nil
	}
	out := make(metadata.MD, len(md))
	for _, f := range md {
		out[f.Key] = append(out[f.Key], f.Value)
	}
	return out
}

// statusError is the grpc-go error of a status the handler ended with,
// with its details.
func statusError(st *wire.Status) error {
	if len(st.Details) > 0 {
		var p spb.Status
		if proto.Unmarshal(st.Details, &p) == nil {
			return status.FromProto(&p).Err()
		}
	}
	return status.Error(st.Code, st.Message)
}

// linkStatus is the status of a call or stream that failed on the link.
func linkStatus(ctx context.Context, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "the handler did not answer in time")
	case ctx.Err() != nil:
		return status.Error(codes.Canceled, ctx.Err().Error())
	case errors.Is(err, wire.ErrTooBig):
		return status.Error(codes.ResourceExhausted, err.Error())
	case errors.Is(err, wire.ErrSendClosed):
		return status.Error(codes.FailedPrecondition, err.Error())
	}
	return status.Error(codes.Unavailable, fmt.Sprintf("the link to the handler broke: %v", err))
}
