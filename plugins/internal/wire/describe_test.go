package wire

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	_ "google.golang.org/protobuf/types/known/apipb" // api.proto, which imports two files of its own

	"github.com/dubbo-lab/dubbo/examples/greet/greetpb"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

func TestParseDescription(t *testing.T) {
	tests := []struct{ json, err string }{
		{`{"services":[{"interface":"org.example.Greeter","version":"1.0.0","methods":[{"name":"sayHello","paramTypes":["java.lang.String"],"returnType":"java.lang.String"}]}]}`, ""},
		{`{"services":[{"interface":"a.B$C","methods":[{"name":"m","paramTypes":["int[]","java.util.List[][]"],"returnType":"void"}]}]}`, ""},
		{`not json`, "not valid JSON"},
		{`{"services":[]}`, ""}, // a consumer-side plugin
		{`{}`, ""},
		{`{"services":[{"interface":"","methods":[]}]}`, "not a Java class name"},
		{`{"services":[{"interface":"a..b","methods":[]}]}`, "not a Java class name"},
		{`{"services":[{"interface":"a.B","methods":[]}]}`, "has no methods"},
		{`{"services":[{"interface":"a.B","methods":[{"name":"1m","returnType":"int"}]}]}`, "not a Java identifier"},
		{`{"services":[{"interface":"a.B","methods":[{"name":"m","paramTypes":["void"],"returnType":"int"}]}]}`, "is not a Java type"},
		{`{"services":[{"interface":"a.B","methods":[{"name":"m","paramTypes":["java.lang.String;"],"returnType":"int"}]}]}`, "is not a Java type"},
		{`{"services":[{"interface":"a.B","methods":[{"name":"m","returnType":""}]}]}`, "return type"},
		{`{"services":[{"interface":"a.B","methods":[{"name":"m","returnType":"int"},{"name":"m","returnType":"int"}]}]}`, "described twice"},
		{`{"services":[{"interface":"a.B","version":"0.0.0","methods":[{"name":"m","returnType":"int"}]},{"interface":"a.B","methods":[{"name":"m","returnType":"int"}]}]}`, "described twice"},
		{`{"services":[{"interface":"a.B","methods":[{"name":"m","returnType":"int"}],"params":{"weight":"200","dubbo.tag":"gray"}}]}`, ""},
		{`{"services":[{"interface":"a.B","methods":[{"name":"m","returnType":"int"}],"params":{"weight":"heavy"}}]}`, `parameter weight: "heavy" is not a non-negative integer`},
		{`{"services":[{"interface":"a.B","methods":[{"name":"m","returnType":"int"}],"params":{"interface":"c.D"}}]}`, "parameter interface: written by the provider"},
		{`{"services":[{"interface":"a.B","methods":[{"name":"m","returnType":"int"}],"params":{"":"x"}}]}`, "not a URL parameter name"},
	}
	for _, tt := range tests {
		_, err := ParseDescription([]byte(tt.json))
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.json, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: err = %v, want %q", tt.json, err, tt.err)
		}
	}
}

// FuzzParseDescription: whatever a plugin answers to Describe, the node
// either refuses it with an error or gets services it can register.
func FuzzParseDescription(f *testing.F) {
	f.Add([]byte(`{"services":[{"interface":"org.example.Greeter","version":"1.0.0","methods":[{"name":"sayHello","paramTypes":["java.lang.String"],"returnType":"java.lang.String"}],"params":{"weight":"200","dubbo.tag":"gray","timeout":"3000"}}]}`))
	f.Add([]byte(`{"services":[]}`))
	greet, err := json.Marshal(Description{Services: []Service{greetService(f)}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(greet)
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDescription(b)
		if err != nil {
			return
		}
		for _, s := range d.Services {
			if s.Proto != nil {
				if _, _, err := s.ResolveProto(); err != nil || len(s.Methods) == 0 {
					t.Fatalf("accepted protobuf service %s with %d methods: %v", s.Interface, len(s.Methods), err)
				}
				continue
			}
			if !ValidJavaName(s.Interface) || len(s.Methods) == 0 {
				t.Fatalf("accepted service %+v", s)
			}
			for k, v := range s.Params {
				if k == "" || strings.ContainsAny(k, "&= ") || strings.Contains(v, "&") {
					t.Fatalf("accepted parameter %q=%q", k, v)
				}
			}
		}
	})
}

// greetFiles is greet.proto's FileDescriptorSet, as the SDK sends it.
func greetFiles(t testing.TB) []byte {
	t.Helper()
	b, err := ProtoFiles(greetpb.File_greet_proto)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// greetService is greet.GreetService as the SDK describes it.
func greetService(t testing.TB) Service {
	return Service{Interface: "greet.GreetService", Proto: &ProtoService{Files: greetFiles(t)}, Methods: []Method{
		{Name: "Greet", Kind: rpc.Unary, Input: "greet.GreetRequest", Output: "greet.GreetResponse"},
		{Name: "GreetServerStream", Kind: rpc.ServerStream, Input: "greet.GreetStreamRequest", Output: "greet.GreetResponse"},
		{Name: "GreetClientStream", Kind: rpc.ClientStream, Input: "greet.GreetRequest", Output: "greet.GreetResponse"},
		{Name: "GreetStream", Kind: rpc.BidiStream, Input: "greet.GreetRequest", Output: "greet.GreetResponse"},
	}}
}

// filesWith is greet.proto's set changed by edit.
func filesWith(t testing.TB, edit func(f *descriptorpb.FileDescriptorProto)) []byte {
	t.Helper()
	f := protodesc.ToFileDescriptorProto(greetpb.File_greet_proto)
	edit(f)
	b, err := proto.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{f}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseProtoDescription(t *testing.T) {
	hessian := Service{Interface: "greet.GreetService", Methods: []Method{{Name: "greet", ParamTypes: []string{}, ReturnType: "void"}}}
	tests := []struct {
		name string
		edit func(s *Service, d *Description)
		err  string
	}{
		{"valid", func(*Service, *Description) {}, ""},
		{"some methods", func(s *Service, _ *Description) { s.Methods = s.Methods[1:2] }, ""},
		{"version and group", func(s *Service, _ *Description) { s.Version, s.Group = "1.0.0", "g" }, ""},
		{"bad name", func(s *Service, _ *Description) { s.Interface = "greet.Greet$Service" }, "not a full protobuf service name"},
		{"no methods", func(s *Service, _ *Description) { s.Methods = nil }, "no methods"},
		{"not a set", func(s *Service, _ *Description) { s.Proto.Files = []byte{0xff, 0xff} }, "not a FileDescriptorSet"},
		{"no files", func(s *Service, _ *Description) { s.Proto.Files = nil }, "do not define it"},
		{"missing import", func(s *Service, _ *Description) {
			s.Proto.Files = filesWith(t, func(f *descriptorpb.FileDescriptorProto) { f.Dependency = []string{"other.proto"} })
		}, "do not resolve"},
		{"other service", func(s *Service, _ *Description) { s.Interface = "greet.Nope" }, "do not define it"},
		{"a message", func(s *Service, _ *Description) { s.Interface = "greet.GreetRequest" }, "is not a service"},
		{"unknown method", func(s *Service, _ *Description) { s.Methods[0].Name = "Gret" }, `method "Gret" is not in its descriptor`},
		{"method twice", func(s *Service, _ *Description) { s.Methods[1] = s.Methods[0] }, "described twice"},
		{"wrong kind", func(s *Service, _ *Description) { s.Methods[1].Kind = rpc.Unary }, "is server-streaming in its descriptor, described as unary"},
		{"wrong input", func(s *Service, _ *Description) { s.Methods[0].Input = "greet.GreetStreamRequest" }, "takes greet.GreetRequest"},
		{"wrong output", func(s *Service, _ *Description) { s.Methods[0].Output = "greet.GreetRequest" }, "returns greet.GreetResponse"},
		{"bad settings", func(s *Service, _ *Description) { s.Params = map[string]string{"weight": "-1"} }, "parameter weight"},
		{"twice", func(s *Service, d *Description) { d.Services = append(d.Services, *s) }, "described twice"},
		{"also a Dubbo service", func(_ *Service, d *Description) { d.Services = append(d.Services, hessian) }, "described twice"},
	}
	for _, tt := range tests {
		s := greetService(t)
		d := Description{}
		tt.edit(&s, &d)
		d.Services = append([]Service{s}, d.Services...)
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ParseDescription(b)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.err)
		}
	}
}

// A method's kind travels by the name gRPC's documentation gives it (the
// sdk writes it, the node reads it: wire protocol 7); a name that is not
// one is refused.
func TestKindJSON(t *testing.T) {
	tests := []struct {
		kind rpc.MethodKind
		json string
	}{
		{rpc.Unary, `{"name":"M"}`},
		{rpc.ServerStream, `{"name":"M","kind":"server-streaming"}`},
		{rpc.ClientStream, `{"name":"M","kind":"client-streaming"}`},
		{rpc.BidiStream, `{"name":"M","kind":"bidi-streaming"}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(Method{Name: "M", Kind: tt.kind})
		if err != nil || string(b) != tt.json {
			t.Errorf("%v: written as %s, %v; want %s", tt.kind, b, err, tt.json)
		}
		var m Method
		if err := json.Unmarshal([]byte(tt.json), &m); err != nil || m.Kind != tt.kind {
			t.Errorf("%s read back as %v, %v", tt.json, m.Kind, err)
		}
	}
	var m Method
	for _, bad := range []string{`{"name":"M","kind":"sideways"}`, `{"name":"M","kind":"server_stream"}`} {
		if err := json.Unmarshal([]byte(bad), &m); err == nil || !strings.Contains(err.Error(), "not a method kind") {
			t.Errorf("%s: err = %v", bad, err)
		}
	}
}

// A service whose file imports others carries them, imports of imports
// too, and the node resolves it from them.
func TestProtoFilesImports(t *testing.T) {
	fdp := &descriptorpb.FileDescriptorProto{
		Name: proto.String("ping.proto"), Package: proto.String("ping"), Syntax: proto.String("proto3"),
		Dependency: []string{"google/protobuf/empty.proto", "google/protobuf/api.proto"},
		Service: []*descriptorpb.ServiceDescriptorProto{{Name: proto.String("Pinger"), Method: []*descriptorpb.MethodDescriptorProto{
			{Name: proto.String("Ping"), InputType: proto.String(".google.protobuf.Empty"), OutputType: proto.String(".google.protobuf.Api")},
		}}},
	}
	fd, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ProtoFiles(fd)
	if err != nil {
		t.Fatal(err)
	}
	s := Service{Interface: "ping.Pinger", Proto: &ProtoService{Files: b}, Methods: []Method{{Name: "Ping", Input: "google.protobuf.Empty", Output: "google.protobuf.Api"}}}
	if err := (&Description{Services: []Service{s}}).Validate(); err != nil {
		t.Fatal(err)
	}
	files, _, err := s.ResolveProto()
	if err != nil {
		t.Fatal(err)
	}
	// api.proto imports source_context.proto and type.proto.
	for _, path := range []string{"ping.proto", "google/protobuf/empty.proto", "google/protobuf/api.proto", "google/protobuf/source_context.proto", "google/protobuf/type.proto"} {
		if _, err := files.FindFileByPath(path); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
}
