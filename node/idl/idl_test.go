package idl_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	v1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/dubbo-lab/dubbo/internal/testkit/greetgrpc"
	"github.com/dubbo-lab/dubbo/node/idl"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.Dial(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// The descriptor comes from reflection v1, or v1alpha when the server
// serves only that (as dubbo-go does); without either, or for a service
// the server does not describe, Resolve says ErrNoDescriptor.
func TestResolve(t *testing.T) {
	tests := []struct {
		name string
		opts greetgrpc.Options
		svc  string
		ok   bool
	}{
		{"v1 and v1alpha", greetgrpc.Options{}, greetgrpc.Service, true},
		{"v1 only", greetgrpc.Options{Reflection: []string{"v1"}}, greetgrpc.Service, true},
		{"v1alpha only", greetgrpc.Options{Reflection: []string{"v1alpha"}}, greetgrpc.Service, true},
		{"no reflection", greetgrpc.Options{NoReflection: true}, greetgrpc.Service, false},
		{"unknown service", greetgrpc.Options{}, "org.example.Greeter", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := greetgrpc.Start(t, tt.opts)
			svc, err := idl.Resolve(ctx(t), dial(t, srv.Addr()), tt.svc)
			if !tt.ok {
				if !errors.Is(err, idl.ErrNoDescriptor) {
					t.Fatalf("Resolve: %v, want ErrNoDescriptor", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if svc.FullName() != greetgrpc.Service || svc.Methods().Len() != 4 {
				t.Errorf("descriptor %s with %d methods", svc.FullName(), svc.Methods().Len())
			}
		})
	}
}

func TestMethods(t *testing.T) {
	srv := greetgrpc.Start(t, greetgrpc.Options{})
	svc, err := idl.Resolve(ctx(t), dial(t, srv.Addr()), greetgrpc.Service)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]rpc.MethodKind{
		"Greet": rpc.Unary, "GreetServerStream": rpc.ServerStream, "GreetClientStream": rpc.ClientStream, "GreetStream": rpc.BidiStream,
	}
	for name, want := range kinds {
		m, err := idl.MethodOf(svc, name)
		if err != nil {
			t.Fatal(err)
		}
		if m.Kind() != want {
			t.Errorf("%s: kind %s, want %s", name, m.Kind(), want)
		}
	}
	if _, err := idl.MethodOf(svc, "Nope"); !errors.Is(err, rpc.ErrServiceNotFound) || !strings.Contains(err.Error(), "GreetStream") {
		t.Errorf("unknown method: %v, want service not found listing the methods", err)
	}

	m, _ := idl.MethodOf(svc, "Greet")
	if m.RequestType() != greetgrpc.Request || m.ResponseType() != greetgrpc.Response {
		t.Errorf("types %s, %s", m.RequestType(), m.ResponseType())
	}
	req, err := m.Request([]byte(`{"name":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := greetgrpc.Decode(t, greetgrpc.Request, req.Bytes); got != `{"name":"x"}` || req.Type != greetgrpc.Request {
		t.Errorf("request %s of type %s", got, req.Type)
	}
	out, err := m.Response(rpc.Message{Bytes: greetgrpc.Encode(t, greetgrpc.Response, `{"greeting":"Hello, x"}`)})
	if err != nil || string(out) != `{"greeting":"Hello, x"}` {
		t.Errorf("response %s, %v", out, err)
	}
	if out, err := m.Response(rpc.Message{}); err != nil || string(out) != `{}` {
		t.Errorf("empty response %s, %v", out, err)
	}
	if _, err := m.Response(rpc.Message{Bytes: []byte{0xff}}); err == nil {
		t.Error("a response that is no message was read")
	}

	// Requests that do not fit: a bad request naming what is wrong.
	for js, want := range map[string]string{
		`{"nme":"x"}`: `unknown field "nme"`,
		`{"name":1}`:  `name`,
		`{"name":"x"`: `unexpected`,
		`["x"]`:       `greet.GreetRequest`,
		``:            `greet.GreetRequest`,
	} {
		_, err := m.Request([]byte(js))
		if !errors.Is(err, rpc.ErrBadRequest) || !strings.Contains(err.Error(), want) {
			t.Errorf("request %q: %v, want a bad request mentioning %q", js, err, want)
		}
	}
}

// A reflection server that sends only the file asked for (not its
// imports): Resolve asks for the imports by name.
type fileByFile struct {
	v1.UnimplementedServerReflectionServer
	files map[string]*descriptorpb.FileDescriptorProto
	asked []string
}

func (s *fileByFile) ServerReflectionInfo(st v1.ServerReflection_ServerReflectionInfoServer) error {
	for {
		req, err := st.Recv()
		if err != nil {
			return nil
		}
		name := req.GetFileByFilename()
		if sym := req.GetFileContainingSymbol(); sym != "" {
			name = "svc.proto"
		}
		s.asked = append(s.asked, name)
		f := s.files[name]
		if f == nil {
			return status.Errorf(codes.NotFound, "%s", name)
		}
		raw, _ := proto.Marshal(f)
		if err := st.Send(&v1.ServerReflectionResponse{MessageResponse: &v1.ServerReflectionResponse_FileDescriptorResponse{
			FileDescriptorResponse: &v1.FileDescriptorResponse{FileDescriptorProto: [][]byte{raw}}}}); err != nil {
			return err
		}
	}
}

func TestResolveAsksForImports(t *testing.T) {
	msgFile := &descriptorpb.FileDescriptorProto{
		Name: proto.String("msgs.proto"), Package: proto.String("m"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("Ping")}},
	}
	svcFile := &descriptorpb.FileDescriptorProto{
		Name: proto.String("svc.proto"), Package: proto.String("s"), Syntax: proto.String("proto3"),
		Dependency: []string{"msgs.proto"},
		Service: []*descriptorpb.ServiceDescriptorProto{{Name: proto.String("Pinger"), Method: []*descriptorpb.MethodDescriptorProto{
			{Name: proto.String("Ping"), InputType: proto.String(".m.Ping"), OutputType: proto.String(".m.Ping")}}}},
	}
	refl := &fileByFile{files: map[string]*descriptorpb.FileDescriptorProto{"svc.proto": svcFile, "msgs.proto": msgFile}}
	srv := grpc.NewServer()
	v1.RegisterServerReflectionServer(srv, refl)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)

	svc, err := idl.Resolve(ctx(t), dial(t, ln.Addr().String()), "s.Pinger")
	if err != nil {
		t.Fatal(err)
	}
	if in := svc.Methods().ByName("Ping").Input(); in.FullName() != protoreflect.FullName("m.Ping") {
		t.Errorf("input %s", in.FullName())
	}
	if strings.Join(refl.asked, ",") != "svc.proto,msgs.proto" {
		t.Errorf("asked for %v", refl.asked)
	}
}

// RequestTemplate writes every field of the request at its default,
// nested messages filled in too (a message that holds itself stops three
// levels down), and what it writes is a request the method takes.
func TestRequestTemplate(t *testing.T) {
	f := &descriptorpb.FileDescriptorProto{
		Name: proto.String("order.proto"), Package: proto.String("shop"), Syntax: proto.String("proto3"),
		EnumType: []*descriptorpb.EnumDescriptorProto{{Name: proto.String("Kind"), Value: []*descriptorpb.EnumValueDescriptorProto{
			{Name: proto.String("KIND_UNSET"), Number: proto.Int32(0)}, {Name: proto.String("KIND_FAST"), Number: proto.Int32(1)}}}},
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("Customer"), Field: []*descriptorpb.FieldDescriptorProto{
				field("name", 1, descriptorpb.FieldDescriptorProto_TYPE_STRING, ""),
				field("referrer", 2, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, ".shop.Customer")}},
			{Name: proto.String("Order"), Field: []*descriptorpb.FieldDescriptorProto{
				field("id", 1, descriptorpb.FieldDescriptorProto_TYPE_INT64, ""),
				field("kind", 2, descriptorpb.FieldDescriptorProto_TYPE_ENUM, ".shop.Kind"),
				field("customer", 3, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, ".shop.Customer"),
				repeated(field("items", 4, descriptorpb.FieldDescriptorProto_TYPE_STRING, "")),
				field("paid", 5, descriptorpb.FieldDescriptorProto_TYPE_BOOL, "")}},
		},
		Service: []*descriptorpb.ServiceDescriptorProto{{Name: proto.String("Orders"), Method: []*descriptorpb.MethodDescriptorProto{
			{Name: proto.String("Place"), InputType: proto.String(".shop.Order"), OutputType: proto.String(".shop.Order")}}}},
	}
	fd, err := protodesc.NewFile(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idl.MethodOf(fd.Services().Get(0), "Place")
	if err != nil {
		t.Fatal(err)
	}
	got := string(m.RequestTemplate())
	want := `{
  "id": "0",
  "kind": "KIND_UNSET",
  "customer": {
    "name": "",
    "referrer": {
      "name": "",
      "referrer": {
        "name": "",
        "referrer": null
      }
    }
  },
  "items": [],
  "paid": false
}`
	if got != want {
		t.Fatalf("template\n%s\nwant\n%s", got, want)
	}
	if _, err := m.Request([]byte(got)); err != nil {
		t.Fatalf("the template is not a request: %v", err)
	}
}

func field(name string, n int32, typ descriptorpb.FieldDescriptorProto_Type, typeName string) *descriptorpb.FieldDescriptorProto {
	f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(n), Type: typ.Enum(),
		Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), JsonName: proto.String(name)}
	if typeName != "" {
		f.TypeName = proto.String(typeName)
	}
	return f
}

func repeated(f *descriptorpb.FieldDescriptorProto) *descriptorpb.FieldDescriptorProto {
	f.Label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	return f
}
