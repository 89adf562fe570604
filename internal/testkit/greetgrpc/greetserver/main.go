// Command greetserver is a plain grpc-go server of greet.GreetService's
// unary Greet, written as a Go gRPC user writes one: the service interface
// and grpc.ServiceDesc that protoc-gen-go-grpc generates, over
// examples/greet's generated messages, on a stock grpc.NewServer(). It is
// the anchor of the Triple benchmark (test/interop's BenchmarkTripleGreet),
// in a process of its own so that its CPU time can be read from /proc.
//
//	greetserver [-addr 127.0.0.1:0]
//
// It prints "READY host:port" once it listens, and runs until SIGTERM
// (graceful stop) or until its stdin closes (the test that started it is
// gone).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"

	"github.com/dubbo-lab/dubbo/examples/greet/greetpb"
)

// GreetServiceServer is the part of greet.GreetService served here: the
// benchmark calls Greet only.
type GreetServiceServer interface {
	Greet(context.Context, *greetpb.GreetRequest) (*greetpb.GreetResponse, error)
}

// greetHandler is protoc-gen-go-grpc's _GreetService_Greet_Handler.
func greetHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	in := new(greetpb.GreetRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(GreetServiceServer).Greet(ctx, in)
	}
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: "/greet.GreetService/Greet"}
	handler := func(ctx context.Context, req any) (any, error) {
		return srv.(GreetServiceServer).Greet(ctx, req.(*greetpb.GreetRequest))
	}
	return interceptor(ctx, in, info, handler)
}

var greetServiceDesc = grpc.ServiceDesc{
	ServiceName: "greet.GreetService",
	HandlerType: (*GreetServiceServer)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Greet", Handler: greetHandler}},
	Metadata:    "greet.proto",
}

type greeter struct{}

func (greeter) Greet(_ context.Context, req *greetpb.GreetRequest) (*greetpb.GreetResponse, error) {
	return &greetpb.GreetResponse{Greeting: "Hello, " + req.GetName()}, nil
}

// newServer is a stock grpc-go server with the service registered.
func newServer() *grpc.Server {
	s := grpc.NewServer()
	s.RegisterService(&greetServiceDesc, greeter{})
	return s
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	if err := run(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "greetserver:", err)
		os.Exit(1)
	}
}

func run(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s := newServer()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	fmt.Printf("READY %s\n", ln.Addr())

	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	orphaned := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(orphaned)
	}()
	select {
	case <-term:
		s.GracefulStop()
	case <-orphaned:
		s.Stop()
	case err := <-served:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	}
	return nil
}
