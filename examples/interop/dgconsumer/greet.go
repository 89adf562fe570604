package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"dubbo.apache.org/dubbo-go/v3/client"
	triple "dubbo.apache.org/dubbo-go/v3/protocol/triple/triple_protocol"

	"github.com/dubbo-lab/dubbo/examples/interop/greet/greetpb"
)

// greetCalls are the four methods of greet.GreetService, called as the
// client code protoc-gen-go-triple generates calls them; each result is
// the greetings it got, joined by "|".
func greetCalls() []call {
	want := func(greetings string) func(any, error) bool {
		return func(r any, err error) bool { return err == nil && r == greetings }
	}
	return []call{
		{method: "Greet", check: want("Hello, world"), run: func(ctx context.Context, conn *client.Connection, opts []client.CallOption) (any, error) {
			resp := new(greetpb.GreetResponse)
			if err := conn.CallUnary(ctx, []any{&greetpb.GreetRequest{Name: "world"}}, resp, "Greet", opts...); err != nil {
				return nil, err
			}
			return resp.Greeting, nil
		}},
		{method: "GreetServerStream", check: want("Hello, world #1|Hello, world #2|Hello, world #3"),
			run: func(ctx context.Context, conn *client.Connection, opts []client.CallOption) (any, error) {
				raw, err := conn.CallServerStream(ctx, &greetpb.GreetStreamRequest{Name: "world", Count: 3}, "GreetServerStream", opts...)
				if err != nil {
					return nil, err
				}
				s := raw.(*triple.ServerStreamForClient)
				defer s.Close()
				var out []string
				for s.Receive(new(greetpb.GreetResponse)) {
					out = append(out, s.Msg().(*greetpb.GreetResponse).Greeting)
				}
				return strings.Join(out, "|"), s.Err()
			}},
		{method: "GreetClientStream", check: want("Hello, a,b,c"),
			run: func(ctx context.Context, conn *client.Connection, opts []client.CallOption) (any, error) {
				raw, err := conn.CallClientStream(ctx, "GreetClientStream", opts...)
				if err != nil {
					return nil, err
				}
				s := raw.(*triple.ClientStreamForClient)
				for _, n := range []string{"a", "b", "c"} {
					if err := s.Send(&greetpb.GreetRequest{Name: n}); err != nil {
						return nil, err
					}
				}
				resp := new(greetpb.GreetResponse)
				if err := s.CloseAndReceive(triple.NewResponse(resp)); err != nil {
					return nil, err
				}
				return resp.Greeting, nil
			}},
		{method: "GreetStream", check: want("Hello, a|Hello, b"),
			run: func(ctx context.Context, conn *client.Connection, opts []client.CallOption) (any, error) {
				raw, err := conn.CallBidiStream(ctx, "GreetStream", opts...)
				if err != nil {
					return nil, err
				}
				s := raw.(*triple.BidiStreamForClient)
				var out []string
				for _, n := range []string{"a", "b"} {
					if err := s.Send(&greetpb.GreetRequest{Name: n}); err != nil {
						return nil, err
					}
					resp := new(greetpb.GreetResponse)
					if err := s.Receive(resp); err != nil {
						return nil, fmt.Errorf("receive: %w", err)
					}
					out = append(out, resp.Greeting)
				}
				if err := s.CloseRequest(); err != nil {
					return nil, err
				}
				// The provider ends the stream once the requests ended.
				if err := s.Receive(new(greetpb.GreetResponse)); !errors.Is(err, io.EOF) {
					return nil, fmt.Errorf("after the last answer: %v, want the end of the stream", err)
				}
				return strings.Join(out, "|"), s.CloseResponse()
			}},
	}
}
