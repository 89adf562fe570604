package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/dubbo-lab/dubbo/node/provider/settings"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Description is what a plugin answers to Describe, as JSON.
type Description struct {
	Services []Service `json:"services"`
}

// Service is one service a plugin serves: a Dubbo service, whose calls
// are hessian2, or a protobuf service (Proto set), whose Interface is the
// service's full proto name (greet.GreetService).
type Service struct {
	Interface string   `json:"interface"`
	Version   string   `json:"version,omitempty"`
	Group     string   `json:"group,omitempty"`
	Methods   []Method `json:"methods"`
	// Params are the service's settings as Dubbo URL parameters (weight,
	// dubbo.tag, timeout in ms, ...), for its provider URL.
	Params map[string]string `json:"params,omitempty"`
	// Proto is set for a protobuf service; nil for a Dubbo one.
	Proto *ProtoService `json:"proto,omitempty"`
}

// ProtoService is what a protobuf service carries besides its methods.
type ProtoService struct {
	// Files is a serialized google.protobuf.FileDescriptorSet: the file
	// that defines the service and every file it imports, directly or not.
	Files []byte `json:"files"`
}

// Method is one method: of a Dubbo service with its Java signature, of a
// protobuf service with its kind and message types. Calls name a method
// by its index in Service.Methods.
type Method struct {
	Name       string   `json:"name"`
	ParamTypes []string `json:"paramTypes,omitempty"`
	ReturnType string   `json:"returnType,omitempty"`
	// Kind, Input and Output are a protobuf method's: which sides stream,
	// and the full names of its request and response messages.
	Kind   rpc.MethodKind `json:"kind,omitempty"`
	Input  string         `json:"input,omitempty"`
	Output string         `json:"output,omitempty"`
}

// ProtoFiles is the serialized FileDescriptorSet of file and of every file
// it imports, directly or not: what ProtoService.Files holds.
func ProtoFiles(file protoreflect.FileDescriptor) ([]byte, error) {
	var set descriptorpb.FileDescriptorSet
	seen := map[string]bool{}
	var add func(f protoreflect.FileDescriptor)
	add = func(f protoreflect.FileDescriptor) {
		if seen[f.Path()] {
			return
		}
		seen[f.Path()] = true
		imports := f.Imports()
		for i := range imports.Len() {
			add(imports.Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(f))
	}
	add(file)
	return proto.MarshalOptions{Deterministic: true}.Marshal(&set)
}

// maxDescription bounds what the node accepts from Describe: the gRPC
// message it comes in. Descriptor sets make most of a large one.
const maxDescription = maxMessage

// ParseDescription decodes and validates a Describe answer.
func ParseDescription(b []byte) (*Description, error) {
	if len(b) > maxDescription {
		return nil, fmt.Errorf("description is %d bytes, more than %d", len(b), maxDescription)
	}
	var d Description
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("description is not valid JSON: %w", err)
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return &d, nil
}

// Validate reports the first thing wrong with d: an empty or malformed
// interface name, a service described twice, a bad method name, a
// method described twice, a Java type name that is not one, or for a
// protobuf service descriptors that do not parse or do not define the
// service and methods described. No services at all is valid: a
// consumer-side plugin only calls.
func (d *Description) Validate() error {
	seen := make(map[string]bool, len(d.Services))
	for _, s := range d.Services {
		if s.Proto != nil {
			key := url.ServiceKey(s.Interface, s.Version, s.Group)
			if err := s.validateProto(); err != nil {
				return fmt.Errorf("protobuf service %s: %w", key, err)
			}
			if seen[key] {
				return fmt.Errorf("service %s is described twice", key)
			}
			seen[key] = true
			continue
		}
		if !ValidJavaName(s.Interface) {
			return fmt.Errorf("service interface %q is not a Java class name (like org.example.Greeter)", s.Interface)
		}
		key := url.ServiceKey(s.Interface, s.Version, s.Group)
		if seen[key] {
			return fmt.Errorf("service %s is described twice", key)
		}
		seen[key] = true
		if err := settings.CheckParams(s.Params); err != nil {
			return fmt.Errorf("service %s: %w", key, err)
		}
		if len(s.Methods) == 0 {
			return fmt.Errorf("service %s has no methods", key)
		}
		names := make(map[string]bool, len(s.Methods))
		for _, m := range s.Methods {
			if !validIdent(m.Name) {
				return fmt.Errorf("service %s: method name %q is not a Java identifier", key, m.Name)
			}
			if names[m.Name] {
				return fmt.Errorf("service %s: method %s is described twice (overloads are not supported)", key, m.Name)
			}
			names[m.Name] = true
			for i, t := range m.ParamTypes {
				if !ValidJavaType(t) || t == "void" {
					return fmt.Errorf("service %s: method %s: parameter %d type %q is not a Java type", key, m.Name, i+1, t)
				}
			}
			if !ValidJavaType(m.ReturnType) {
				return fmt.Errorf("service %s: method %s: return type %q is not a Java type", key, m.Name, m.ReturnType)
			}
		}
	}
	return nil
}

// validateProto checks a protobuf service: its name, settings, files and
// methods.
func (s *Service) validateProto() error {
	if !protoreflect.FullName(s.Interface).IsValid() {
		return fmt.Errorf("%q is not a full protobuf service name (like greet.GreetService)", s.Interface)
	}
	if err := settings.CheckParams(s.Params); err != nil {
		return err
	}
	_, sd, err := s.ResolveProto()
	if err != nil {
		return err
	}
	if len(s.Methods) == 0 {
		return errors.New("no methods")
	}
	names := make(map[string]bool, len(s.Methods))
	for _, m := range s.Methods {
		md := sd.Methods().ByName(protoreflect.Name(m.Name))
		if md == nil {
			return fmt.Errorf("method %q is not in its descriptor", m.Name)
		}
		kind := rpc.MethodKindOf(md.IsStreamingClient(), md.IsStreamingServer())
		switch {
		case names[m.Name]:
			return fmt.Errorf("method %s is described twice", m.Name)
		case m.Kind != kind:
			return fmt.Errorf("method %s is %v in its descriptor, described as %v", m.Name, kind, m.Kind)
		case m.Input != string(md.Input().FullName()) || m.Output != string(md.Output().FullName()):
			return fmt.Errorf("method %s takes %s and returns %s in its descriptor, described as %s and %s",
				m.Name, md.Input().FullName(), md.Output().FullName(), m.Input, m.Output)
		}
		names[m.Name] = true
	}
	return nil
}

// ResolveProto parses a protobuf service's files and finds the service in
// them; the files must hold every file they import.
func (s *Service) ResolveProto() (*protoregistry.Files, protoreflect.ServiceDescriptor, error) {
	if s.Proto == nil {
		return nil, nil, fmt.Errorf("%s is not a protobuf service", s.Interface)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(s.Proto.Files, &set); err != nil {
		return nil, nil, fmt.Errorf("its files are not a FileDescriptorSet: %w", err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		return nil, nil, fmt.Errorf("its files do not resolve: %w", err)
	}
	d, err := files.FindDescriptorByName(protoreflect.FullName(s.Interface))
	if err != nil {
		return nil, nil, fmt.Errorf("its files do not define it: %w", err)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, nil, fmt.Errorf("%s is not a service in its files", s.Interface)
	}
	return files, sd, nil
}

// A ServiceID names a service as calls do, with the versions that mean the
// same made one (url.NormalVersion): a map key built without allocating,
// where url.ServiceKey builds a string on every call.
type ServiceID struct{ Interface, Version, Group string }

// IDOf is the ServiceID of a service or of a call to it.
func IDOf(iface, version, group string) ServiceID {
	return ServiceID{iface, url.NormalVersion(version), group}
}

var primitives = map[string]bool{
	"boolean": true, "byte": true, "char": true, "short": true,
	"int": true, "long": true, "float": true, "double": true, "void": true,
}

// ValidJavaType accepts a primitive, a class name, or either followed by
// array brackets ("byte[]", "java.lang.String[][]").
func ValidJavaType(t string) bool {
	base := t
	for strings.HasSuffix(base, "[]") {
		base = strings.TrimSuffix(base, "[]")
	}
	if primitives[base] {
		return base != "void" || base == t
	}
	return ValidJavaName(base)
}

// ValidJavaName accepts a dotted Java class name; '$' is allowed for nested
// classes.
func ValidJavaName(name string) bool {
	if name == "" || len(name) > 1024 {
		return false
	}
	for _, part := range strings.Split(name, ".") {
		if !validIdent(part) {
			return false
		}
	}
	return true
}

func validIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case i > 0 && r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}
