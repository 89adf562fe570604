package sdk

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/dubbo-lab/dubbo/examples/greet/greetpb"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/plugins/internal/wire"
)

var greetDesc = greetpb.File_greet_proto.Services().ByName("GreetService")

// greet answers from its request's name, which says what to do.
func greet(ctx context.Context, req *greetpb.GreetRequest) (*greetpb.GreetResponse, error) {
	reply := func(s string) (*greetpb.GreetResponse, error) { return &greetpb.GreetResponse{Greeting: s}, nil }
	switch req.Name {
	case "metadata":
		return reply(strings.Join(Metadata(ctx)["x-user"], ","))
	case "trailer":
		SetTrailer(ctx, metadata.Pairs("x-took", "1ms"))
		return reply("with trailer")
	case "not found":
		SetTrailer(ctx, metadata.Pairs("x-why", "gone"))
		return nil, status.Error(codes.NotFound, "no such user")
	case "details":
		st, _ := status.New(codes.InvalidArgument, "bad name").WithDetails(wrapperspb.String("too short"))
		return nil, st.Err()
	case "wrapped":
		return nil, errors.Join(errors.New("while greeting"), status.Error(codes.PermissionDenied, "not you"))
	case "plain":
		return nil, errors.New("plain error")
	case "panic":
		panic("oops")
	case "deadline":
		dl, ok := ctx.Deadline()
		if !ok {
			return reply("none")
		}
		return reply(time.Until(dl).Round(time.Second).String())
	case "wait":
		<-ctx.Done()
		return nil, ctx.Err()
	case "nil":
		return nil, nil
	}
	return reply("Hello, " + req.Name)
}

func greetService() ProtoService {
	return ProtoService{Service: greetDesc, Methods: []ProtoMethod{Unary("Greet", greet)}}
}

// protoServer is a server of svc, as Serve makes it.
func protoServer(t *testing.T, svc ...Servable) *server {
	t.Helper()
	sv, err := newServed(svc)
	if err != nil {
		t.Fatal(err)
	}
	return newServer(context.Background(), sv, nil)
}

// callUnary makes a unary call as the link does: PrepareProto, then Run.
func callUnary(ctx context.Context, s *server, ref wire.MethodRef, md rpc.Metadata, req proto.Message) (*greetpb.GreetResponse, rpc.Metadata, *wire.Status) {
	b, err := wire.AppendProtoCall(nil, ref, md)
	if err != nil {
		panic(err)
	}
	if b, err = (proto.MarshalOptions{}).MarshalAppend(b, req); err != nil {
		panic(err)
	}
	run, _ := s.PrepareProto(b)
	resp, trailer, st, err := wire.ParseProtoReply(run.Run(ctx))
	if err != nil {
		return nil, nil, &wire.Status{Code: codes.DataLoss, Message: "the reply: " + err.Error()}
	}
	if st != nil {
		return nil, trailer, st
	}
	out := new(greetpb.GreetResponse)
	if err := proto.Unmarshal(resp, out); err != nil {
		return nil, nil, &wire.Status{Code: codes.DataLoss, Message: "the response: " + err.Error()}
	}
	return out, trailer, nil
}

// TestProtoUnary: a unary protobuf call reaches its handler with the
// caller's metadata and deadline; the handler's response, trailer and
// status come back; a panic is Internal and the next call is served.
func TestProtoUnary(t *testing.T) {
	s := protoServer(t, greetService())
	greetRef := wire.MethodRef{Service: 0, Method: 0}
	withDetails, _ := status.New(codes.InvalidArgument, "bad name").WithDetails(wrapperspb.String("too short"))
	details, _ := proto.Marshal(withDetails.Proto())
	tests := []struct {
		name     string
		md       rpc.Metadata
		timeout  time.Duration
		greeting string
		trailer  rpc.Metadata
		st       *wire.Status
	}{
		{name: "world", greeting: "Hello, world"},
		{name: "metadata", md: rpc.Metadata{{Key: "x-user", Value: "ann"}, {Key: "x-other", Value: "1"}, {Key: "x-user", Value: "bob"}}, greeting: "ann,bob"},
		{name: "trailer", greeting: "with trailer", trailer: rpc.Metadata{{Key: "x-took", Value: "1ms"}}},
		{name: "not found", trailer: rpc.Metadata{{Key: "x-why", Value: "gone"}}, st: &wire.Status{Code: codes.NotFound, Message: "no such user"}},
		{name: "details", st: &wire.Status{Code: codes.InvalidArgument, Message: "bad name", Details: details}},
		{name: "wrapped", st: &wire.Status{Code: codes.PermissionDenied, Message: "while greeting\nrpc error: code = PermissionDenied desc = not you"}},
		{name: "plain", st: &wire.Status{Code: codes.Unknown, Message: "plain error"}},
		{name: "panic", st: &wire.Status{Code: codes.Internal, Message: "panic in /greet.GreetService/Greet: oops"}},
		{name: "deadline", greeting: "none"},
		{name: "deadline", timeout: time.Minute, greeting: "1m0s"},
		{name: "wait", timeout: 20 * time.Millisecond, st: &wire.Status{Code: codes.DeadlineExceeded, Message: "context deadline exceeded"}},
		{name: "nil"},
	}
	// One call's leftovers must not reach the next: run them twice over.
	for range 2 {
		for _, tt := range tests {
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			resp, trailer, st := callUnary(ctx, s, greetRef, tt.md, &greetpb.GreetRequest{Name: tt.name})
			if !equalStatus(st, tt.st) || !slices.Equal(trailer, tt.trailer) || st == nil && resp.GetGreeting() != tt.greeting {
				t.Errorf("%s: %q, trailer %q, status %v; want %q, %q, %v", tt.name, resp.GetGreeting(), trailer, st, tt.greeting, tt.trailer, tt.st)
			}
		}
	}
}

// A call that names no unary method the plugin serves, or whose request
// is not the method's message, fails without reaching a handler.
func TestProtoUnaryRefused(t *testing.T) {
	dubbo := Service{Interface: "a.S", Handler: serverGreeter{}}
	s := protoServer(t, dubbo, greetService())
	for _, ref := range []wire.MethodRef{{Service: 0, Method: 0}, {Service: 1, Method: 1}, {Service: 2, Method: 0}} {
		if _, _, st := callUnary(context.Background(), s, ref, nil, &greetpb.GreetRequest{}); st == nil || st.Code != codes.Unimplemented {
			t.Errorf("call to %+v: %v, want Unimplemented", ref, st)
		}
	}
	if resp, _, st := callUnary(context.Background(), s, wire.MethodRef{Service: 1, Method: 0}, nil, &greetpb.GreetRequest{Name: "x"}); st != nil || resp.Greeting != "Hello, x" {
		t.Errorf("the protobuf service after a Dubbo one: %v, %v", resp, st)
	}
	b, _ := wire.AppendProtoCall(nil, wire.MethodRef{Service: 1, Method: 0}, nil)
	run, _ := s.PrepareProto(append(b, 0xff, 0xff)) // not a GreetRequest
	if _, _, st, err := wire.ParseProtoReply(run.Run(context.Background())); err != nil || st == nil || st.Code != codes.Internal ||
		!strings.Contains(st.Message, "not a greet.GreetRequest") {
		t.Errorf("a request that does not decode: %v, %v", st, err)
	}
}

// TestProtoServiceChecks: what is wrong with a ProtoService is found at
// Serve, with a message that says how to fix it.
func TestProtoServiceChecks(t *testing.T) {
	greetTo := func(context.Context, *greetpb.GreetRequest) (*greetpb.GreetResponse, error) { return nil, nil }
	tests := []struct {
		name string
		svc  []Servable
		err  string
	}{
		{"ok", []Servable{greetService()}, ""},
		{"pointer", []Servable{&ProtoService{Service: greetDesc, Methods: []ProtoMethod{Unary("Greet", greetTo)}}}, ""},
		{"no descriptor", []Servable{ProtoService{Methods: []ProtoMethod{Unary("Greet", greetTo)}}}, "has no Service: take it from the generated package"},
		{"no methods", []Servable{ProtoService{Service: greetDesc}}, "no Methods: give a handler for at least one of Greet, GreetServerStream, GreetClientStream, GreetStream"},
		{"unknown method", []Servable{ProtoService{Service: greetDesc, Methods: []ProtoMethod{Unary("greet", greetTo)}}},
			`sdk.Unary("greet"): greet.GreetService has no such method; its methods are Greet, GreetServerStream`},
		{"wrong kind", []Servable{ProtoService{Service: greetDesc, Methods: []ProtoMethod{Unary("GreetStream", greetTo)}}},
			`sdk.Unary("GreetStream"): GreetStream is bidi-streaming: serve it with sdk.BidiStream`},
		{"wrong request", []Servable{ProtoService{Service: greetDesc, Methods: []ProtoMethod{Unary("Greet",
			func(context.Context, *greetpb.GreetStreamRequest) (*greetpb.GreetResponse, error) { return nil, nil })}}},
			`sdk.Unary("Greet"): the handler takes greet.GreetStreamRequest, the method greet.GreetRequest`},
		{"wrong response", []Servable{ProtoService{Service: greetDesc, Methods: []ProtoMethod{Unary("Greet",
			func(context.Context, *greetpb.GreetRequest) (*emptypb.Empty, error) { return nil, nil })}}},
			`sdk.Unary("Greet"): the handler answers google.protobuf.Empty, the method greet.GreetResponse`},
		{"twice", []Servable{ProtoService{Service: greetDesc, Methods: []ProtoMethod{Unary("Greet", greetTo), Unary("Greet", greet)}}},
			"method Greet is given twice"},
		{"zero method", []Servable{ProtoService{Service: greetDesc, Methods: []ProtoMethod{{}}}}, "a ProtoMethod made without sdk.Unary"},
		{"settings", []Servable{ProtoService{Service: greetDesc, Methods: []ProtoMethod{Unary("Greet", greetTo)}, Settings: Settings{Executes: -1}}}, "Settings"},
		{"service twice", []Servable{greetService(), greetService()}, "described twice"},
		{"versions apart", []Servable{greetService(), ProtoService{Service: greetDesc, Version: "2", Methods: []ProtoMethod{Unary("Greet", greetTo)}}}, ""},
		{"a Dubbo service of the name", []Servable{greetService(), Service{Interface: "greet.GreetService", Handler: serverGreeter{}}}, "described twice"},
		{"nil", []Servable{nil}, "a nil service"},
	}
	for _, tt := range tests {
		_, err := newServed(tt.svc)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.err)
		}
	}
}

// The description a plugin of Dubbo and protobuf services sends is what
// the node accepts: the protobuf service with its files and methods, the
// Dubbo one first, each method's kind by the name the node reads.
func TestProtoDescribe(t *testing.T) {
	greetSvc := streamService(streamHandlers{})
	greetSvc.Version = "1.0.0"
	s := protoServer(t, greetSvc, Service{Interface: "a.S", Handler: serverGreeter{}})
	b, err := s.Describe(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{`"kind":"server-streaming"`, `"kind":"client-streaming"`, `"kind":"bidi-streaming"`} {
		if !strings.Contains(string(b.Value), kind) {
			t.Errorf("the description has no %s: %s", kind, b.Value)
		}
	}
	d, err := wire.ParseDescription(b.Value)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Services) != 2 || d.Services[0].Interface != "a.S" || d.Services[1].Interface != "greet.GreetService" {
		t.Fatalf("services %+v", d.Services)
	}
	g := d.Services[1]
	want := []wire.Method{
		{Name: "Greet", Kind: rpc.Unary, Input: "greet.GreetRequest", Output: "greet.GreetResponse"},
		{Name: "GreetServerStream", Kind: rpc.ServerStream, Input: "greet.GreetStreamRequest", Output: "greet.GreetResponse"},
		{Name: "GreetClientStream", Kind: rpc.ClientStream, Input: "greet.GreetRequest", Output: "greet.GreetResponse"},
		{Name: "GreetStream", Kind: rpc.BidiStream, Input: "greet.GreetRequest", Output: "greet.GreetResponse"},
	}
	if g.Version != "1.0.0" || !reflect.DeepEqual(g.Methods, want) {
		t.Errorf("greet.GreetService described as %+v", g)
	}
	if _, sd, err := g.ResolveProto(); err != nil || sd.Methods().Len() != 4 {
		t.Errorf("its files: %v", err)
	}
}

func equalStatus(a, b *wire.Status) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Code == b.Code && a.Message == b.Message && string(a.Details) == string(b.Details)
}
