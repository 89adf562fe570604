package scaffold

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	gengo "google.golang.org/protobuf/cmd/protoc-gen-go/internal_gengo"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

// protoFile is what the templates of a protobuf handler fill in.
type protoFile struct {
	File     string // the .proto file's name: greet.proto
	Package  string // the Go package of its generated code: hellopb
	Import   string // its import path: hello/hellopb
	Var      string // the file descriptor's variable: File_greet_proto
	Imports  []goImport
	Services []protoService
	// Greeter is the first unary method, which greets; Probe the first
	// method when none is unary, which the test finds unimplemented.
	Greeter, Probe *protoMethod
	Unary, Stub    bool // some method is unary; some answers Unimplemented
}

type goImport struct{ Name, Path string }

type protoService struct {
	Name, Full string // GreetService, greet.GreetService
	Key        string // the key sdktest calls name it by
	Type       string // the Go type of its handler
	Methods    []*protoMethod
}

type protoMethod struct {
	Name    string // as the descriptor spells it: Greet
	Full    string // /greet.GreetService/Greet
	Call    string // as sdktest names it: greet.GreetService/Greet
	Kind    string // the sdk function that serves it: Unary, ServerStream...
	In, Out string // the Go types of its messages: hellopb.GreetRequest
	// The string fields the greeting reads and writes; "" when none.
	InField, OutField string
}

// protoHandler generates the Go code of spec.Proto and the handler of its
// services.
func protoHandler(spec Spec) (*handler, error) {
	if spec.Interface != "" {
		return nil, errors.New("a protobuf handler serves the services of its .proto file: give --proto or --interface, not both")
	}
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		return nil, errors.New("--proto needs protoc, the protobuf compiler, on $PATH: install it (Debian and Ubuntu: apt-get install protobuf-compiler; macOS: brew install protobuf)")
	}
	src, err := os.ReadFile(spec.Proto)
	if err != nil {
		return nil, err
	}
	req, err := describeProto(protoc, spec.Proto)
	if err != nil {
		return nil, err
	}
	base := filepath.Base(spec.Proto)
	pf := &protoFile{File: base, Package: spec.Name + "pb"}
	pf.Import = spec.Name + "/" + pf.Package
	req.Parameter = proto.String("paths=source_relative,M" + base + "=" + pf.Import + ";" + pf.Package)
	gen, err := protogen.Options{}.New(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Proto, err)
	}
	var target *protogen.File
	for _, f := range gen.Files {
		if f.Generate {
			target = f
			gengo.GenerateFile(gen, f)
		}
	}
	gen.SupportedFeatures = gengo.SupportedFeatures
	resp := gen.Response()
	if resp.Error != nil {
		return nil, fmt.Errorf("%s: %s", spec.Proto, resp.GetError())
	}
	if len(target.Services) == 0 {
		return nil, fmt.Errorf("%s defines no service: a protobuf handler serves the services of its file", spec.Proto)
	}
	h := &handler{kind: "proto", Name: spec.Name, Plugin: spec.PluginPath(), Version: spec.Version, Group: spec.Group, Proto: pf}
	pf.Var = target.GoDescriptorIdent.GoName
	h.extra = append(h.extra, file{pf.Package + "/" + base, src}, file{pf.Package + "/doc.go", pbDoc(pf, protocVersion(req))})
	for _, rf := range resp.File {
		h.extra = append(h.extra, file{pf.Package + "/" + rf.GetName(), []byte(rf.GetContent())})
	}
	imports := map[protogen.GoImportPath]string{protogen.GoImportPath(pf.Import): pf.Package}
	qualify := func(m *protogen.Message) string {
		name, ok := imports[m.GoIdent.GoImportPath]
		if !ok {
			name = path.Base(string(m.GoIdent.GoImportPath))
			imports[m.GoIdent.GoImportPath] = name
			pf.Imports = append(pf.Imports, goImport{name, string(m.GoIdent.GoImportPath)})
		}
		return name + "." + m.GoIdent.GoName
	}
	var keys []string
	for _, s := range target.Services {
		ps := protoService{Name: string(s.Desc.Name()), Full: string(s.Desc.FullName()), Type: s.GoName}
		ps.Key = serviceKey(ps.Full, spec.Version, spec.Group)
		keys = append(keys, ps.Key)
		for _, m := range s.Methods {
			pm := &protoMethod{Name: string(m.Desc.Name()), Kind: kindOf(m.Desc), In: qualify(m.Input), Out: qualify(m.Output)}
			pm.Full, pm.Call = "/"+ps.Full+"/"+pm.Name, ps.Key+"/"+pm.Name
			if pm.Kind == "Unary" && pf.Greeter == nil {
				pf.Greeter, pm.InField, pm.OutField = pm, stringField(m.Input), stringField(m.Output)
			} else {
				pf.Stub = true
			}
			pf.Unary = pf.Unary || pm.Kind == "Unary"
			ps.Methods = append(ps.Methods, pm)
		}
		pf.Services = append(pf.Services, ps)
	}
	if pf.Greeter == nil {
		pf.Probe = pf.Services[0].Methods[0]
	}
	h.Service = strings.Join(keys, ", ")
	h.CallExample = "dubbo call" + versionFlags(spec) + " " + pf.Services[0].Full + " " + pf.Services[0].Methods[0].Name + " '{}'"
	return h, nil
}

// describeProto runs protoc on the file and returns the request
// protoc-gen-go would get for it. The file may import the well-known types
// only: the module holds the Go code of this one file.
func describeProto(protoc, file string) (*pluginpb.CodeGeneratorRequest, error) {
	out, err := os.CreateTemp("", "dubbo-new-*.pb")
	if err != nil {
		return nil, err
	}
	out.Close()
	defer os.Remove(out.Name())
	dir, base := filepath.Split(file)
	if dir == "" {
		dir = "."
	}
	cmd := exec.Command(protoc, "-I", dir, "--include_imports", "--include_source_info", "--descriptor_set_out="+out.Name(), base)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("protoc %s: %w\n%s", file, err, bytes.TrimSpace(msg))
	}
	b, err := os.ReadFile(out.Name())
	if err != nil {
		return nil, err
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("protoc %s: its descriptors: %w", file, err)
	}
	for _, f := range set.File {
		if f.GetName() != base && !strings.HasPrefix(f.GetName(), "google/protobuf/") {
			return nil, fmt.Errorf("%s imports %s: --proto takes a file that imports the well-known types (google/protobuf/...) only; generate the Go code of the others, and serve it with sdk.ProtoService by hand", file, f.GetName())
		}
	}
	req := &pluginpb.CodeGeneratorRequest{FileToGenerate: []string{base}, ProtoFile: set.File}
	if v, err := exec.Command(protoc, "--version").Output(); err == nil {
		req.CompilerVersion = parseProtocVersion(string(v))
	}
	return req, nil
}

var protocVersionRE = regexp.MustCompile(`(\d+)\.(\d+)(?:\.(\d+))?`)

// parseProtocVersion reads `protoc --version`: libprotoc 3.21.12.
func parseProtocVersion(s string) *pluginpb.Version {
	m := protocVersionRE.FindStringSubmatch(s)
	if m == nil {
		return nil
	}
	n := func(s string) *int32 {
		v, _ := strconv.Atoi(s)
		return proto.Int32(int32(v))
	}
	return &pluginpb.Version{Major: n(m[1]), Minor: n(m[2]), Patch: n(m[3])}
}

func protocVersion(req *pluginpb.CodeGeneratorRequest) string {
	v := req.GetCompilerVersion()
	if v == nil {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d", v.GetMajor(), v.GetMinor(), v.GetPatch())
}

// kindOf names the sdk function that serves a method of md's kind.
func kindOf(md protoreflect.MethodDescriptor) string {
	switch {
	case md.IsStreamingClient() && md.IsStreamingServer():
		return "BidiStream"
	case md.IsStreamingClient():
		return "ClientStream"
	case md.IsStreamingServer():
		return "ServerStream"
	}
	return "Unary"
}

// stringField is the Go name of a message's first plain string field, or
// "".
func stringField(m *protogen.Message) string {
	for _, f := range m.Fields {
		if f.Desc.Kind() == protoreflect.StringKind && f.Desc.Cardinality() != protoreflect.Repeated && f.Oneof == nil {
			return f.GoName
		}
	}
	return ""
}

// pbDoc is the doc.go of the generated package: how to generate it again.
func pbDoc(pf *protoFile, protoc string) []byte {
	by := "protoc-gen-go"
	if protoc != "" {
		by += " and protoc " + protoc
	}
	return fmt.Appendf(nil, `// Package %[2]s holds the messages of %[1]s, generated by %[4]s
// (dubbo new handler). To generate it again after a change to %[1]s,
// with protoc and protoc-gen-go at the version of google.golang.org/protobuf
// in go.mod on $PATH:
//
//	go install google.golang.org/protobuf/cmd/protoc-gen-go
//	go generate ./...
package %[2]s

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go_opt=M%[1]s=%[3]s;%[2]s %[1]s
`, pf.File, pf.Package, pf.Import, by)
}
