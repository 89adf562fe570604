package sdk

import (
	"context"
	"errors"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/plugins/internal/wire"
)

// Sender is what a server-streaming handler sends its responses on.
type Sender[Resp proto.Message] interface {
	// Context is the call's: it carries the caller's metadata (Metadata)
	// and ends when the caller cancels or its deadline passes.
	Context() context.Context
	// Send sends one response; it waits while the caller is behind on
	// reading, and fails once the call has ended.
	Send(Resp) error
	// SetHeader adds to the response header, sent with the first response
	// (or the end); after that it fails.
	SetHeader(metadata.MD) error
	// SetTrailer adds to the trailer sent with the end.
	SetTrailer(metadata.MD)
}

// Receiver is what a client-streaming handler reads its requests from.
type Receiver[Req proto.Message] interface {
	// Context, SetHeader and SetTrailer are as Sender's.
	Context() context.Context
	SetHeader(metadata.MD) error
	SetTrailer(metadata.MD)
	// Recv returns the next request, or io.EOF once the caller has sent
	// them all, or the call's status once it has ended.
	Recv() (Req, error)
}

// Stream is what a bidi-streaming handler reads its requests from and
// sends its responses on.
type Stream[Req, Resp proto.Message] interface {
	Sender[Resp]
	Receiver[Req]
}

// ServerStream serves a method that takes one message and answers a
// stream: h gets the request and sends the responses on out; its error
// ends the call as Unary's does, nil with OK.
func ServerStream[Req any, PReq interface {
	*Req
	proto.Message
}, Resp any, PResp interface {
	*Resp
	proto.Message
}](name string, h func(req PReq, out Sender[PResp]) error) ProtoMethod {
	m := newProtoMethod[PReq, PResp](name, rpc.ServerStream, "sdk.ServerStream")
	m.stream = func(s *serverStream) error {
		t := typedStream[Req, PReq, PResp]{s}
		req, err := t.Recv()
		if err == io.EOF {
			return status.Error(codes.Internal, "the call ended before its request")
		}
		if err != nil {
			return err
		}
		return h(req, t)
	}
	return m
}

// ClientStream serves a method that takes a stream and answers one
// message: h reads the requests from in and returns the response, or an
// error as Unary's.
func ClientStream[Req any, PReq interface {
	*Req
	proto.Message
}, Resp any, PResp interface {
	*Resp
	proto.Message
}](name string, h func(in Receiver[PReq]) (PResp, error)) ProtoMethod {
	m := newProtoMethod[PReq, PResp](name, rpc.ClientStream, "sdk.ClientStream")
	m.stream = func(s *serverStream) error {
		t := typedStream[Req, PReq, PResp]{s}
		resp, err := h(t)
		if err != nil {
			return err
		}
		return t.Send(resp)
	}
	return m
}

// BidiStream serves a method that takes a stream and answers a stream: h
// reads requests from s and sends responses on it, in any order; its
// error ends the call as Unary's does, nil with OK.
func BidiStream[Req any, PReq interface {
	*Req
	proto.Message
}, Resp any, PResp interface {
	*Resp
	proto.Message
}](name string, h func(s Stream[PReq, PResp]) error) ProtoMethod {
	m := newProtoMethod[PReq, PResp](name, rpc.BidiStream, "sdk.BidiStream")
	m.stream = func(s *serverStream) error { return h(typedStream[Req, PReq, PResp]{s}) }
	return m
}

// serverStream is one stream from the node, served on a goroutine of its
// own; it is its handler's context (Context).
type serverStream struct {
	ctx context.Context // the link's for the stream
	protoState

	ws     *wire.Stream
	m      *protoMethod
	header metadata.MD
	sent   bool   // the header went out: no more SetHeader
	buf    []byte // for marshaling, reused: Send copies it out
}

// Value gives the handler its stream's state, and the link's values.
func (s *serverStream) Value(key any) any {
	if v, ok := s.value(key); ok {
		return v
	}
	return s.ctx.Value(key)
}

func (s *serverStream) Deadline() (time.Time, bool) { return s.ctx.Deadline() }
func (s *serverStream) Done() <-chan struct{}       { return s.ctx.Done() }
func (s *serverStream) Err() error                  { return s.ctx.Err() }
func (s *serverStream) Context() context.Context    { return s }

func (s *serverStream) SetHeader(md metadata.MD) error {
	if s.sent {
		return status.Error(codes.Internal, "SetHeader after the header was sent")
	}
	s.header = metadata.Join(s.header, md)
	return nil
}

func (s *serverStream) SetTrailer(md metadata.MD) { SetTrailer(s, md) }

// sendHeader sends the header the handler set, if any, once.
func (s *serverStream) sendHeader() error {
	if s.sent {
		return nil
	}
	s.sent = true
	if len(s.header) == 0 {
		return nil
	}
	return s.ws.SendHeader(toWire(s.header))
}

func (s *serverStream) send(m proto.Message) error {
	if err := s.sendHeader(); err != nil {
		return streamError(s, err)
	}
	var err error
	if s.buf, err = (proto.MarshalOptions{}).MarshalAppend(s.buf[:0], m); err != nil {
		return status.Errorf(codes.Internal, "the response cannot be encoded: %v", err)
	}
	return streamError(s, s.ws.Send(s.buf))
}

func (s *serverStream) recv(m proto.Message) error {
	b, err := s.ws.Recv()
	if err != nil {
		return streamError(s, err)
	}
	return unmarshal(b, m)
}

// streamError is what Send and Recv give a handler: io.EOF as it is, the
// stream's end as a grpc-go status, which the handler may return as it
// is.
func streamError(s *serverStream, err error) error {
	switch {
	case err == nil || err == io.EOF:
		return err
	case s.Err() != nil:
		return status.FromContextError(s.Err()).Err()
	case errors.Is(err, wire.ErrTooBig):
		return status.Error(codes.ResourceExhausted, err.Error())
	}
	return status.Error(codes.Unavailable, err.Error())
}

// typedStream is a serverStream with its method's message types.
type typedStream[Req any, PReq interface {
	*Req
	proto.Message
}, PResp proto.Message] struct{ *serverStream }

func (t typedStream[Req, PReq, PResp]) Send(m PResp) error { return t.send(m) }

func (t typedStream[Req, PReq, PResp]) Recv() (PReq, error) {
	req := PReq(new(Req))
	if err := t.recv(req); err != nil {
		return nil, err
	}
	return req, nil
}

// callStream runs m's handler on s; a panic is an Internal status, and the
// plugin serves on.
func (m *protoMethod) callStream(s *serverStream) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = m.panicked(r)
		}
	}()
	return m.stream(s)
}

// ServeStream serves a stream the node opened (wire.StreamServer).
func (s *server) ServeStream(ctx context.Context, head []byte, ws *wire.Stream) (*wire.Status, rpc.Metadata) {
	ref, md, _, err := wire.ParseProtoCall(head)
	if err != nil {
		return &wire.Status{Code: codes.Internal, Message: err.Error()}, nil
	}
	m := s.protos.method(ref)
	if m == nil || m.stream == nil {
		return &wire.Status{Code: codes.Unimplemented, Message: "this plugin serves no streaming method with that reference"}, nil
	}
	ss := &serverStream{ctx: ctx, ws: ws, m: m}
	ss.meta.raw = md
	ss.info.caller = s.caller
	err = m.callStream(ss)
	if herr := ss.sendHeader(); herr != nil && err == nil {
		err = streamError(ss, herr)
	}
	trailer := toWire(ss.meta.trailer)
	if err != nil {
		return statusOf(err), trailer
	}
	return nil, trailer
}
