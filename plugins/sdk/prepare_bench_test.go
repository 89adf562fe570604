package sdk

import (
	"context"
	"testing"

	"github.com/dubbo-lab/dubbo/examples/greet/greetpb"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/plugins/internal/wire"
)

type benchGreeter struct{}

func (benchGreeter) SayHello(_ context.Context, name string) (string, error) {
	return "Hello, " + name, nil
}

// BenchmarkPrepareRun is what the plugin does for one sayHello call the
// node sends: decode, run the handler, encode the reply.
func BenchmarkPrepareRun(b *testing.B) {
	d, err := NewDispatcher(Service{Interface: "org.example.Greeter", Version: "1.0.0", Handler: benchGreeter{}})
	if err != nil {
		b.Fatal(err)
	}
	s := newServer(context.Background(), &served{d: d}, nil)
	call, err := wire.EncodeCall(&rpc.Invocation{Service: "org.example.Greeter", Version: "1.0.0", Method: "sayHello",
		ParamTypes: []string{"java.lang.String"}, Args: []any{"world"},
		Attachments: map[string]any{"path": "org.example.Greeter", "interface": "org.example.Greeter", "version": "1.0.0", "timeout": "1000"}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		run, _ := s.Prepare(call)
		run.Run(ctx)
	}
}

// BenchmarkPrepareRunProto is BenchmarkPrepareRun for the protobuf Greet
// of greet.GreetService: parse, unmarshal, run the handler, marshal.
func BenchmarkPrepareRunProto(b *testing.B) {
	greet := func(_ context.Context, req *greetpb.GreetRequest) (*greetpb.GreetResponse, error) {
		return &greetpb.GreetResponse{Greeting: "Hello, " + req.Name}, nil
	}
	sv, err := newServed([]Servable{ProtoService{Service: greetDesc, Methods: []ProtoMethod{Unary("Greet", greet)}}})
	if err != nil {
		b.Fatal(err)
	}
	s := newServer(context.Background(), sv, nil)
	call, err := wire.AppendProtoCall(nil, wire.MethodRef{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	call = append(call, "\x0a\x05world"...)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		run, _ := s.PrepareProto(call)
		run.Run(ctx)
	}
}
