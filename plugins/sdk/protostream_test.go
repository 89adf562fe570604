package sdk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/dubbo-lab/dubbo/examples/greet/greetpb"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/plugins/internal/wire"
)

// streamHandlers serve greet.GreetService's streaming methods as greet
// does, and more when a name asks; ended gets the error a handler's
// context ended with.
type streamHandlers struct{ ended chan error }

func (h streamHandlers) serverStream(req *greetpb.GreetStreamRequest, out Sender[*greetpb.GreetResponse]) error {
	ctx := out.Context()
	switch req.Name {
	case "header":
		if err := out.SetHeader(metadata.Pairs("x-user", strings.Join(Metadata(ctx)["x-user"], ","))); err != nil {
			return err
		}
		out.SetTrailer(metadata.Pairs("x-sent", fmt.Sprint(req.Count)))
	case "deadline":
		dl, ok := ctx.Deadline()
		return out.Send(&greetpb.GreetResponse{Greeting: fmt.Sprint(ok, " ", time.Until(dl).Round(time.Minute))})
	case "wait":
		if err := out.Send(&greetpb.GreetResponse{Greeting: "waiting"}); err != nil {
			return err
		}
		<-ctx.Done()
		h.ended <- ctx.Err()
		return ctx.Err()
	}
	for i := range req.Count {
		if err := out.Send(&greetpb.GreetResponse{Greeting: fmt.Sprintf("Hello, %s #%d", req.Name, i+1)}); err != nil {
			return err
		}
		if req.Name == "fail" {
			return status.Error(codes.Aborted, "stopped after one")
		}
		if req.Name == "panic" {
			panic("in a stream")
		}
	}
	if req.Name == "header" {
		// Too late: the header went with the first response.
		if err := out.SetHeader(metadata.Pairs("x-late", "1")); err == nil {
			return errors.New("SetHeader after a Send succeeded")
		}
	}
	return nil
}

func (streamHandlers) clientStream(in Receiver[*greetpb.GreetRequest]) (*greetpb.GreetResponse, error) {
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

func (streamHandlers) bidiStream(s Stream[*greetpb.GreetRequest, *greetpb.GreetResponse]) error {
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

// streamRefs are the indices of greet.GreetService's methods as
// streamService lists them.
var streamRefs = map[string]wire.MethodRef{
	"Greet": {Service: 0, Method: 0}, "GreetServerStream": {Service: 0, Method: 1},
	"GreetClientStream": {Service: 0, Method: 2}, "GreetStream": {Service: 0, Method: 3},
}

func streamService(h streamHandlers) ProtoService {
	return ProtoService{Service: greetDesc, Methods: []ProtoMethod{
		Unary("Greet", greet),
		ServerStream("GreetServerStream", h.serverStream),
		ClientStream("GreetClientStream", h.clientStream),
		BidiStream("GreetStream", h.bidiStream),
	}}
}

// servedLink serves svc on one end of a link pair, as Serve does, and
// returns the node's end.
func servedLink(t *testing.T, svc ...Servable) *wire.Link {
	t.Helper()
	s := protoServer(t, svc...)
	a, child, err := wire.NewLinkPipes()
	if err != nil {
		t.Fatal(err)
	}
	node, plugin := wire.NewLink(a), wire.NewLink(child.Conn())
	node.Start(nil)
	plugin.Start(s)
	t.Cleanup(func() { node.Close(); plugin.Close() })
	return node
}

// streamOutcome is all a stream gave its opener.
type streamOutcome struct {
	header    rpc.Metadata
	greetings []string
	st        *wire.Status
	trailer   rpc.Metadata
}

// runStream opens a stream to method, sends reqs, half-closes and reads
// everything to the end.
func runStream(ctx context.Context, t *testing.T, l *wire.Link, method string, md rpc.Metadata, reqs ...proto.Message) streamOutcome {
	t.Helper()
	head, err := wire.AppendProtoCall(nil, streamRefs[method], md)
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.OpenStream(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	ended := false // the plugin ended the stream: Send says io.EOF, as grpc-go's SendMsg
	for _, r := range reqs {
		b, _ := proto.Marshal(r)
		if err := s.Send(b); err == io.EOF {
			ended = true
			break
		} else if err != nil {
			t.Fatalf("%s: Send: %v", method, err)
		}
	}
	if err := s.CloseSend(); err != nil && !ended {
		t.Fatalf("%s: CloseSend: %v", method, err)
	}
	var o streamOutcome
	if o.header, err = s.Header(); err != nil {
		t.Fatalf("%s: Header: %v", method, err)
	}
	for {
		b, err := s.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: Recv: %v", method, err)
		}
		var resp greetpb.GreetResponse
		if err := proto.Unmarshal(b, &resp); err != nil {
			t.Fatal(err)
		}
		o.greetings = append(o.greetings, resp.Greeting)
	}
	o.st, o.trailer = s.End()
	return o
}

// TestProtoStreams: each kind of streaming method gets its requests and
// metadata, and its responses, header, trailer and status reach the
// opener; a panic ends its stream Internal and the plugin serves on.
func TestProtoStreams(t *testing.T) {
	l := servedLink(t, streamService(streamHandlers{}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := func(name string) *greetpb.GreetRequest { return &greetpb.GreetRequest{Name: name} }
	sreq := func(name string, n int32) *greetpb.GreetStreamRequest {
		return &greetpb.GreetStreamRequest{Name: name, Count: n}
	}
	tests := []struct {
		name   string
		method string
		md     rpc.Metadata
		reqs   []proto.Message
		want   streamOutcome
	}{
		{"server stream", "GreetServerStream", nil, []proto.Message{sreq("ann", 3)},
			streamOutcome{greetings: []string{"Hello, ann #1", "Hello, ann #2", "Hello, ann #3"}}},
		{"no responses", "GreetServerStream", nil, []proto.Message{sreq("ann", 0)}, streamOutcome{}},
		{"no request", "GreetServerStream", nil, nil,
			streamOutcome{st: &wire.Status{Code: codes.Internal, Message: "the call ended before its request"}}},
		{"header and trailer", "GreetServerStream", rpc.Metadata{{Key: "x-user", Value: "bob"}}, []proto.Message{sreq("header", 1)},
			streamOutcome{header: rpc.Metadata{{Key: "x-user", Value: "bob"}}, greetings: []string{"Hello, header #1"}, trailer: rpc.Metadata{{Key: "x-sent", Value: "1"}}}},
		{"status after a message", "GreetServerStream", nil, []proto.Message{sreq("fail", 5)},
			streamOutcome{greetings: []string{"Hello, fail #1"}, st: &wire.Status{Code: codes.Aborted, Message: "stopped after one"}}},
		{"panic", "GreetServerStream", nil, []proto.Message{sreq("panic", 5)},
			streamOutcome{greetings: []string{"Hello, panic #1"}, st: &wire.Status{Code: codes.Internal, Message: "panic in /greet.GreetService/GreetServerStream: in a stream"}}},
		{"deadline", "GreetServerStream", nil, []proto.Message{sreq("deadline", 1)}, streamOutcome{greetings: []string{"true 0s"}}},
		{"client stream", "GreetClientStream", nil, []proto.Message{req("a"), req("b"), req("c")}, streamOutcome{greetings: []string{"Hello, a,b,c"}}},
		{"client stream of none", "GreetClientStream", nil, nil, streamOutcome{greetings: []string{"Hello, "}}},
		{"bidi", "GreetStream", nil, []proto.Message{req("a"), req("b")}, streamOutcome{greetings: []string{"Hello, a", "Hello, b"}}},
		{"unary", "Greet", nil, []proto.Message{req("a")},
			streamOutcome{st: &wire.Status{Code: codes.Unimplemented, Message: "this plugin serves no streaming method with that reference"}}},
	}
	for _, tt := range tests {
		got := runStream(ctx, t, l, tt.method, tt.md, tt.reqs...)
		if !slices.Equal(got.header, tt.want.header) || !slices.Equal(got.greetings, tt.want.greetings) ||
			!equalStatus(got.st, tt.want.st) || !slices.Equal(got.trailer, tt.want.trailer) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, got, tt.want)
		}
	}
	// A unary call to a streaming method is refused.
	s := protoServer(t, streamService(streamHandlers{}))
	if _, _, st := callUnary(ctx, s, streamRefs["GreetStream"], nil, req("a")); st == nil || st.Code != codes.Unimplemented {
		t.Errorf("a unary call to GreetStream: %v", st)
	}
}

// A stream the node cancels ends its handler's context at once.
func TestProtoStreamCancel(t *testing.T) {
	h := streamHandlers{ended: make(chan error, 1)}
	l := servedLink(t, streamService(h))
	ctx, cancel := context.WithCancel(context.Background())
	head, _ := wire.AppendProtoCall(nil, streamRefs["GreetServerStream"], nil)
	s, err := l.OpenStream(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := proto.Marshal(&greetpb.GreetStreamRequest{Name: "wait"})
	s.Send(b)
	s.CloseSend()
	if _, err := s.Recv(); err != nil { // "waiting"
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-h.ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the handler's context ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context did not end when the node canceled")
	}
}
