package jsoncall

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/dubbo-lab/dubbo/internal/testkit/greetgrpc"
	"github.com/dubbo-lab/dubbo/node/idl"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/triple/client"
)

// descriptors describes greet.GreetService, as its providers' reflection
// does, and no other service.
type descriptors struct{ err error }

func (d descriptors) ProtoService(_ context.Context, iface, _, _ string) (protoreflect.ServiceDescriptor, error) {
	if d.err != nil {
		return nil, d.err
	}
	if iface != greetgrpc.Service {
		return nil, fmt.Errorf("%s: %w", iface, idl.ErrNoDescriptor)
	}
	d2, err := greetgrpc.Files().FindDescriptorByName(greetgrpc.Service)
	if err != nil {
		return nil, err
	}
	return d2.(protoreflect.ServiceDescriptor), nil
}

func TestPrepare(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	r := Resolvers{Services: descriptors{}, Types: metadata{}}
	ctx := context.Background()

	p, err := Prepare(ctx, r, Call{Interface: greetgrpc.Service, Method: "Greet", Args: raws(`{"name":"x"}`),
		Timeout: time.Second, Attachments: map[string]string{"k": "v"}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	msg, ok := rpc.MessageArg(p.Invocation)
	if !ok || msg.Type != greetgrpc.Request || greetgrpc.Decode(t, greetgrpc.Request, msg.Bytes) != `{"name":"x"}` {
		t.Fatalf("invocation %+v", p.Invocation)
	}
	if p.Types[0] != greetgrpc.Request || p.Invocation.Attachment("k") != "v" || p.Invocation.Attachment("timeout") != "1000" || p.Streaming() {
		t.Errorf("prepared %+v, invocation %+v", p, p.Invocation)
	}
	out, err := p.Result(&rpc.Result{Value: rpc.Message{Bytes: greetgrpc.Encode(t, greetgrpc.Response, `{"greeting":"Hello, x"}`)}})
	if js, _ := json.Marshal(out); err != nil || string(js) != `{"greeting":"Hello, x"}` {
		t.Errorf("result %s, %v", js, err)
	}

	// Not a protobuf service: a Java interface, its types from the metadata.
	p, err = Prepare(ctx, r, Call{Interface: "org.example.Greeter", Method: "add", Args: raws("1", "2")}, quiet)
	if err != nil || p.Proto != nil || strings.Join(p.Types, ",") != "int,int" {
		t.Fatalf("Java-interface call: %+v, %v", p, err)
	}
	out, _ = p.Result(&rpc.Result{Value: int32(3)})
	if js, _ := json.Marshal(out); string(js) != "3" {
		t.Errorf("Java result %s", js)
	}

	// A resolver that fails otherwise fails the call.
	down := &rpc.CallError{Kind: rpc.ErrConnection, Service: greetgrpc.Service}
	if _, err := Prepare(ctx, Resolvers{Services: descriptors{err: down}}, Call{Interface: greetgrpc.Service, Method: "Greet", Args: raws(`{}`)}, quiet); !errors.Is(err, rpc.ErrConnection) {
		t.Errorf("resolver down: %v", err)
	}

	bad := []struct {
		c    Call
		kind error
		want string
	}{
		{Call{Method: "Greet"}, rpc.ErrBadRequest, "give one argument"},
		{Call{Method: "Greet", Args: raws(`{}`, `{}`)}, rpc.ErrBadRequest, "give one argument"},
		{Call{Method: "Greet", Args: raws(`{"nme":"x"}`)}, rpc.ErrBadRequest, `unknown field "nme"`},
		{Call{Method: "GreetStream", Args: raws(`{}`)}, rpc.ErrBadRequest, "give no argument"},
		{Call{Method: "Nope", Args: raws(`{}`)}, rpc.ErrServiceNotFound, "GreetServerStream"},
	}
	for _, tt := range bad {
		tt.c.Interface = greetgrpc.Service
		_, err := Prepare(ctx, r, tt.c, quiet)
		if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %s: %v, want %v mentioning %q", tt.c.Method, tt.c.Args, err, tt.kind, tt.want)
		}
	}
}

// lines yields the JSON lines of s, as dubbo call reads its stdin.
func lines(s string) func() (json.RawMessage, error) {
	sc := bufio.NewScanner(strings.NewReader(s))
	return func() (json.RawMessage, error) {
		if sc.Scan() {
			return json.RawMessage(sc.Text()), nil
		}
		return nil, io.EOF
	}
}

func TestStream(t *testing.T) {
	srv := greetgrpc.Start(t, greetgrpc.Options{})
	c := client.New(srv.Addr(), client.Config{})
	t.Cleanup(func() { c.Close() })
	for !c.Available() {
		time.Sleep(5 * time.Millisecond)
	}
	quiet := slog.New(slog.DiscardHandler)
	ctx := context.Background()
	run := func(method, in string, args ...string) ([]string, error) {
		t.Helper()
		p, err := Prepare(ctx, Resolvers{Services: descriptors{}}, Call{Interface: greetgrpc.Service, Method: method, Args: raws(args...)}, quiet)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		err = p.Stream(ctx, c, lines(in), func(js json.RawMessage) error {
			out = append(out, string(js))
			return nil
		})
		return out, err
	}

	out, err := run("GreetServerStream", "", `{"name":"s","count":2}`)
	if err != nil || strings.Join(out, " ") != `{"greeting":"Hello, s #1"} {"greeting":"Hello, s #2"}` {
		t.Errorf("server stream: %v, %v", out, err)
	}
	out, err = run("GreetClientStream", "{\"name\":\"a\"}\n{\"name\":\"b\"}\n")
	if err != nil || strings.Join(out, " ") != `{"greeting":"Hello, a,b"}` {
		t.Errorf("client stream: %v, %v", out, err)
	}
	out, err = run("GreetStream", "{\"name\":\"a\"}\n{\"name\":\"b\"}\n")
	if err != nil || strings.Join(out, " ") != `{"greeting":"Hello, a"} {"greeting":"Hello, b"}` {
		t.Errorf("bidi stream: %v, %v", out, err)
	}
	// A line that is not the request message ends the call, naming it.
	_, err = run("GreetStream", "{\"name\":\"a\"}\n{\"nme\":\"b\"}\n")
	if !errors.Is(err, rpc.ErrBadRequest) || !strings.Contains(err.Error(), "request 2") || !strings.Contains(err.Error(), "nme") {
		t.Errorf("bad line: %v", err)
	}
}
