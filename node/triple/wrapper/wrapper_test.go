package wrapper_test

import (
	"errors"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/dubbo-lab/dubbo/node/triple/wrapper"
)

// wrappers are Dubbo's two messages, built from their .proto definition so
// that a real protobuf implementation checks our encoding.
func wrappers(t *testing.T) (req, resp protoreflect.MessageDescriptor) {
	t.Helper()
	str, byt := descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(), descriptorpb.FieldDescriptorProto_TYPE_BYTES.Enum()
	opt, rep := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	field := func(name string, num int32, typ *descriptorpb.FieldDescriptorProto_Type, label *descriptorpb.FieldDescriptorProto_Label) *descriptorpb.FieldDescriptorProto {
		return &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(num), Type: typ, Label: label, JsonName: proto.String(name)}
	}
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name:    proto.String("triple_wrapper.proto"),
		Package: proto.String("org.apache.dubbo.triple"),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("TripleRequestWrapper"), Field: []*descriptorpb.FieldDescriptorProto{
				field("serializeType", 1, str, opt), field("args", 2, byt, rep), field("argTypes", 3, str, rep)}},
			{Name: proto.String("TripleResponseWrapper"), Field: []*descriptorpb.FieldDescriptorProto{
				field("serializeType", 1, str, opt), field("data", 2, byt, opt), field("type", 3, str, opt)}},
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fd.Messages().Get(0), fd.Messages().Get(1)
}

func TestRequestRoundTrip(t *testing.T) {
	reqDesc, _ := wrappers(t)
	tests := []wrapper.Request{
		{SerializeType: "hessian2", Args: [][]byte{{0x05, 'w', 'o', 'r', 'l', 'd'}}, ArgTypes: []string{"java.lang.String"}},
		{SerializeType: "hessian4", Args: [][]byte{{0x92}, {0x93}}, ArgTypes: []string{"int", "int"}},
		{SerializeType: "hessian2"}, // no arguments
	}
	for _, in := range tests {
		b := in.Append(nil)
		out, err := wrapper.ParseRequest(b)
		if err != nil {
			t.Fatalf("%+v: %v", in, err)
		}
		if out.SerializeType != in.SerializeType || !reflect.DeepEqual(out.ArgTypes, in.ArgTypes) || len(out.Args) != len(in.Args) {
			t.Errorf("round trip of %+v = %+v", in, out)
		}
		// A protobuf implementation reads the same message.
		m := dynamicpb.NewMessage(reqDesc)
		if err := proto.Unmarshal(b, m); err != nil {
			t.Fatalf("protobuf cannot read %+v: %v", in, err)
		}
		if got := m.Get(reqDesc.Fields().ByName("args")).List().Len(); got != len(in.Args) {
			t.Errorf("protobuf reads %d args, want %d", got, len(in.Args))
		}
	}
}

// dubbo-go answers with a TripleRequestWrapper of one argument; Java with a
// TripleResponseWrapper: ParseResponse reads both, as encoded by protobuf.
func TestParseResponseBothShapes(t *testing.T) {
	reqDesc, respDesc := wrappers(t)
	value := []byte{0x05, 'H', 'e', 'l', 'l', 'o'}

	goShape := dynamicpb.NewMessage(reqDesc)
	goShape.Set(reqDesc.Fields().ByName("serializeType"), protoreflect.ValueOfString("hessian2"))
	goShape.Mutable(reqDesc.Fields().ByName("args")).List().Append(protoreflect.ValueOfBytes(value))
	goShape.Mutable(reqDesc.Fields().ByName("argTypes")).List().Append(protoreflect.ValueOfString("java.lang.String"))

	javaShape := dynamicpb.NewMessage(respDesc)
	javaShape.Set(respDesc.Fields().ByName("serializeType"), protoreflect.ValueOfString("hessian4"))
	javaShape.Set(respDesc.Fields().ByName("data"), protoreflect.ValueOfBytes(value))
	javaShape.Set(respDesc.Fields().ByName("type"), protoreflect.ValueOfString("java.lang.String"))

	for _, m := range []*dynamicpb.Message{goShape, javaShape} {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		r, err := wrapper.ParseResponse(b)
		if err != nil {
			t.Fatalf("%s: %v", m.Descriptor().Name(), err)
		}
		if string(r.Data) != string(value) || r.Type != "java.lang.String" || !wrapper.IsHessian2(r.SerializeType) {
			t.Errorf("%s: parsed %+v", m.Descriptor().Name(), r)
		}
		// And our encoding of it is what protobuf reads.
		back := dynamicpb.NewMessage(respDesc)
		if err := proto.Unmarshal(r.Append(nil), back); err != nil {
			t.Fatal(err)
		}
		if got := back.Get(respDesc.Fields().ByName("data")).Bytes(); string(got) != string(value) {
			t.Errorf("protobuf reads data %q", got)
		}
	}
}

func TestParseRejects(t *testing.T) {
	tag := func(num protowire.Number, typ protowire.Type) []byte { return protowire.AppendTag(nil, num, typ) }
	tests := []struct {
		name string
		b    []byte
	}{
		{"truncated tag", []byte{0x80}},
		{"length past the end", append(tag(2, protowire.BytesType), 10, 'x')},
		{"known field with another wire type", append(tag(1, protowire.VarintType), 1)},
		{"two results", (&wrapper.Request{Args: [][]byte{{'N'}, {'N'}}}).Append(nil)},
	}
	for _, tt := range tests {
		if _, err := wrapper.ParseResponse(tt.b); !errors.Is(err, wrapper.ErrMalformed) {
			t.Errorf("%s: ParseResponse error %v, want ErrMalformed", tt.name, err)
		}
	}
	// Unknown fields are skipped, as protobuf does.
	b := protowire.AppendVarint(tag(9, protowire.VarintType), 7)
	b = (&wrapper.Response{Data: []byte{'N'}, Type: "V"}).Append(b)
	if r, err := wrapper.ParseResponse(b); err != nil || r.Type != "V" {
		t.Errorf("with an unknown field: %+v, %v", r, err)
	}
}

func TestValueRoundTrip(t *testing.T) {
	for _, v := range []any{"world", int32(42), int64(1) << 40, true, nil, []any{"a", int32(1)}} {
		b, err := wrapper.EncodeValue(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := wrapper.DecodeValue(b)
		if err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		if !reflect.DeepEqual(got, v) {
			t.Errorf("round trip of %#v = %#v", v, got)
		}
	}
	// A list that claims more elements than the bytes hold is refused
	// before the library allocates them.
	if _, err := wrapper.DecodeValue([]byte{'V', 0x04, '[', 'i', 'n', 't', 0xd5, 0xff, 0xff}); err == nil {
		t.Error("DecodeValue accepted a list longer than its bytes")
	}
}

func FuzzParseResponse(f *testing.F) {
	f.Add((&wrapper.Response{SerializeType: "hessian2", Data: []byte{0x05, 'H', 'e', 'l', 'l', 'o'}, Type: "java.lang.String"}).Append(nil))
	f.Add((&wrapper.Request{SerializeType: "hessian2", Args: [][]byte{{'N'}}, ArgTypes: []string{"V"}}).Append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := wrapper.ParseResponse(b)
		if err != nil {
			return
		}
		_, _ = wrapper.DecodeValue(r.Data)
	})
}

func FuzzParseRequest(f *testing.F) {
	f.Add((&wrapper.Request{SerializeType: "hessian2", Args: [][]byte{{0x92}, {0x93}}, ArgTypes: []string{"int", "int"}}).Append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := wrapper.ParseRequest(b)
		if err != nil {
			return
		}
		again, err := wrapper.ParseRequest(r.Append(nil))
		if err != nil || again.SerializeType != r.SerializeType || len(again.Args) != len(r.Args) {
			t.Fatalf("re-encoding %+v reads back as %+v, %v", r, again, err)
		}
		for _, a := range r.Args {
			_, _ = wrapper.DecodeValue(a)
		}
	})
}
