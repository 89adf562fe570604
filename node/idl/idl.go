// Package idl is what a consumer knows of the protobuf (IDL) services it
// calls without their generated code: their descriptors, asked of the
// provider with gRPC server reflection (Resolve), and their methods, which
// turn a request given as protobuf JSON into the encoded message the call
// carries (an rpc.Message) and a response back into JSON (Method).
//
//	svc, err := idl.Resolve(ctx, conn, "greet.GreetService")
//	m, err := idl.MethodOf(svc, "Greet")
//	req, err := m.Request([]byte(`{"name":"x"}`))   // rpc.Message
//	... res.Value.(rpc.Message) ...
//	out, err := m.Response(msg)                      // {"greeting":"Hello, x"}
//	m.RequestTemplate()                               // {"name": ""}: a request to start from
//
// JSON is protobuf's JSON mapping (protojson): field names in
// lowerCamelCase (the proto names are accepted too), 64-bit integers as
// strings, enums by name; a response leaves out fields at their default.
// A request that does not fit the message is an error that names the
// field, wrapping rpc.ErrBadRequest.
package idl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Method is one method of a protobuf service.
type Method struct {
	desc protoreflect.MethodDescriptor
}

// MethodOf finds method in svc; the error, wrapping
// rpc.ErrServiceNotFound, lists the methods there are.
func MethodOf(svc protoreflect.ServiceDescriptor, method string) (*Method, error) {
	if md := svc.Methods().ByName(protoreflect.Name(method)); md != nil {
		return &Method{desc: md}, nil
	}
	names := make([]string, svc.Methods().Len())
	for i := range names {
		names[i] = string(svc.Methods().Get(i).Name())
	}
	return nil, &rpc.CallError{Kind: rpc.ErrServiceNotFound, Service: string(svc.FullName()), Method: method,
		Detail: fmt.Sprintf("the service's descriptor has no method %s; it has %s", method, strings.Join(names, ", "))}
}

// Kind is the method's shape.
func (m *Method) Kind() rpc.MethodKind {
	return rpc.MethodKindOf(m.desc.IsStreamingClient(), m.desc.IsStreamingServer())
}

// RequestType and ResponseType are the full names of the method's
// messages.
func (m *Method) RequestType() string  { return string(m.desc.Input().FullName()) }
func (m *Method) ResponseType() string { return string(m.desc.Output().FullName()) }

// Request encodes a request message given as protobuf JSON. The error
// wraps rpc.ErrBadRequest and says what does not fit, naming the field.
func (m *Method) Request(js []byte) (rpc.Message, error) {
	msg := dynamicpb.NewMessage(m.desc.Input())
	if err := protojson.Unmarshal(js, msg); err != nil {
		return rpc.Message{}, &rpc.CallError{Kind: rpc.ErrBadRequest, Service: string(m.desc.Parent().FullName()),
			Method: string(m.desc.Name()), Detail: fmt.Sprintf("the request is not a %s in protobuf JSON: %v", m.RequestType(), err)}
	}
	b, err := proto.Marshal(msg)
	if err != nil {
		return rpc.Message{}, &rpc.CallError{Kind: rpc.ErrBadRequest, Service: string(m.desc.Parent().FullName()),
			Method: string(m.desc.Name()), Detail: fmt.Sprintf("encode %s: %v", m.RequestType(), err)}
	}
	return rpc.Message{Type: m.RequestType(), Bytes: b}, nil
}

// RequestTemplate is an empty request message as indented protobuf JSON:
// every field at its default, messages filled in the same way (three
// levels deep; Google's well-known types left null), lists and maps
// empty, enums at their first value. A starting point for a request
// typed by hand (the console's test page).
func (m *Method) RequestTemplate() json.RawMessage {
	msg := dynamicpb.NewMessage(m.desc.Input())
	fillTemplate(msg, 0)
	js, err := protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(msg)
	if err != nil {
		return json.RawMessage("{}")
	}
	// protojson's spacing varies on purpose: made plain, then indented.
	var compact, out bytes.Buffer
	if json.Compact(&compact, js) != nil || json.Indent(&out, compact.Bytes(), "", "  ") != nil {
		return js
	}
	return out.Bytes()
}

// templateDepth bounds how deep RequestTemplate fills messages (a message
// may hold itself).
const templateDepth = 3

func fillTemplate(msg protoreflect.Message, depth int) {
	if depth >= templateDepth {
		return
	}
	fields := msg.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		if f.Message() == nil || f.IsList() || f.IsMap() || f.ContainingOneof() != nil ||
			strings.HasPrefix(string(f.Message().FullName()), "google.protobuf.") {
			continue
		}
		fillTemplate(msg.Mutable(f).Message(), depth+1)
	}
}

// Response is a response message as compact protobuf JSON.
func (m *Method) Response(msg rpc.Message) (json.RawMessage, error) {
	out := dynamicpb.NewMessage(m.desc.Output())
	if err := proto.Unmarshal(msg.Bytes, out); err != nil {
		return nil, fmt.Errorf("%s.%s: the response is not a %s: %w", m.desc.Parent().FullName(), m.desc.Name(), m.ResponseType(), err)
	}
	js, err := protojson.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("%s.%s: %s as JSON: %w", m.desc.Parent().FullName(), m.desc.Name(), m.ResponseType(), err)
	}
	// protojson varies its spacing on purpose; one line, always the same.
	var compact bytes.Buffer
	if err := json.Compact(&compact, js); err != nil {
		return nil, err
	}
	return compact.Bytes(), nil
}
