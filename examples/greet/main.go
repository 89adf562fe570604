// Command greet is the example protobuf handler plugin: it serves
// greet.GreetService (greetpb/greet.proto) — Greet, GreetServerStream,
// GreetClientStream and GreetStream — through the node that launches it.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dubbo-lab/dubbo/examples/greet/greetpb"
	"github.com/dubbo-lab/dubbo/plugins/sdk"
)

// Greeter is the business code: one method per rpc, on the generated
// message types.
type Greeter struct{}

// Greet answers "Hello, <name>".
func (Greeter) Greet(_ context.Context, req *greetpb.GreetRequest) (*greetpb.GreetResponse, error) {
	return &greetpb.GreetResponse{Greeting: "Hello, " + req.Name}, nil
}

// GreetServerStream sends count greetings, "Hello, <name> #i" for i from 1.
func (Greeter) GreetServerStream(req *greetpb.GreetStreamRequest, out sdk.Sender[*greetpb.GreetResponse]) error {
	for i := range req.Count {
		if err := out.Send(&greetpb.GreetResponse{Greeting: fmt.Sprintf("Hello, %s #%d", req.Name, i+1)}); err != nil {
			return err // the caller went away
		}
	}
	return nil
}

// GreetClientStream answers "Hello, " and the names it got, joined by ",".
func (Greeter) GreetClientStream(in sdk.Receiver[*greetpb.GreetRequest]) (*greetpb.GreetResponse, error) {
	var names []string
	for {
		req, err := in.Recv()
		if err == io.EOF {
			return &greetpb.GreetResponse{Greeting: "Hello, " + strings.Join(names, ",")}, nil
		}
		if err != nil {
			return nil, err
		}
		names = append(names, req.Name)
	}
}

// GreetStream answers each request with "Hello, <name>" as it comes.
func (Greeter) GreetStream(s sdk.Stream[*greetpb.GreetRequest, *greetpb.GreetResponse]) error {
	for {
		req, err := s.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.Send(&greetpb.GreetResponse{Greeting: "Hello, " + req.Name}); err != nil {
			return err
		}
	}
}

func main() {
	var g Greeter
	err := sdk.Serve(sdk.ProtoService{
		Service: greetpb.File_greet_proto.Services().ByName("GreetService"),
		Methods: []sdk.ProtoMethod{
			sdk.Unary("Greet", g.Greet),
			sdk.ServerStream("GreetServerStream", g.GreetServerStream),
			sdk.ClientStream("GreetClientStream", g.GreetClientStream),
			sdk.BidiStream("GreetStream", g.GreetStream),
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "greet:", err)
		os.Exit(1)
	}
}
