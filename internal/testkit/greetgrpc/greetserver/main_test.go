package main

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/dubbo-lab/dubbo/examples/greet/greetpb"
)

// The server answers Greet as greet.proto's service does, and only Greet.
func TestGreet(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := newServer()
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	cc, err := grpc.Dial(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var res greetpb.GreetResponse
	if err := cc.Invoke(ctx, "/greet.GreetService/Greet", &greetpb.GreetRequest{Name: "x"}, &res); err != nil || res.Greeting != "Hello, x" {
		t.Errorf("Greet(x) = %q, %v; want Hello, x", res.Greeting, err)
	}
	err = cc.Invoke(ctx, "/greet.GreetService/GreetServerStream", &greetpb.GreetStreamRequest{Name: "x"}, &res)
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("GreetServerStream: %v, want Unimplemented", err)
	}
}
