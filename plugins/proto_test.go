package plugins_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/dubbo-lab/dubbo/examples/greet/greetpb"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/plugins"
	"github.com/dubbo-lab/dubbo/plugins/sdk"
)

// greetProto is greet.GreetService 1.0.0 with a Greet that answers from
// the request's name, which says what to do.
func greetProto() sdk.ProtoService {
	greet := func(ctx context.Context, req *greetpb.GreetRequest) (*greetpb.GreetResponse, error) {
		switch req.Name {
		case "metadata":
			// The caller's metadata comes back in the trailer.
			sdk.SetTrailer(ctx, sdk.Metadata(ctx))
		case "missing":
			sdk.SetTrailer(ctx, metadata.Pairs("x-why", "gone"))
			return nil, status.Error(codes.NotFound, "no such user")
		case "wait":
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return &greetpb.GreetResponse{Greeting: "Hello, " + req.Name}, nil
	}
	// GreetServerStream sends count greetings, or fails after one for
	// "missing".
	serverStream := func(req *greetpb.GreetStreamRequest, out sdk.Sender[*greetpb.GreetResponse]) error {
		if err := out.SetHeader(metadata.Pairs("x-count", fmt.Sprint(req.Count))); err != nil {
			return err
		}
		for i := range req.Count {
			if err := out.Send(&greetpb.GreetResponse{Greeting: fmt.Sprintf("Hello, %s #%d", req.Name, i+1)}); err != nil {
				return err
			}
			if req.Name == "missing" {
				out.SetTrailer(metadata.Pairs("x-why", "gone"))
				return status.Error(codes.NotFound, "no such user")
			}
		}
		return nil
	}
	return sdk.ProtoService{Service: greetpb.File_greet_proto.Services().ByName("GreetService"), Version: "1.0.0",
		Methods: []sdk.ProtoMethod{sdk.Unary("Greet", greet), sdk.ServerStream("GreetServerStream", serverStream)}}
}

var greetCall = plugins.ProtoCall{Service: "greet.GreetService", Version: "1.0.0", Method: "Greet"}

// unaryOutcome is what CallProto's done got.
type unaryOutcome struct {
	resp    *greetpb.GreetResponse
	trailer rpc.Metadata
	st      *plugins.Status
}

// callGreet calls Greet with name on p and waits for the outcome.
func callGreet(ctx context.Context, t *testing.T, p *plugins.Plugin, c plugins.ProtoCall, name string) unaryOutcome {
	t.Helper()
	req, err := proto.Marshal(&greetpb.GreetRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan unaryOutcome, 1)
	p.CallProto(ctx, c, req, func(resp []byte, trailer rpc.Metadata, st *plugins.Status) {
		o := unaryOutcome{trailer: trailer, st: st}
		if st == nil {
			o.resp = new(greetpb.GreetResponse)
			if err := proto.Unmarshal(resp, o.resp); err != nil {
				o.st = &plugins.Status{Code: codes.DataLoss, Message: err.Error()}
			}
		}
		ch <- o
	})
	select {
	case o := <-ch:
		return o
	case <-time.After(10 * time.Second):
		t.Fatalf("Greet(%q): no outcome in 10s", name)
		return unaryOutcome{}
	}
}

// A plugin's protobuf service reaches the node with its descriptors; the
// Dubbo service beside it is as before.
func TestProtoDescribe(t *testing.T) {
	p := startGreeter(t, startConfig(t, "proto"))
	svcs := p.Services()
	if len(svcs) != 2 || svcs[0].Proto != nil || svcs[1].Key() != "greet.GreetService:1.0.0" {
		t.Fatalf("services = %+v", svcs)
	}
	g := svcs[1]
	if g.Proto == nil || g.Proto.FullName() != "greet.GreetService" || g.Proto.Methods().Len() != 4 {
		t.Fatalf("greet.GreetService's descriptor: %v", g.Proto)
	}
	if _, err := g.Files.FindFileByPath("greet.proto"); err != nil {
		t.Errorf("its files: %v", err)
	}
	if len(g.Methods) != 2 || g.Methods[0].Name != "Greet" || g.Methods[0].Kind != rpc.Unary ||
		g.Methods[1].Name != "GreetServerStream" || g.Methods[1].Kind != rpc.ServerStream {
		t.Errorf("methods = %+v", g.Methods)
	}
}

// TestCallProto: a unary protobuf call's request, metadata and deadline
// reach the handler; the response, trailer and status come back; a call
// the plugin did not describe fails without reaching it.
func TestCallProto(t *testing.T) {
	p := startGreeter(t, startConfig(t, "proto"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if o := callGreet(ctx, t, p, greetCall, "world"); o.st != nil || o.resp.Greeting != "Hello, world" || o.trailer != nil {
		t.Errorf("Greet(world) = %+v", o)
	}
	withMD := greetCall
	withMD.Metadata = rpc.Metadata{{Key: "x-user", Value: "ann"}, {Key: "trace-bin", Value: "\x00\xff"}}
	if o := callGreet(ctx, t, p, withMD, "metadata"); o.st != nil || len(o.trailer) != 2 ||
		o.trailer.Get("x-user") != "ann" || o.trailer.Get("trace-bin") != "\x00\xff" {
		t.Errorf("metadata came back as %+v", o)
	}
	if o := callGreet(ctx, t, p, greetCall, "missing"); o.st == nil || o.st.Code != codes.NotFound || o.st.Message != "no such user" ||
		o.trailer.Get("x-why") != "gone" {
		t.Errorf("Greet(missing) = %+v", o)
	}

	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	start := time.Now()
	if o := callGreet(short, t, p, greetCall, "wait"); o.st == nil || o.st.Code != codes.DeadlineExceeded {
		t.Errorf("a call past its deadline: %+v", o)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a call with a 50ms deadline took %v", took)
	}
	canceled, cancelNow := context.WithCancel(ctx)
	time.AfterFunc(30*time.Millisecond, cancelNow)
	if o := callGreet(canceled, t, p, greetCall, "wait"); o.st == nil || o.st.Code != codes.Canceled {
		t.Errorf("a canceled call: %+v", o)
	}

	for _, tt := range []struct {
		c    plugins.ProtoCall
		says string
	}{
		{plugins.ProtoCall{Service: "greet.GreetService", Version: "1.0.0", Method: "Gret"}, "greet.GreetService:1.0.0 has no method Gret"},
		{plugins.ProtoCall{Service: "greet.GreetService", Method: "Greet"}, "does not serve greet.GreetService (it serves org.example.Greeter:1.0.0, greet.GreetService:1.0.0)"},
		{plugins.ProtoCall{Service: "org.example.Greeter", Version: "1.0.0", Method: "sayHello"}, "org.example.Greeter:1.0.0 is a Dubbo service"},
	} {
		if o := callGreet(ctx, t, p, tt.c, "x"); o.st == nil || o.st.Code != codes.Unimplemented || !strings.Contains(o.st.Message, tt.says) {
			t.Errorf("%s: %+v, want Unimplemented saying %q", tt.c.String(), o.st, tt.says)
		}
	}
	_, err := p.Invoke(ctx, &rpc.Invocation{Service: "greet.GreetService", Version: "1.0.0", Method: "Greet"})
	if !errors.Is(err, rpc.ErrServiceNotFound) || !strings.Contains(err.Error(), "is a protobuf service") {
		t.Errorf("a Dubbo call to the protobuf service: %v", err)
	}
	// The Dubbo service beside it serves on.
	if res := invoke(t, p, greeterCall("sayHello", nil, "dubbo")); res.Value != "Hello, dubbo" {
		t.Errorf("sayHello = %+v", res)
	}
}

// A unary call in flight when the plugin dies fails at once, Unavailable,
// saying so.
func TestCallProtoPluginDies(t *testing.T) {
	p := startGreeter(t, startConfig(t, "proto"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ch := make(chan unaryOutcome, 1)
	go func() { ch <- callGreet(ctx, t, p, greetCall, "wait") }()
	time.Sleep(100 * time.Millisecond) // the call is in the handler
	if err := syscall.Kill(p.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	o := <-ch
	if o.st == nil || o.st.Code != codes.Unavailable || !strings.Contains(o.st.Message, "died during the call") {
		t.Errorf("a call when the plugin died: %+v", o.st)
	}
	if took := time.Since(killed); took > 2*time.Second {
		t.Errorf("the call failed %v after the kill", took)
	}
	if o := callGreet(ctx, t, p, greetCall, "world"); o.st == nil || o.st.Code != codes.Unavailable || !strings.Contains(o.st.Message, "is down") {
		t.Errorf("a call after the plugin died: %+v", o.st)
	}
}

// TestOpenStream: a stream's request, header, responses, trailer and
// status cross the node's API; a stream to a method the plugin did not
// describe, or of the wrong kind, is refused before it reaches the plugin.
func TestOpenStream(t *testing.T) {
	p := startGreeter(t, startConfig(t, "proto"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := greetCall
	c.Method = "GreetServerStream"
	for _, tt := range []struct {
		name      string
		greetings []string
		code      codes.Code
		trailer   rpc.Metadata
	}{
		{"ann", []string{"Hello, ann #1", "Hello, ann #2"}, codes.OK, nil},
		{"missing", []string{"Hello, missing #1"}, codes.NotFound, rpc.Metadata{{Key: "x-why", Value: "gone"}}},
	} {
		s, err := p.OpenStream(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := proto.Marshal(&greetpb.GreetStreamRequest{Name: tt.name, Count: 2})
		if err := s.Send(req); err != nil {
			t.Fatal(err)
		}
		if err := s.CloseSend(); err != nil {
			t.Fatal(err)
		}
		if h, err := s.Header(); err != nil || h.Get("x-count") != "2" {
			t.Errorf("%s: header %q, %v", tt.name, h, err)
		}
		var got []string
		var end error
		for {
			b, err := s.Recv()
			if err != nil {
				end = err
				break
			}
			var resp greetpb.GreetResponse
			if err := proto.Unmarshal(b, &resp); err != nil {
				t.Fatal(err)
			}
			got = append(got, resp.Greeting)
		}
		var st *plugins.Status
		if tt.code == codes.OK && end != io.EOF || tt.code != codes.OK && (!errors.As(end, &st) || st.Code != tt.code) {
			t.Errorf("%s: the stream ended with %v, want code %v", tt.name, end, tt.code)
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.greetings) || fmt.Sprint(s.Trailer()) != fmt.Sprint(tt.trailer) {
			t.Errorf("%s: %q, trailer %q; want %q, %q", tt.name, got, s.Trailer(), tt.greetings, tt.trailer)
		}
		if err := s.Send(req); err != io.EOF {
			t.Errorf("%s: Send after the end = %v, want io.EOF", tt.name, err)
		}
	}

	for _, tt := range []struct {
		c    plugins.ProtoCall
		code codes.Code
		says string
	}{
		{greetCall, codes.Internal, "is a unary method: call it with CallProto"},
		{plugins.ProtoCall{Service: "greet.GreetService", Version: "1.0.0", Method: "GreetStream"}, codes.Unimplemented, "has no method GreetStream"},
		{plugins.ProtoCall{Service: "greet.Other", Method: "GreetStream"}, codes.Unimplemented, "does not serve greet.Other"},
	} {
		_, err := p.OpenStream(ctx, tt.c)
		var st *plugins.Status
		if !errors.As(err, &st) || st.Code != tt.code || !strings.Contains(st.Message, tt.says) {
			t.Errorf("%s: %v, want %v saying %q", tt.c.String(), err, tt.code, tt.says)
		}
	}
	if o := callGreet(ctx, t, p, c, "x"); o.st == nil || o.st.Code != codes.Internal || !strings.Contains(o.st.Message, "open a stream") {
		t.Errorf("CallProto to a streaming method: %+v", o.st)
	}
}
