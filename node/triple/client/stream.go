package client

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Stream opens a streaming call of a protobuf method; its messages are
// rpc.Messages. It lasts until the provider ends it or ctx is done: the
// context's deadline, if any, is the whole stream's (grpc-timeout), and
// Config.Timeout does not apply.
func (c *Client) Stream(ctx context.Context, inv *rpc.Invocation) (rpc.Stream, error) {
	cc, err := c.pick()
	if err != nil {
		return nil, &rpc.CallError{Kind: rpc.ErrConnection, Service: inv.Service, Method: inv.Method, Address: c.addr, Detail: err.Error()}
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &stream{c: c, ctx: ctx, cancel: cancel, inv: inv}
	// Both directions may stream: the wire is the same for every kind,
	// and the caller sends and closes as the method's kind says.
	desc := &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}
	s.cs, err = cc.NewStream(metadata.NewOutgoingContext(ctx, outgoing(inv)), desc, "/"+inv.Service+"/"+inv.Method,
		grpc.ForceCodec(protoCodec))
	if err != nil {
		cancel()
		return nil, s.err(err)
	}
	return s, nil
}

type stream struct {
	c      *Client
	ctx    context.Context
	cancel context.CancelFunc
	inv    *rpc.Invocation
	cs     grpc.ClientStream
}

func (s *stream) Send(m rpc.Message) error {
	if err := s.cs.SendMsg(m.Bytes); err != nil {
		if errors.Is(err, io.EOF) {
			// The call has ended; Recv tells how.
			return err
		}
		return s.err(err)
	}
	return nil
}

func (s *stream) CloseSend() error { return s.cs.CloseSend() }

func (s *stream) Recv() (rpc.Message, error) {
	var b []byte
	err := s.cs.RecvMsg(&b)
	if err == nil {
		return rpc.Message{Bytes: b}, nil
	}
	s.cancel() // the call is over: release what grpc-go holds for it
	if errors.Is(err, io.EOF) {
		return rpc.Message{}, io.EOF
	}
	return rpc.Message{}, s.err(err)
}

// err is a failed stream's error; a business exception is returned as
// the *rpc.Exception itself.
func (s *stream) err(err error) error {
	var header, trailer metadata.MD
	if s.cs != nil {
		header, _ = s.cs.Header()
		trailer = s.cs.Trailer()
	}
	ex, err := s.c.failure(s.ctx, s.inv, err, header, trailer)
	if ex != nil {
		return ex
	}
	return err
}
