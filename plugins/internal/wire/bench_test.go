package wire

import (
	"testing"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// BenchmarkAppendCall is what the node spends encoding one sayHello call
// a provider passes to a plugin, with the attachments a Dubbo consumer
// sends, its head encoded afresh or known (AppendCallWithHead).
func BenchmarkAppendCall(b *testing.B) {
	inv := &rpc.Invocation{Service: "org.example.Greeter", Version: "1.0.0", Group: "plugin", Method: "sayHello",
		ParamTypes: []string{"java.lang.String"}, Args: []any{"world"},
		Attachments: map[string]any{"path": "org.example.Greeter", "interface": "org.example.Greeter", "version": "1.0.0",
			"group": "plugin", "timeout": "1000"}}
	head, _ := AppendCallHead(nil, inv)
	buf := make([]byte, 0, 256)
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = AppendCall(buf[:0], inv)
		}
	})
	b.Run("head-known", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = AppendCallWithHead(buf[:0], head, inv)
		}
	})
}
