package client_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"

	"github.com/apache/dubbo-go-hessian2/java_exception"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/triple/client"
	"github.com/dubbo-lab/dubbo/node/triple/wrapper"
)

// bytesCodec lets the test server see the raw wrapper messages.
type bytesCodec struct{}

func (bytesCodec) Name() string                  { return "proto" }
func (bytesCodec) Marshal(v any) ([]byte, error) { return v.([]byte), nil }
func (bytesCodec) Unmarshal(b []byte, v any) error {
	*v.(*[]byte) = b
	return nil
}

// javaGreeter is a grpc-go server of org.example.Greeter in wrapper mode,
// answering in the forms the Dubbo implementations use: sayHello as
// dubbo-go (a TripleRequestWrapper of one value), add as Java (a
// TripleResponseWrapper), fail as Java 3.3 (tri-exception-code and the
// exception in the wrapper), failGo as dubbo-go (status 17).
type javaGreeter struct {
	mu       sync.Mutex
	requests []seenRequest
}

type seenRequest struct {
	method, contentType string
	wrapper             *wrapper.Request
}

func startJavaGreeter(t *testing.T) (string, *javaGreeter) {
	t.Helper()
	g := &javaGreeter{}
	srv := grpc.NewServer(grpc.ForceServerCodec(bytesCodec{}), grpc.UnknownServiceHandler(g.serve))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return ln.Addr().String(), g
}

func (g *javaGreeter) serve(_ any, st grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(st)
	var in []byte
	if err := st.RecvMsg(&in); err != nil {
		return err
	}
	req, err := wrapper.ParseRequest(in)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	md, _ := metadata.FromIncomingContext(st.Context())
	g.mu.Lock()
	g.requests = append(g.requests, seenRequest{method, md.Get("content-type")[0], req})
	g.mu.Unlock()
	args := make([]any, len(req.Args))
	for i, a := range req.Args {
		if args[i], err = wrapper.DecodeValue(a); err != nil {
			return status.Error(codes.InvalidArgument, err.Error())
		}
	}
	value := func(v any) []byte {
		b, err := wrapper.EncodeValue(v)
		if err != nil {
			panic(err)
		}
		return b
	}
	switch method {
	case "/org.example.Greeter/sayHello":
		out := wrapper.Request{SerializeType: "hessian2", Args: [][]byte{value("Hello, " + args[0].(string))}, ArgTypes: []string{"java.lang.String"}}
		return st.SendMsg(out.Append(nil))
	case "/org.example.Greeter/add":
		out := wrapper.Response{SerializeType: "hessian4", Data: value(args[0].(int32) + args[1].(int32)), Type: "int"}
		return st.SendMsg(out.Append(nil))
	case "/org.example.Greeter/fail":
		if err := st.SetHeader(metadata.Pairs("tri-exception-code", "1")); err != nil {
			return err
		}
		ex := java_exception.NewIllegalStateException(args[0].(string))
		out := wrapper.Response{SerializeType: "hessian4", Data: value(ex), Type: "java.lang.IllegalStateException"}
		return st.SendMsg(out.Append(nil))
	case "/org.example.Greeter/failGo":
		return status.Error(17, args[0].(string))
	}
	return status.Errorf(codes.Unimplemented, "unknown method %s", method)
}

func TestWrapperMode(t *testing.T) {
	addr, g := startJavaGreeter(t)
	c := connect(t, addr, client.Config{})
	call := func(method string, types []string, args ...any) *rpc.Result {
		t.Helper()
		res, err := c.Invoke(context.Background(), &rpc.Invocation{Service: "org.example.Greeter", Version: "1.0.0",
			Method: method, ParamTypes: types, Args: args})
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		return res
	}

	if res := call("sayHello", []string{"java.lang.String"}, "world"); res.Value != "Hello, world" || res.Exception != nil {
		t.Errorf("sayHello: %+v", res)
	}
	if res := call("add", []string{"int", "int"}, int32(2), int32(3)); res.Value != int32(5) {
		t.Errorf("add: %#v", res.Value)
	}
	res := call("fail", []string{"java.lang.String"}, "boom")
	if ex := res.Exception; ex == nil || ex.Class != "java.lang.IllegalStateException" || ex.Message != "boom" {
		t.Errorf("fail, Java's form: exception %+v", res.Exception)
	}
	res = call("failGo", []string{"java.lang.String"}, "boom")
	if ex := res.Exception; ex == nil || ex.Message != "boom" {
		t.Errorf("fail, dubbo-go's form: exception %+v", res.Exception)
	}

	g.mu.Lock()
	defer g.mu.Unlock()
	first := g.requests[0]
	if first.contentType != "application/grpc+hessian2" || first.wrapper.SerializeType != "hessian2" ||
		!slices.Equal(first.wrapper.ArgTypes, []string{"java.lang.String"}) {
		t.Errorf("sayHello went out as %s %+v, want application/grpc+hessian2 with serializeType hessian2 and the Java types",
			first.contentType, first.wrapper)
	}
	if n := len(g.requests[1].wrapper.Args); n != 2 {
		t.Errorf("add sent %d arguments", n)
	}

	// Types that do not match the arguments are refused before sending.
	_, err := c.Invoke(context.Background(), &rpc.Invocation{Service: "org.example.Greeter", Method: "add",
		ParamTypes: []string{"int"}, Args: []any{int32(1), int32(2)}})
	if rpc.ErrorKind(err) != rpc.KindBadRequest {
		t.Errorf("mismatched types: %v", err)
	}
}
