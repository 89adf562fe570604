package sdk

import (
	"context"
	"testing"

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
	s := newServer(context.Background(), d, nil)
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
