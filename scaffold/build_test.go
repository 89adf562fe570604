package scaffold

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/need"
	"github.com/dubbo-lab/dubbo/node/registry/metadata"
)

// offline is the go command's environment for building a written module
// from the module cache alone: this module's dependencies are there (it
// was built), and the checkout's go.sum has their hashes.
var offline = []string{"GOPROXY=off", "GOFLAGS=-mod=mod", "GOWORK=off"}

// written writes spec into a temporary directory, requiring this checkout,
// and tidies the module offline.
func written(t *testing.T, spec Spec) *Result {
	t.Helper()
	mod, err := Running(".", nil)
	if err != nil {
		t.Fatal(err)
	}
	if mod.Replace == "" || len(mod.GoSum) == 0 {
		t.Fatalf("a test binary requires this checkout: %+v", mod)
	}
	res, err := Write(t.TempDir(), spec, mod)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := Tidy(ctx, res.Dir, offline...); err != nil {
		t.Fatal(err)
	}
	return res
}

// goRun runs the go command in dir, offline, and returns its output.
func goRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), offline...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// builds checks that a written module is gofmt-clean, vets, and passes
// its own tests, which it runs verbosely; it returns their output.
func builds(t *testing.T, res *Result) string {
	t.Helper()
	if out, err := exec.Command("gofmt", "-l", res.Dir).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("gofmt -l: %s %v", out, err)
	}
	goRun(t, res.Dir, "vet", "./...")
	return goRun(t, res.Dir, "test", "-count=1", "-v", "./...")
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestExampleBuilds(t *testing.T) {
	res := written(t, Spec{Name: "hello", Version: "1.0.0"})
	out := builds(t, res)
	if !strings.Contains(out, "--- PASS: TestSayHello") {
		t.Errorf("the module's test did not run:\n%s", out)
	}
	main := readFile(t, filepath.Join(res.Dir, "main.go"))
	for _, want := range []string{`Interface: "com.example.Hello"`, `Version:   "1.0.0"`, "func (Hello) SayHello("} {
		if !strings.Contains(main, want) {
			t.Errorf("main.go lacks %q:\n%s", want, main)
		}
	}
	readme := readFile(t, filepath.Join(res.Dir, "README.md"))
	if !strings.Contains(readme, `plugins = ["hello/hello"]`) || !strings.Contains(readme, `dubbo call --version 1.0.0 com.example.Hello sayHello '"world"'`) {
		t.Errorf("README.md:\n%s", readme)
	}
	goRun(t, res.Dir, "build", "-o", filepath.Join(t.TempDir(), "hello"), ".")
}

// shop is a service definition as Java's Dubbo 3 publishes one, with the
// types a handler meets: boxes, lists and maps with type arguments, nested
// POJOs, arrays, an enum, a JDK class without a Go type, a Date, an
// overload, a method whose name the SDK cannot serve.
var shop = &metadata.ServiceDefinition{
	CanonicalName: "com.example.shop.OrderService",
	Methods: []metadata.MethodDefinition{
		{Name: "place", ParameterTypes: []string{"com.example.shop.Order", "java.lang.Integer"}, ReturnType: "java.lang.Long"},
		{Name: "find", ParameterTypes: []string{"long"}, ReturnType: "com.example.shop.Order"},
		{Name: "list", ParameterTypes: []string{"java.util.List<java.lang.Long>", "java.util.Date"}, ReturnType: "java.util.List<com.example.shop.Order>"},
		{Name: "counts", ParameterTypes: []string{"java.util.Map<java.lang.String,java.lang.Integer>"}, ReturnType: "java.util.HashMap<java.lang.String,com.example.shop.Item>"},
		{Name: "codes", ParameterTypes: []string{"int[]", "char"}, ReturnType: "byte[]"},
		{Name: "price", ParameterTypes: []string{"com.example.shop.Order", "com.example.shop.Status"}, ReturnType: "java.math.BigDecimal"},
		{Name: "cancel", ParameterTypes: []string{"long", "java.lang.String"}, ReturnType: "void"},
		{Name: "cancel", ParameterTypes: []string{"long"}, ReturnType: "void"},
		{Name: "ping", ParameterTypes: []string{}, ReturnType: "boolean"},
		{Name: "Legacy", ParameterTypes: []string{}, ReturnType: "void"},
	},
	Types: []metadata.TypeDefinition{
		{Type: "com.example.shop.Order", Properties: map[string]string{
			"id": "long", "items": "java.util.List<com.example.shop.Item>", "note": "java.lang.String",
			"status": "com.example.shop.Status", "created": "java.util.Date", "tags": "java.util.Set<java.lang.String>",
			"parent": "com.example.shop.Order", "total": "java.math.BigDecimal", "extra": "java.util.Map<java.lang.String,java.lang.Object>"}},
		{Type: "com.example.shop.Item", Properties: map[string]string{"sku": "java.lang.String", "count": "int", "price": "java.lang.Double"}},
		{Type: "com.example.shop.Status", Enums: []string{"NEW", "PAID"}},
		{Type: "java.util.List<com.example.shop.Item>", Items: []string{"com.example.shop.Item"}},
	},
}

func TestExistingBuilds(t *testing.T) {
	res := written(t, Spec{Name: "shop", Existing: &Existing{Interface: "com.example.shop.OrderService", Version: "2.0.0", Definition: shop}})
	out := builds(t, res)
	for _, want := range []string{"--- PASS: TestSignatures", "--- PASS: TestMethods"} {
		if !strings.Contains(out, want) {
			t.Errorf("the module's test %s did not pass:\n%s", want, out)
		}
	}
	main := readFile(t, filepath.Join(res.Dir, "main.go"))
	for _, want := range []string{
		"func (OrderService) Place(ctx context.Context, arg0 *Order, arg1 *int32) (*int64, error)",
		"func (OrderService) List(ctx context.Context, arg0 []*int64, arg1 time.Time) ([]*Order, error)",
		"func (OrderService) Counts(ctx context.Context, arg0 map[string]*int32) (map[string]*Item, error)",
		"func (OrderService) Codes(ctx context.Context, arg0 []int32, arg1 string) ([]byte, error)",
		"arg1 any /* com.example.shop.Status (an enum: NEW, PAID) */) (any, error)",
		"func (OrderService) Cancel(ctx context.Context, arg0 int64, arg1 string) error",
		"Items   []*Item        `hessian:\"items\"`",
		"Parent  *Order         `hessian:\"parent\"`",
		"Total   any            `hessian:\"total\"` // java.math.BigDecimal: no Go type for it",
		`func (Order) JavaClassName() string { return "com.example.shop.Order" }`,
		`"codes":  {Params: []string{"int[]", "char"}, Returns: "byte[]"},`,
	} {
		if !strings.Contains(main, want) {
			t.Errorf("main.go lacks %q:\n%s", want, main)
		}
	}
	for _, want := range []string{"cancel(long) is left out", "method Legacy is left out", "price: its result is a java.math.BigDecimal"} {
		if !strings.Contains(strings.Join(res.Notes, "\n"), want) {
			t.Errorf("notes lack %q: %q", want, res.Notes)
		}
	}
}

// A service known by its method names only (a dubbo-go provider's) gives
// a handler of those names that builds and passes its test.
func TestUntypedBuilds(t *testing.T) {
	res := written(t, Spec{Name: "names", Existing: &Existing{Interface: "org.example.Greeter", Version: "1.0.0", Methods: []string{"add", "sayHello"}}})
	out := builds(t, res)
	if !strings.Contains(out, "--- PASS: TestSignatures") {
		t.Errorf("the module's test did not pass:\n%s", out)
	}
	if main := readFile(t, filepath.Join(res.Dir, "main.go")); !strings.Contains(main, "func (Greeter) SayHello(ctx context.Context) (any, error)") {
		t.Errorf("main.go:\n%s", main)
	}
}

func TestProtoBuilds(t *testing.T) {
	needProtoc(t)
	res := written(t, Spec{Name: "greeting", Proto: filepath.Join("..", "examples", "greet", "greetpb", "greet.proto"), Version: "1.0.0"})
	out := builds(t, res)
	if !strings.Contains(out, "--- PASS: TestGreet") {
		t.Errorf("the module's test did not pass:\n%s", out)
	}
	main := readFile(t, filepath.Join(res.Dir, "main.go"))
	for _, want := range []string{
		`return &greetingpb.GreetResponse{Greeting: "Hello, " + req.Name}, nil`,
		"func (GreetService) GreetServerStream(req *greetingpb.GreetStreamRequest, out sdk.Sender[*greetingpb.GreetResponse]) error",
		`sdk.BidiStream("GreetStream", GreetService{}.GreetStream),`,
		`Version: "1.0.0",`,
	} {
		if !strings.Contains(main, want) {
			t.Errorf("main.go lacks %q:\n%s", want, main)
		}
	}
	if res.Service != "greet.GreetService:1.0.0" {
		t.Errorf("serves %s", res.Service)
	}
}

// A file of streaming methods only, on the well-known types: the test
// probes the first, which answers Unimplemented.
func TestProtoStreamsBuild(t *testing.T) {
	needProtoc(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "clock.proto"), `syntax = "proto3";
package demo.v1;
import "google/protobuf/empty.proto";
import "google/protobuf/timestamp.proto";
message Tick { google.protobuf.Timestamp at = 1; int64 n = 2; }
service Clock {
  rpc Ticks(google.protobuf.Empty) returns (stream Tick);
  rpc Collect(stream Tick) returns (google.protobuf.Empty);
}
`)
	res := written(t, Spec{Name: "clock", Proto: filepath.Join(dir, "clock.proto")})
	if out := builds(t, res); !strings.Contains(out, "--- PASS: TestTicks") {
		t.Errorf("the module's test did not pass:\n%s", out)
	}
}

func TestProtoRefuses(t *testing.T) {
	needProtoc(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "other.proto"), "syntax = \"proto3\";\npackage o;\nmessage M { string s = 1; }\n")
	writeFile(t, filepath.Join(dir, "imports.proto"), "syntax = \"proto3\";\npackage p;\nimport \"other.proto\";\nservice S { rpc Do(o.M) returns (o.M); }\n")
	writeFile(t, filepath.Join(dir, "bad.proto"), "syntax = \"proto3\";\nmessage {\n")
	tests := []struct {
		spec Spec
		want string
	}{
		{Spec{Name: "x", Proto: filepath.Join(dir, "imports.proto")}, "imports other.proto: --proto takes a file that imports the well-known types"},
		{Spec{Name: "x", Proto: filepath.Join(dir, "other.proto")}, "defines no service"},
		{Spec{Name: "x", Proto: filepath.Join(dir, "bad.proto")}, "protoc "},
		{Spec{Name: "x", Proto: filepath.Join(dir, "missing.proto")}, "no such file"},
		{Spec{Name: "x", Proto: filepath.Join(dir, "other.proto"), Interface: "a.B"}, "not both"},
	}
	out := t.TempDir()
	for _, tt := range tests {
		_, err := Write(out, tt.spec, Module{Version: "v1.0.0", GoVersion: "1.26"})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", filepath.Base(tt.spec.Proto), err, tt.want)
		}
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("refused handlers left %v", entries)
	}
}

// needProtoc skips a test without protoc, or fails it on CI.
func needProtoc(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("protoc"); err != nil {
		need.Missing(t, "protoc is not installed (apt-get install protobuf-compiler)")
	}
}
