package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/greetgrpc"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/registry/zookeeper"
	"github.com/dubbo-lab/dubbo/node/url"
)

// A protobuf service served over tri:// is called with its request message
// as JSON, through a real consumer whose Triple client asks the provider's
// reflection for the descriptor (a grpc-go server stands for the provider).
func TestProtobufService(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	srv := greetgrpc.Start(t, greetgrpc.Options{})
	reg, err := zookeeper.New(url.MustParse("zookeeper://"+zkAddr), zookeeper.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	u := url.MustParse("tri://" + srv.Addr() + "/greet.GreetService?interface=greet.GreetService&side=provider&application=greet-app")
	if err := reg.Register(ctx, u); err != nil {
		t.Fatal(err)
	}
	cons, err := consumer.New(ctx, consumer.Config{Registry: "zookeeper://" + zkAddr}, consumer.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	h := newServer(Options{Invoker: cons, Types: cons, Logger: quietLogger()}).Handler()

	tests := []struct {
		name, target, body string
		status             int
		want               string // in the response
		types              string
	}{
		{"unary", "/invoke/greet.GreetService/Greet", `[{"name":"x"}]`, 200, `{"result":{"greeting":"Hello, x"}}`, "greet.GreetRequest"},
		{"unknown field", "/invoke/greet.GreetService/Greet", `[{"nme":"x"}]`, 400, `unknown field \"nme\"`, ""},
		{"two arguments", "/invoke/greet.GreetService/Greet", `[{},{}]`, 400, `give one argument`, ""},
		{"streaming method", "/invoke/greet.GreetService/GreetStream", `[]`, 400, `bidi-streaming`, ""},
		{"unknown method", "/invoke/greet.GreetService/Nope", `[{}]`, 404, `service_not_found`, ""},
		{"provider error", "/invoke/greet.GreetService/Greet", `[{"name":"fail:14:down"}]`, 502, `Unavailable: down`, "greet.GreetRequest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, out, hdr := do(t, h, http.MethodPost, tt.target, tt.body)
			got, _ := json.Marshal(out)
			if status != tt.status || !strings.Contains(string(got), tt.want) {
				t.Fatalf("got %d %s\nwant %d with %s", status, got, tt.status, tt.want)
			}
			if h := hdr.Get("Dubbo-Param-Types"); h != tt.types {
				t.Errorf("Dubbo-Param-Types %q, want %q", h, tt.types)
			}
		})
	}
}
