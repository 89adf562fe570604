package triple

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// rawCodec hands grpc-go's messages over as bytes: *[]byte both ways, so
// the tests need no generated code.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// router is a Handler of a fixed table "<service>/<method>" -> Method.
type router map[string]Method

func (r router) Route(c *Call) (Method, *Status) {
	if m := r[c.Service+"/"+c.Method]; m != nil {
		return m, nil
	}
	return nil, Errorf(Unimplemented, "unknown method %s/%s", c.Service, c.Method)
}

// unaryFunc is a unary method that answers on the reader, at once.
type unaryFunc func(ctx context.Context, c *Call, req []byte) ([]byte, rpc.Metadata, *Status)

func (unaryFunc) Kind() rpc.MethodKind { return rpc.Unary }
func (f unaryFunc) Unary(ctx context.Context, c *Call, req []byte, reply func([]byte, rpc.Metadata, *Status)) {
	reply(f(ctx, c, req))
}

// asyncUnary is a unary method that answers from a goroutine of its own,
// as a plugin-backed method does.
type asyncUnary func(ctx context.Context, c *Call, req []byte) ([]byte, rpc.Metadata, *Status)

func (asyncUnary) Kind() rpc.MethodKind { return rpc.Unary }
func (f asyncUnary) Unary(ctx context.Context, c *Call, req []byte, reply func([]byte, rpc.Metadata, *Status)) {
	go func() { reply(f(ctx, c, req)) }() // ends when f does
}

// start serves h on a loopback port until the test ends.
func start(t testing.TB, cfg Config, h Handler) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(cfg, h)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; err != ErrServerClosed {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return s, ln.Addr().String()
}

// dial connects a grpc-go client that sends and takes raw bytes.
func dial(t testing.TB, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	opts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{}))}, opts...)
	cc, err := grpc.Dial(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// invoke makes a unary call of method ("/svc/Method") with req.
func invoke(ctx context.Context, cc *grpc.ClientConn, method string, req []byte, opts ...grpc.CallOption) ([]byte, error) {
	var resp []byte
	err := cc.Invoke(ctx, method, &req, &resp, opts...)
	return resp, err
}

// echo answers with the request, prefixed.
var echo = unaryFunc(func(_ context.Context, _ *Call, req []byte) ([]byte, rpc.Metadata, *Status) {
	return append([]byte("echo:"), req...), nil, nil
})

// streamFunc is a streaming method of a given kind.
type streamFunc struct {
	kind rpc.MethodKind
	f    func(ctx context.Context, c *Call, s Stream) *Status
}

func (m streamFunc) Kind() rpc.MethodKind { return m.kind }
func (m streamFunc) Serve(ctx context.Context, c *Call, s Stream) *Status {
	return m.f(ctx, c, s)
}

// openStream opens a grpc-go stream of method, of the given kind.
func openStream(ctx context.Context, t testing.TB, cc *grpc.ClientConn, method string, kind rpc.MethodKind) grpc.ClientStream {
	t.Helper()
	desc := &grpc.StreamDesc{ServerStreams: kind == rpc.ServerStream || kind == rpc.BidiStream, ClientStreams: kind == rpc.ClientStream || kind == rpc.BidiStream}
	cs, err := cc.NewStream(ctx, desc, method)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
