package plugins_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/dubbo-lab/dubbo/examples/greet/greetpb"
	"github.com/dubbo-lab/dubbo/plugins"
)

// TestServiceDescSame: a new build describing its services as the old one
// did is the same; any change to what is registered or served is not.
func TestServiceDescSame(t *testing.T) {
	greeter := func(edit func(*plugins.ServiceDesc)) plugins.ServiceDesc {
		s := plugins.ServiceDesc{Interface: "org.example.Greeter", Version: "1.0.0", Params: map[string]string{"weight": "100"},
			Methods: []plugins.MethodDesc{{Name: "sayHello", ParamTypes: []string{"java.lang.String"}, ReturnType: "java.lang.String"}}}
		if edit != nil {
			edit(&s)
		}
		return s
	}
	files := func(edit func(*descriptorpb.FileDescriptorProto)) *protoregistry.Files {
		fdp := protodesc.ToFileDescriptorProto(greetpb.File_greet_proto)
		if edit != nil {
			edit(fdp)
		}
		fd, err := protodesc.NewFile(fdp, nil)
		if err != nil {
			t.Fatal(err)
		}
		var fs protoregistry.Files
		if err := fs.RegisterFile(fd); err != nil {
			t.Fatal(err)
		}
		return &fs
	}
	greet := func(fs *protoregistry.Files) plugins.ServiceDesc {
		d, err := fs.FindDescriptorByName("greet.GreetService")
		if err != nil {
			t.Fatal(err)
		}
		return plugins.ServiceDesc{Interface: "greet.GreetService", Methods: []plugins.MethodDesc{{Name: "Greet"}},
			Proto: d.(protoreflect.ServiceDescriptor), Files: fs}
	}
	fieldAdded := files(func(fdp *descriptorpb.FileDescriptorProto) {
		for _, m := range fdp.MessageType {
			if m.GetName() == "GreetRequest" {
				m.Field = append(m.Field, &descriptorpb.FieldDescriptorProto{Name: proto.String("lang"), JsonName: proto.String("lang"),
					Number: proto.Int32(2), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()})
			}
		}
	})
	asDubbo := greet(files(nil))
	asDubbo.Proto, asDubbo.Files = nil, nil
	for _, tt := range []struct {
		name string
		a, b plugins.ServiceDesc
		same bool
	}{
		{"rebuilt unchanged", greeter(nil), greeter(nil), true},
		{"no settings either way", greeter(func(s *plugins.ServiceDesc) { s.Params = nil }), greeter(func(s *plugins.ServiceDesc) { s.Params = map[string]string{} }), true},
		{"a method more", greeter(nil), greeter(func(s *plugins.ServiceDesc) {
			s.Methods = append(s.Methods, plugins.MethodDesc{Name: "add", ParamTypes: []string{"int", "int"}, ReturnType: "int"})
		}), false},
		{"another parameter type", greeter(nil), greeter(func(s *plugins.ServiceDesc) { s.Methods[0].ParamTypes = []string{"java.lang.Object"} }), false},
		{"another return type", greeter(nil), greeter(func(s *plugins.ServiceDesc) { s.Methods[0].ReturnType = "void" }), false},
		{"another setting", greeter(nil), greeter(func(s *plugins.ServiceDesc) { s.Params["weight"] = "50" }), false},
		{"another version", greeter(nil), greeter(func(s *plugins.ServiceDesc) { s.Version = "2.0.0" }), false},
		{"the same .proto, parsed again", greet(files(nil)), greet(files(nil)), true},
		{"a field more in a message", greet(files(nil)), greet(fieldAdded), false},
		{"a Dubbo service now", greet(files(nil)), asDubbo, false},
	} {
		if got := tt.a.Same(tt.b); got != tt.same {
			t.Errorf("%s: Same = %v, want %v", tt.name, got, tt.same)
		}
	}
}
