// Package scaffold writes the module of a new handler plugin, what `dubbo
// new handler NAME` makes in ./NAME: a go.mod that requires this module
// (Module says how: at a release, or replaced by a checkout), a main.go
// that serves the handler with sdk.Serve, a main_test.go that calls it
// through package sdktest, and a README.md with the line to add to
// dubbo.toml. Three kinds of handler (Spec):
//
//   - a Dubbo service (the default): one example method, sayHello;
//   - a protobuf service (Spec.Proto, a .proto file): its Go code is
//     generated with protoc and protoc-gen-go's generator, and every method
//     of every service of the file is served by a stub that answers
//     Unimplemented, except the first unary one, which greets (proto.go);
//   - an existing service (Spec.Existing, read from the registry's metadata
//     by ReadService): its methods with their Java signatures, Go structs
//     for its POJOs, each method answering UnsupportedOperationException
//     until it is written (existing.go, javatypes.go).
//
// Write writes the files and Tidy completes go.mod and go.sum with the go
// command; the module then builds and passes its own test.
package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"go/format"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
	"unicode"
)

// Spec says what handler to write.
type Spec struct {
	// Name is the new module's directory, module path and binary name: a
	// lower-case Go identifier. Required.
	Name string
	// Interface is the Java interface a Dubbo handler serves. Default
	// com.example.<Name in UpperCamel case>, or Existing's.
	Interface string
	// Version and Group of the service. Default none.
	Version, Group string
	// Proto is the path of a .proto file: the handler serves its services.
	// Default none.
	Proto string
	// Existing is the service the handler stands in for, as the registry
	// describes it (ReadService). Default none.
	Existing *Existing
}

// Result is what Write wrote.
type Result struct {
	// Dir is the module's directory.
	Dir string
	// Files are the files written, relative to Dir.
	Files []string
	// Service is the key of the service the handler serves (or the
	// protobuf services', comma-separated).
	Service string
	// Notes say what the user should know: methods left out, types not
	// mapped, how go.mod requires this module.
	Notes []string
}

// PluginPath is the path of the plugin binary that `go build` makes in the
// module, relative to the module's parent directory: what the provider's
// plugins list in dubbo.toml names.
func (s Spec) PluginPath() string { return s.Name + "/" + s.Name }

var (
	validName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	javaName  = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*(\.[A-Za-z_$][A-Za-z0-9_$]*)*$`)
	// reserved names are valid identifiers that make poor module paths or
	// binaries: the go command's own patterns and the main package's name.
	reserved = map[string]bool{"main": true, "std": true, "cmd": true, "all": true, "tool": true,
		"internal": true, "vendor": true, "testdata": true}
)

// checkName says what is wrong with a handler's name, if anything.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("the handler needs a name, e.g. hello")
	case !validName.MatchString(name):
		return fmt.Errorf("%q is not a valid name: use lower-case letters, digits and underscores, starting with a letter (it names the directory, the Go module and the binary)", name)
	case token.IsKeyword(name) || reserved[name]:
		return fmt.Errorf("%q is reserved in Go: pick another name", name)
	}
	return nil
}

// Write writes the module of spec into dir/spec.Name, which must not
// exist, requiring this module as mod says. Nothing is left behind when it
// fails.
func Write(dir string, spec Spec, mod Module) (res *Result, err error) {
	if err := checkName(spec.Name); err != nil {
		return nil, err
	}
	if spec.Proto != "" && spec.Existing != nil {
		return nil, errors.New("give a .proto file or an existing service, not both")
	}
	if spec.Interface != "" && !javaName.MatchString(spec.Interface) {
		return nil, fmt.Errorf("interface %q is not a Java class name such as com.example.Hello", spec.Interface)
	}
	moduleDir := filepath.Join(dir, spec.Name)
	files, res, err := render(spec, mod.relativeTo(moduleDir))
	if err != nil {
		return nil, err
	}
	res.Dir = moduleDir
	if _, err := os.Lstat(res.Dir); err == nil {
		return nil, fmt.Errorf("%s already exists: pick another name, or remove it first", res.Dir)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err := os.Mkdir(res.Dir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(res.Dir)
		}
	}()
	for _, f := range files {
		path := filepath.Join(res.Dir, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, f.data, 0o644); err != nil {
			return nil, err
		}
		res.Files = append(res.Files, f.name)
	}
	return res, nil
}

// file is one file of the module.
type file struct {
	name string // slash-separated, relative to the module
	data []byte
}

// render makes the module's files.
func render(spec Spec, mod Module) ([]file, *Result, error) {
	res := &Result{}
	var h *handler
	var err error
	switch {
	case spec.Proto != "":
		h, err = protoHandler(spec)
	case spec.Existing != nil:
		h, err = existingHandler(spec)
	default:
		h = exampleHandler(spec)
	}
	if err != nil {
		return nil, nil, err
	}
	res.Service, res.Notes = h.Service, h.Notes
	goMod, note := mod.goMod(spec.Name)
	res.Notes = append(res.Notes, note)
	files := []file{{"go.mod", goMod}}
	if len(mod.GoSum) > 0 {
		files = append(files, file{"go.sum", mod.GoSum})
	}
	files = append(files, h.extra...)
	for _, t := range []struct{ name, tmpl string }{
		{"main.go", h.kind + "_main.go.tmpl"},
		{"main_test.go", h.kind + "_test.go.tmpl"},
		{"README.md", "README.md.tmpl"},
	} {
		b, err := execute(t.tmpl, h)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, file{t.name, b})
	}
	return files, res, nil
}

// handler is what the templates fill in.
type handler struct {
	kind string // the templates': example, proto or existing

	Name      string // the module's
	Plugin    string // the plugin binary's path, Spec.PluginPath
	Service   string // the key of what it serves, for people
	Interface string // the Java interface (example, existing)
	Version   string
	Group     string
	Type      string // the Go type of the handler (example, existing)

	Proto    *protoFile    // proto
	Existing *existingCode // existing

	// A command that calls it, for the README.
	CallExample string

	Notes []string
	extra []file // more files: generated protobuf code
}

// exampleHandler is the default: a Dubbo service with one method.
func exampleHandler(spec Spec) *handler {
	iface := spec.Interface
	if iface == "" {
		iface = "com.example." + upperCamel(spec.Name)
	}
	h := newHandler("example", spec, iface)
	h.CallExample = "dubbo call" + versionFlags(spec) + " " + iface + ` sayHello '"world"'`
	return h
}

func newHandler(kind string, spec Spec, iface string) *handler {
	return &handler{kind: kind, Name: spec.Name, Plugin: spec.PluginPath(), Interface: iface,
		Service: serviceKey(iface, spec.Version, spec.Group), Version: spec.Version, Group: spec.Group,
		Type: typeName(iface)}
}

func versionFlags(spec Spec) string {
	var s string
	if spec.Version != "" {
		s += " --version " + spec.Version
	}
	if spec.Group != "" {
		s += " --group " + spec.Group
	}
	return s
}

// serviceKey is Dubbo's [group/]interface[:version], for people.
func serviceKey(iface, version, group string) string {
	k := iface
	if group != "" {
		k = group + "/" + k
	}
	if version != "" {
		k += ":" + version
	}
	return k
}

// typeName is the Go type of a handler of a Java interface: its simple
// name (Greeter for org.example.Greeter).
func typeName(iface string) string {
	name := iface[strings.LastIndexByte(iface, '.')+1:]
	return exported(strings.ReplaceAll(name, "$", "_"))
}

// upperCamel turns a name with underscores into a Go or Java type name:
// order_service → OrderService.
func upperCamel(s string) string {
	var b strings.Builder
	for _, part := range strings.Split(s, "_") {
		b.WriteString(exported(part))
	}
	return b.String()
}

// exported is s with its first letter upper-case.
func exported(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

//go:embed templates
var templates embed.FS

var tmpl = template.Must(template.New("").Funcs(template.FuncMap{
	"quote": func(s string) string { return fmt.Sprintf("%q", s) },
	"join":  strings.Join,
}).Option("missingkey=error").ParseFS(templates, "templates/*.tmpl"))

// execute fills the template name with h; Go files come out gofmt'ed.
func execute(name string, h *handler) ([]byte, error) {
	var buf bytes.Buffer
	if err := tmpl.ExecuteTemplate(&buf, name, h); err != nil {
		return nil, fmt.Errorf("template %s: %w", name, err)
	}
	if !strings.Contains(name, ".go.") {
		return buf.Bytes(), nil
	}
	b, err := format.Source(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("template %s makes Go that does not parse: %w\n%s", name, err, buf.Bytes())
	}
	return b, nil
}
