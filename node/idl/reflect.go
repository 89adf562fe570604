//lint:file-ignore SA1019 v1alpha is deprecated, and the only reflection dubbo-go v3.3.0 serves.

package idl

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	v1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	v1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// ErrNoDescriptor is Resolve's answer when the provider describes no such
// protobuf service: its reflection does not know it (a Java-interface
// service), or it serves no reflection at all.
var ErrNoDescriptor = errors.New("the provider describes no such protobuf service")

// maxFiles bounds the descriptor files one Resolve reads: a real service
// needs a handful, a hostile provider could name imports forever.
const maxFiles = 256

// Resolve asks the provider at the other end of conn for the descriptor of
// service, with gRPC server reflection: grpc.reflection.v1 first, as
// current tools do, else v1alpha (dubbo-go v3.3.0 serves only that). The
// files come with their imports, asked for by name when the provider
// leaves some out.
func Resolve(ctx context.Context, conn grpc.ClientConnInterface, service string) (protoreflect.ServiceDescriptor, error) {
	svc, err := resolveWith(ctx, service, func(ctx context.Context) (reflectionStream, error) {
		s, err := v1.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
		return s, err
	})
	if status.Code(err) == codes.Unimplemented {
		svc, err = resolveWith(ctx, service, func(ctx context.Context) (reflectionStream, error) {
			s, err := v1alpha.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
			if err != nil {
				return nil, err
			}
			return alphaStream{s}, nil
		})
		if status.Code(err) == codes.Unimplemented {
			return nil, fmt.Errorf("%s: %w: the provider serves no gRPC server reflection (grpc.reflection.v1 or v1alpha)", service, ErrNoDescriptor)
		}
	}
	return svc, err
}

// reflectionStream is one reflection call, in v1's messages.
type reflectionStream interface {
	Send(*v1.ServerReflectionRequest) error
	Recv() (*v1.ServerReflectionResponse, error)
	CloseSend() error
}

// alphaStream speaks v1alpha with v1's messages: the two are the same
// messages under two package names, so they convert through their
// encoding.
type alphaStream struct {
	v1alpha.ServerReflection_ServerReflectionInfoClient
}

func (a alphaStream) Send(req *v1.ServerReflectionRequest) error {
	var alpha v1alpha.ServerReflectionRequest
	if err := convert(req, &alpha); err != nil {
		return err
	}
	return a.ServerReflection_ServerReflectionInfoClient.Send(&alpha)
}

func (a alphaStream) Recv() (*v1.ServerReflectionResponse, error) {
	alpha, err := a.ServerReflection_ServerReflectionInfoClient.Recv()
	if err != nil {
		return nil, err
	}
	var resp v1.ServerReflectionResponse
	if err := convert(alpha, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

func convert(from, to proto.Message) error {
	b, err := proto.Marshal(from)
	if err != nil {
		return err
	}
	return proto.Unmarshal(b, to)
}

func resolveWith(ctx context.Context, service string, open func(context.Context) (reflectionStream, error)) (protoreflect.ServiceDescriptor, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the reflection call whatever happens
	s, err := open(ctx)
	if err != nil {
		return nil, err
	}
	ask := func(req *v1.ServerReflectionRequest) ([][]byte, error) {
		if err := s.Send(req); err != nil {
			if _, rerr := s.Recv(); rerr != nil {
				err = rerr // the status the call ended with
			}
			return nil, err
		}
		resp, err := s.Recv()
		if err != nil {
			return nil, err
		}
		if e := resp.GetErrorResponse(); e != nil {
			if codes.Code(e.GetErrorCode()) == codes.NotFound {
				return nil, fmt.Errorf("%s: %w: reflection answered %q", service, ErrNoDescriptor, e.GetErrorMessage())
			}
			return nil, fmt.Errorf("%s: reflection answered %s: %s", service, codes.Code(e.GetErrorCode()), e.GetErrorMessage())
		}
		fd := resp.GetFileDescriptorResponse()
		if fd == nil {
			return nil, fmt.Errorf("%s: reflection answered without file descriptors", service)
		}
		return fd.GetFileDescriptorProto(), nil
	}

	files := map[string]*descriptorpb.FileDescriptorProto{}
	add := func(raws [][]byte) error {
		for _, raw := range raws {
			f := &descriptorpb.FileDescriptorProto{}
			if err := proto.Unmarshal(raw, f); err != nil {
				return fmt.Errorf("%s: a file descriptor from reflection: %w", service, err)
			}
			files[f.GetName()] = f
		}
		if len(files) > maxFiles {
			return fmt.Errorf("%s: reflection sent more than %d files", service, maxFiles)
		}
		return nil
	}
	raws, err := ask(&v1.ServerReflectionRequest{MessageRequest: &v1.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: service}})
	if err != nil {
		return nil, err
	}
	if err := add(raws); err != nil {
		return nil, err
	}
	// Ask for the imports the provider did not send (it leaves out what
	// it believes this call has seen already).
	for {
		missing := missingImports(files)
		if len(missing) == 0 {
			break
		}
		raws, err := ask(&v1.ServerReflectionRequest{MessageRequest: &v1.ServerReflectionRequest_FileByFilename{FileByFilename: missing[0]}})
		if err != nil {
			return nil, err
		}
		n := len(files)
		if err := add(raws); err != nil {
			return nil, err
		}
		if len(files) == n || files[missing[0]] == nil {
			return nil, fmt.Errorf("%s: reflection did not send %s, which a file imports", service, missing[0])
		}
	}
	s.CloseSend()

	set := &descriptorpb.FileDescriptorSet{}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		set.File = append(set.File, files[name])
	}
	reg, err := protodesc.NewFiles(set)
	if err != nil {
		return nil, fmt.Errorf("%s: the descriptors from reflection do not fit together: %w", service, err)
	}
	d, err := reg.FindDescriptorByName(protoreflect.FullName(service))
	if err != nil {
		return nil, fmt.Errorf("%s: %w: not in the files reflection sent", service, ErrNoDescriptor)
	}
	svc, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, fmt.Errorf("%s: %w: it names a %T, not a service", service, ErrNoDescriptor, d)
	}
	return svc, nil
}

// missingImports are the files imported by files and not among them.
func missingImports(files map[string]*descriptorpb.FileDescriptorProto) []string {
	var out []string
	for _, f := range files {
		for _, dep := range f.GetDependency() {
			if files[dep] == nil && !slices.Contains(out, dep) {
				out = append(out, dep)
			}
		}
	}
	slices.Sort(out)
	return out
}
