package e2e

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/internal/testkit/child"
	"github.com/dubbo-lab/dubbo/node/registry/metadata"
)

// offlineGo is what the go command needs, in the environment, for the
// modules `dubbo new handler` writes: the module cache and the checkout's
// go.sum serve them.
var offlineGo = []string{"GOPROXY=off", "GOFLAGS=-mod=mod", "GOWORK=off"}

// offline is the test's environment with offlineGo.
func offline() []string { return append(child.Env(), offlineGo...) }

// newHandler runs `dubbo new handler args...` in dir as a user does, with
// the go command offline, and returns what it printed.
func newHandler(t *testing.T, dir string, args ...string) string {
	t.Helper()
	line := strconv.Quote(binary("dubbo")) + " new handler"
	for _, a := range args {
		line += " " + strconv.Quote(a)
	}
	out, err := shell(dir, offline(), line)
	if err != nil {
		t.Fatalf("dubbo new handler %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TestNewHandler follows what `dubbo new handler hello` prints: the module
// it writes passes its own test, builds, and served by `dubbo up` answers
// `dubbo call`.
func TestNewHandler(t *testing.T) {
	dir := t.TempDir()
	out := newHandler(t, dir, "hello")
	for _, want := range []string{"wrote hello/", "serving com.example.Hello", "replaces github.com/dubbo-lab/dubbo with the checkout at",
		"cd hello && go test ./... && go build", `plugins = ["hello/hello"]`} {
		if !strings.Contains(out, want) {
			t.Errorf("dubbo new handler hello printed no %q:\n%s", want, out)
		}
	}
	if out, err := shell(filepath.Join(dir, "hello"), offline(), "go test ./... && go build"); err != nil {
		t.Fatalf("go test && go build: %v\n%s", err, out)
	}
	// A second time refuses to overwrite it.
	if r := dubbo(t, dir, "new", "handler", "hello"); r.code != 2 || !strings.Contains(r.stderr, "already exists") {
		t.Errorf("dubbo new handler hello again: exit %d, %s", r.code, r.stderr)
	}

	p := freePorts(t, 1)
	cfg := writeConfig(t, dir, p, setup{})
	up := startNode(t, "dubbo up", dir, "up", "-c", cfg, "--set", "provider.plugins=hello/hello")
	var got result
	if _, ok := waitFor(20*time.Second, func() bool {
		got = dubbo(t, dir, "call", "--registry", p.registryURL(), "com.example.Hello", "sayHello", `"world"`)
		return got.code == 0 || up.exited()
	}); !ok || strings.TrimSpace(got.stdout) != `"Hello, world"` {
		t.Fatalf("dubbo call com.example.Hello sayHello: exit %d, %q %s", got.code, got.stdout, got.stderr)
	}
	if code := up.stop(t); code != 0 {
		t.Errorf("dubbo up exited %d", code)
	}
}

// TestNewHandlerFromRegistry writes the handler of the example Greeter
// that `dubbo up` serves (examples/greeter) from the registry's metadata:
// it passes its own test, and served by a provider of another application
// it registers the same methods with the same Java signatures.
func TestNewHandlerFromRegistry(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 1)
	cfg := writeConfig(t, dir, p, setup{providerPlugins: []string{"greeter"}})
	up := startNode(t, "dubbo up", dir, "up", "-c", cfg)
	waitServing(t, dir, p, 1)

	out := newHandler(t, dir, "gogreeter", "--from-registry", "org.example.Greeter", "--registry", p.registryURL())
	if !strings.Contains(out, "serving org.example.Greeter:1.0.0") {
		t.Errorf("dubbo new handler --from-registry printed:\n%s", out)
	}
	if out, err := shell(filepath.Join(dir, "gogreeter"), offline(), "go test ./... && go build"); err != nil {
		t.Fatalf("go test && go build: %v\n%s", err, out)
	}

	// A provider of another application beside dubbo up's, serving it.
	goDir := t.TempDir()
	p2 := freePorts(t, 1)
	p2.registry = p.registry
	cfg2 := writeConfig(t, goDir, p2, setup{})
	replaceInFile(t, cfg2, `name = "e2e"`, `name = "e2e-go"`)
	provider := startNode(t, "dubbo run --role=provider", goDir, "run", "--role=provider", "-c", cfg2,
		"--set", "provider.plugins="+filepath.Join(dir, "gogreeter", "gogreeter"))

	java := definition(t, p, "e2e")
	goDef := definition(t, p, "e2e-go")
	if got, want := methodSignatures(goDef), methodSignatures(java); !reflect.DeepEqual(got, want) || len(got) != 5 {
		t.Errorf("the Go handler registers\n%q\nexamples/greeter\n%q", got, want)
	}
	// Its methods answer that they are not written yet.
	r := dubbo(t, dir, "call", "--url", "dubbo://"+p2.providerAddr(0), "--version", "1.0.0", "org.example.Greeter", "add", "1", "2")
	if r.code != 1 || !strings.Contains(r.stderr, "java.lang.UnsupportedOperationException") {
		t.Errorf("add on the Go handler: exit %d, %s", r.code, r.stderr)
	}
	for _, n := range []*node{provider, up} {
		if code := n.stop(t); code != 0 {
			t.Errorf("%s exited %d", n.name, code)
		}
	}
}

func replaceInFile(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q", path, old)
	}
	writeFile(t, path, strings.Replace(string(b), old, new, 1))
}

// definition reads the definition of org.example.Greeter:1.0.0 that the
// providers of app published, waiting for it.
func definition(t *testing.T, p ports, app string) *metadata.ServiceDefinition {
	t.Helper()
	conn, _, err := zk.Connect([]string{"127.0.0.1:" + strconv.Itoa(p.registry)}, 5*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	path := metadata.ReportPath("/dubbo/metadata", "org.example.Greeter", "1.0.0", "", "provider", app)
	var data []byte
	if _, ok := waitFor(20*time.Second, func() bool {
		data, _, err = conn.Get(path)
		return err == nil
	}); !ok {
		t.Fatalf("get %s: %v", path, err)
	}
	def, err := metadata.ParseServiceDefinition(data)
	if err != nil {
		t.Fatal(err)
	}
	return def
}

type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

// methodSignatures are a definition's methods: "name(params) return".
func methodSignatures(def *metadata.ServiceDefinition) []string {
	var out []string
	for _, m := range def.Methods {
		out = append(out, m.Name+"("+strings.Join(m.ParameterTypes, ",")+") "+m.ReturnType)
	}
	slices.Sort(out)
	return out
}
