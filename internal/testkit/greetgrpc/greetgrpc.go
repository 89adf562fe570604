// Package greetgrpc runs a plain grpc-go server of the example protobuf
// service greet.GreetService (examples/greet's proto) in the test process:
// the anchor every Go gRPC user knows, for tests of our Triple consumer. Its
// messages are dynamicpb messages of descriptors built anew from
// examples/greet/greetpb's file, in a registry of their own, so what a
// consumer learns by reflection is never the generated code's descriptors.
//
// The service answers as the example does: Greet "Hello, <name>";
// GreetServerStream count messages "Hello, <name> #i"; GreetClientStream
// "Hello, " and the names joined by ","; GreetStream "Hello, <name>" per
// message. Names starting with "fail:" and "sleep:" make Greet fail or wait
// (see Greet), and the server records what each call brought (Calls).
//
// The command greetserver (in this folder) is the other grpc-go greet
// server: Greet alone, on the generated messages, in a process of its own,
// for the Triple benchmark.
package greetgrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/reflection"
	v1reflectiongrpc "google.golang.org/grpc/reflection/grpc_reflection_v1"
	v1alphareflectiongrpc "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/dubbo-lab/dubbo/examples/greet/greetpb"
)

// Service is the service's full name.
const Service = "greet.GreetService"

// Names of the messages.
const (
	Request       = "greet.GreetRequest"
	Response      = "greet.GreetResponse"
	StreamRequest = "greet.GreetStreamRequest"
)

// Files is the registry of greet.proto, built anew on each call.
func Files() *protoregistry.Files {
	set := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{protodesc.ToFileDescriptorProto(greetpb.File_greet_proto)}}
	files, err := protodesc.NewFiles(set)
	if err != nil {
		panic(fmt.Sprintf("greetgrpc: greet.proto: %v", err))
	}
	return files
}

// Encode is the message typ (a full name) given as protobuf JSON, encoded.
func Encode(t testing.TB, typ, json string) []byte {
	t.Helper()
	m := newMessage(Files(), typ)
	if err := protojson.Unmarshal([]byte(json), m); err != nil {
		t.Fatalf("greetgrpc: %s %s: %v", typ, json, err)
	}
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatalf("greetgrpc: %s: %v", typ, err)
	}
	return b
}

// Decode is the encoded message b of type typ as compact protobuf JSON.
func Decode(t testing.TB, typ string, b []byte) string {
	t.Helper()
	m := newMessage(Files(), typ)
	if err := proto.Unmarshal(b, m); err != nil {
		t.Fatalf("greetgrpc: %s: %v", typ, err)
	}
	out, err := protojson.Marshal(m)
	if err != nil {
		t.Fatalf("greetgrpc: %s: %v", typ, err)
	}
	// protojson varies its spacing on purpose; tests compare text.
	var compact bytes.Buffer
	if err := json.Compact(&compact, out); err != nil {
		t.Fatalf("greetgrpc: %s: %v", typ, err)
	}
	return compact.String()
}

func newMessage(files *protoregistry.Files, name string) *dynamicpb.Message {
	d, err := files.FindDescriptorByName(protoreflect.FullName(name))
	if err != nil {
		panic(fmt.Sprintf("greetgrpc: %s: %v", name, err))
	}
	return dynamicpb.NewMessage(d.(protoreflect.MessageDescriptor))
}

// Options configure Start.
type Options struct {
	// Addr to listen on. Default 127.0.0.1:0 (a free port).
	Addr string
	// Reflection lists the reflection services served: "v1", "v1alpha".
	// Default both; NoReflection none.
	Reflection   []string
	NoReflection bool
}

// Call is what one call brought: its method, metadata, deadline and the
// client's address.
type Call struct {
	Method   string
	Metadata metadata.MD
	// Deadline is the call's deadline (grpc-timeout); zero if none.
	Deadline time.Time
	// Peer is the client's host:port: one per connection.
	Peer string
}

// Server is a running greet server.
type Server struct {
	addr  string
	srv   *grpc.Server
	files *protoregistry.Files

	mu    sync.Mutex
	calls []Call
}

// Start serves greet.GreetService until the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		t.Fatalf("greetgrpc: %v", err)
	}
	s := &Server{addr: ln.Addr().String(), srv: grpc.NewServer(), files: Files()}
	s.srv.RegisterService(s.desc(), s)
	if !opts.NoReflection {
		refl := opts.Reflection
		if refl == nil {
			refl = []string{"v1", "v1alpha"}
		}
		ro := reflection.ServerOptions{Services: s.srv, DescriptorResolver: s.files}
		for _, v := range refl {
			switch v {
			case "v1":
				v1reflectiongrpc.RegisterServerReflectionServer(s.srv, reflection.NewServerV1(ro))
			case "v1alpha":
				v1alphareflectiongrpc.RegisterServerReflectionServer(s.srv, reflection.NewServer(ro))
			default:
				t.Fatalf("greetgrpc: reflection %q: want v1 or v1alpha", v)
			}
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.srv.Serve(ln)
	}()
	t.Cleanup(func() {
		s.srv.Stop()
		<-done
	})
	return s
}

// Addr is the host:port the server listens on.
func (s *Server) Addr() string { return s.addr }

// Stop closes the listener and every connection at once.
func (s *Server) Stop() { s.srv.Stop() }

// Calls returns the calls served so far, oldest first.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

func (s *Server) record(ctx context.Context, method string) {
	c := Call{Method: method}
	c.Metadata, _ = metadata.FromIncomingContext(ctx)
	c.Deadline, _ = ctx.Deadline()
	if p, ok := peer.FromContext(ctx); ok {
		c.Peer = p.Addr.String()
	}
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
	// Every answer names its server, for tests of load balancing and of
	// response attachments.
	_ = grpc.SetHeader(ctx, metadata.Pairs("greet-server", s.addr))
}

func (s *Server) desc() *grpc.ServiceDesc {
	type service interface{}
	return &grpc.ServiceDesc{
		ServiceName: Service,
		HandlerType: (*service)(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "Greet",
			Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				s.record(ctx, "Greet")
				req := newMessage(s.files, Request)
				if err := dec(req); err != nil {
					return nil, err
				}
				return s.greet(ctx, name(req))
			},
		}},
		Streams: []grpc.StreamDesc{
			{StreamName: "GreetServerStream", ServerStreams: true, Handler: s.serverStream},
			{StreamName: "GreetClientStream", ClientStreams: true, Handler: s.clientStream},
			{StreamName: "GreetStream", ServerStreams: true, ClientStreams: true, Handler: s.bidiStream},
		},
		Metadata: "greet.proto",
	}
}

// greet answers Greet. A name "fail:<code>:<message>" answers with that
// status code (any number, 17 included, as dubbo-go sends for a business
// error) and message; "sleep:<duration>" waits that long, or until the
// call ends, before answering.
func (s *Server) greet(ctx context.Context, n string) (any, error) {
	if rest, ok := strings.CutPrefix(n, "fail:"); ok {
		code, msg, _ := strings.Cut(rest, ":")
		c, err := strconv.Atoi(code)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "fail:%s: want fail:<code>:<message>", rest)
		}
		return nil, status.Error(codes.Code(c), msg)
	}
	if rest, ok := strings.CutPrefix(n, "sleep:"); ok {
		d, err := time.ParseDuration(rest)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "sleep:%s: %v", rest, err)
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	return s.response("Hello, " + n), nil
}

func (s *Server) response(greeting string) *dynamicpb.Message {
	m := newMessage(s.files, Response)
	m.Set(m.Descriptor().Fields().ByName("greeting"), protoreflect.ValueOfString(greeting))
	return m
}

func name(m *dynamicpb.Message) string {
	return m.Get(m.Descriptor().Fields().ByName("name")).String()
}

func (s *Server) serverStream(_ any, st grpc.ServerStream) error {
	s.record(st.Context(), "GreetServerStream")
	req := newMessage(s.files, StreamRequest)
	if err := st.RecvMsg(req); err != nil {
		return err
	}
	count := req.Get(req.Descriptor().Fields().ByName("count")).Int()
	for i := int64(1); i <= count; i++ {
		if err := st.SendMsg(s.response(fmt.Sprintf("Hello, %s #%d", name(req), i))); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) clientStream(_ any, st grpc.ServerStream) error {
	s.record(st.Context(), "GreetClientStream")
	var names []string
	for {
		req := newMessage(s.files, Request)
		err := st.RecvMsg(req)
		if errors.Is(err, io.EOF) {
			return st.SendMsg(s.response("Hello, " + strings.Join(names, ",")))
		}
		if err != nil {
			return err
		}
		names = append(names, name(req))
	}
}

func (s *Server) bidiStream(_ any, st grpc.ServerStream) error {
	s.record(st.Context(), "GreetStream")
	for {
		req := newMessage(s.files, Request)
		err := st.RecvMsg(req)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := st.SendMsg(s.response("Hello, " + name(req))); err != nil {
			return err
		}
	}
}
