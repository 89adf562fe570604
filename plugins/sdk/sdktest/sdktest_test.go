package sdktest_test

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/dubbo-lab/dubbo/examples/greet/greetpb"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/plugins/sdk"
	"github.com/dubbo-lab/dubbo/plugins/sdk/sdktest"
)

type Item struct {
	Name  string
	Count int32
}

func (Item) JavaClassName() string { return "org.example.Item" }

type Order struct {
	ID    int64
	Items []Item
	Note  *string
}

func (Order) JavaClassName() string { return "org.example.Order" }

type noClass struct{ A int32 }

// Shop is a handler with one method per thing a test checks.
type Shop struct{}

func (Shop) SayHello(_ context.Context, name string) (string, error) { return "Hello, " + name, nil }
func (Shop) Add(_ context.Context, a, b int32) (int32, error)        { return a + b, nil }
func (Shop) AddWide(_ context.Context, a, b int32) (int, error)      { return int(a + b), nil }
func (Shop) Total(_ context.Context, o Order) (int64, error) {
	var n int64
	for _, it := range o.Items {
		n += int64(it.Count)
	}
	return n, nil
}
func (Shop) Echo(_ context.Context, o *Order) (*Order, error)                    { return o, nil }
func (Shop) EchoMap(_ context.Context, m map[string]any) (map[string]any, error) { return m, nil }
func (Shop) Fail(_ context.Context, msg string) error                            { return errors.New(msg) }
func (Shop) Panic(context.Context) error                                         { panic("oops") }
func (Shop) Loose(context.Context) (any, error)                                  { return noClass{A: 1}, nil }
func (Shop) Attachment(ctx context.Context, key string) (string, error) {
	v, _ := sdk.Attachments(ctx)[key].(string)
	return v, nil
}
func (Shop) Deadline(ctx context.Context) (string, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		return "none", nil
	}
	return time.Until(dl).Round(time.Second).String(), nil
}
func (Shop) Sleep(ctx context.Context, ms int32) (string, error) {
	select {
	case <-time.After(time.Duration(ms) * time.Millisecond):
		return "slept", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
func (Shop) Forward(ctx context.Context, name string) (any, error) {
	return sdk.Client(ctx).Call(ctx, "org.example.Greeter:1.0.0", "sayHello", []string{"java.lang.String"}, name)
}

var shop = sdk.Service{Interface: "org.example.Shop", Version: "1.0.0", Handler: Shop{}}

func TestCall(t *testing.T) {
	h := sdktest.New(t, shop)
	note := "fragile"
	order := Order{ID: 7, Items: []Item{{"a", 2}, {"b", 3}}, Note: &note}
	tests := []struct {
		method string
		args   []any
		want   any
	}{
		{"sayHello", []any{"world"}, "Hello, world"},
		{"add", []any{int32(2), int32(3)}, int32(5)},
		// A Java caller's long that fits an int parameter is taken.
		{"add", []any{int64(2), int64(3)}, int32(5)},
		// A Go int result is a Java long: the node gets int64, not int32.
		{"addWide", []any{int32(2), int32(3)}, int64(5)},
		{"total", []any{order}, int64(5)},
		{"echo", []any{&order}, &order},
		// A Map comes back as the node decodes it, with untyped keys.
		{"echoMap", []any{map[string]any{"k": "v"}}, map[any]any{"k": "v"}},
	}
	for _, tt := range tests {
		got, err := h.Call(context.Background(), tt.method, tt.args...)
		if err != nil {
			t.Errorf("%s%v: %v", tt.method, tt.args, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s%v = %#v (%T), want %#v (%T)", tt.method, tt.args, got, got, tt.want, tt.want)
		}
	}
}

func TestCallErrors(t *testing.T) {
	h := sdktest.New(t, shop)
	tests := []struct {
		method string
		args   []any
		// class of the exception, or the category of the call's failure
		class string
		kind  error
		want  string
	}{
		{method: "fail", args: []any{"out of stock"}, class: "java.lang.RuntimeException", want: "out of stock"},
		{method: "panic", class: "java.lang.RuntimeException", want: "panic in org.example.Shop:1.0.0.panic: oops"},
		{method: "add", args: []any{int64(1) << 40, int32(1)}, class: "java.lang.IllegalArgumentException", want: "does not fit"},
		{method: "add", args: []any{"2", int32(1)}, class: "java.lang.IllegalArgumentException", want: "got java.lang.String (Go string) where int"},
		{method: "add", args: []any{int32(1)}, class: "java.lang.IllegalArgumentException", want: "takes 2 arguments, got 1"},
		// A struct without JavaClassName does not cross the wire.
		{method: "loose", kind: rpc.ErrProvider, want: "the handler's result"},
		{method: "nope", kind: rpc.ErrServiceNotFound, want: "org.example.Shop:1.0.0 has no method nope; it has "},
	}
	for _, tt := range tests {
		_, err := h.Call(context.Background(), tt.method, tt.args...)
		var ex *rpc.Exception
		switch {
		case err == nil:
			t.Errorf("%s%v: no error", tt.method, tt.args)
		case tt.class != "" && (!errors.As(err, &ex) || ex.Class != tt.class):
			t.Errorf("%s%v: err = %#v, want a %s", tt.method, tt.args, err, tt.class)
		case tt.kind != nil && !errors.Is(err, tt.kind):
			t.Errorf("%s%v: err = %v, want %v", tt.method, tt.args, err, tt.kind)
		case !strings.Contains(err.Error(), tt.want):
			t.Errorf("%s%v: err = %v, want %q in it", tt.method, tt.args, err, tt.want)
		}
	}
}

func TestAttachmentsAndDeadline(t *testing.T) {
	h := sdktest.New(t, shop)
	ctx := sdktest.WithAttachment(context.Background(), "user", "ann")
	for key, want := range map[string]string{"user": "ann", "interface": "org.example.Shop", "version": "1.0.0"} {
		if got, err := h.Call(ctx, "attachment", key); err != nil || got != want {
			t.Errorf("attachment %s = %v, %v; want %q", key, got, err, want)
		}
	}

	if got, err := h.Call(context.Background(), "deadline"); err != nil || got != "none" {
		t.Errorf("deadline without one = %v, %v", got, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if got, err := h.Call(ctx, "deadline"); err != nil || got != "5s" {
		t.Errorf("deadline of 5s = %v, %v", got, err)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := h.Call(ctx, "sleep", int32(10_000))
	if !errors.Is(err, rpc.ErrTimeout) || time.Since(start) > 2*time.Second {
		t.Errorf("sleep past the deadline: err = %v after %v, want a timeout at once", err, time.Since(start))
	}
}

func TestClient(t *testing.T) {
	h := sdktest.New(t, shop)
	// The handler passes the failure of its own call on as an exception.
	if _, err := h.Call(context.Background(), "forward", "x"); err == nil || !strings.Contains(err.Error(), "no provider available: sdktest: no client") {
		t.Errorf("forward without a client: err = %v, want no provider", err)
	}
	greeter := sdktest.New(t, sdk.Service{Interface: "org.example.Greeter", Version: "1.0.0", Handler: Shop{}})
	h.SetClient(greeter)
	if got, err := h.Call(context.Background(), "forward", "x"); err != nil || got != "Hello, x" {
		t.Errorf("forward = %v, %v", got, err)
	}
}

func TestManyServices(t *testing.T) {
	other := sdk.Service{Interface: "org.example.Other", Handler: Shop{}}
	h := sdktest.New(t, shop, other)
	if _, err := h.Call(context.Background(), "sayHello", "x"); err == nil || !strings.Contains(err.Error(), "org.example.Shop:1.0.0/sayHello") {
		t.Errorf("an unqualified call among two services: err = %v, want advice", err)
	}
	for key, want := range map[string]string{"org.example.Shop:1.0.0/sayHello": "Hello, a", "org.example.Other/sayHello": "Hello, a"} {
		if got, err := h.Call(context.Background(), key, "a"); err != nil || got != want {
			t.Errorf("%s = %v, %v", key, got, err)
		}
	}
}

// greet answers Greet from the request's name, which says what to do.
func greet(ctx context.Context, req *greetpb.GreetRequest) (*greetpb.GreetResponse, error) {
	switch req.Name {
	case "metadata":
		return &greetpb.GreetResponse{Greeting: strings.Join(sdk.Metadata(ctx)["x-user"], ",")}, nil
	case "missing":
		sdk.SetTrailer(ctx, metadata.Pairs("x-why", "gone"))
		return nil, status.Error(codes.NotFound, "no such user")
	case "wait":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &greetpb.GreetResponse{Greeting: "Hello, " + req.Name}, nil
}

func greetStream(s sdk.Stream[*greetpb.GreetRequest, *greetpb.GreetResponse]) error {
	for {
		req, err := s.Recv()
		if err == io.EOF {
			s.SetTrailer(metadata.Pairs("x-done", "yes"))
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

var greetService = sdk.ProtoService{
	Service: greetpb.File_greet_proto.Services().ByName("GreetService"),
	Methods: []sdk.ProtoMethod{sdk.Unary("Greet", greet), sdk.BidiStream("GreetStream", greetStream)},
}

func TestCallProto(t *testing.T) {
	h := sdktest.New(t, greetService, shop)
	var resp greetpb.GreetResponse
	if _, err := h.CallProto(context.Background(), "Greet", &greetpb.GreetRequest{Name: "x"}, &resp); err != nil || resp.Greeting != "Hello, x" {
		t.Errorf("Greet = %q, %v", resp.Greeting, err)
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-user", "ann")
	if _, err := h.CallProto(ctx, "greet.GreetService/Greet", &greetpb.GreetRequest{Name: "metadata"}, &resp); err != nil || resp.Greeting != "ann" {
		t.Errorf("Greet with metadata = %q, %v", resp.Greeting, err)
	}
	trailer, err := h.CallProto(context.Background(), "Greet", &greetpb.GreetRequest{Name: "missing"}, &resp)
	if status.Code(err) != codes.NotFound || trailer.Get("x-why")[0] != "gone" {
		t.Errorf("Greet(missing) = %v, trailer %v", err, trailer)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := h.CallProto(ctx, "Greet", &greetpb.GreetRequest{Name: "wait"}, &resp); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("Greet past its deadline: %v", err)
	}
	// GreetServerStream has no handler: Unimplemented, as from grpc-go.
	for _, m := range []string{"GreetServerStream", "Nope"} {
		s, err := h.OpenStream(context.Background(), m)
		if err == nil {
			err = s.Recv(&greetpb.GreetResponse{})
		}
		if status.Code(err) != codes.Unimplemented {
			t.Errorf("%s: %v, want Unimplemented", m, err)
		}
	}
}

func TestStream(t *testing.T) {
	h := sdktest.New(t, greetService)
	s, err := h.OpenStream(context.Background(), "GreetStream")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, name := range []string{"a", "b"} {
		if err := s.Send(&greetpb.GreetRequest{Name: name}); err != nil {
			t.Fatal(err)
		}
		var resp greetpb.GreetResponse
		if err := s.Recv(&resp); err != nil {
			t.Fatal(err)
		}
		got = append(got, resp.Greeting)
	}
	if err := s.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if err := s.Recv(&greetpb.GreetResponse{}); err != io.EOF {
		t.Errorf("the end: %v, want io.EOF", err)
	}
	if want := []string{"Hello, a", "Hello, b"}; !reflect.DeepEqual(got, want) || s.Trailer().Get("x-done")[0] != "yes" {
		t.Errorf("got %q, trailer %v", got, s.Trailer())
	}
}
