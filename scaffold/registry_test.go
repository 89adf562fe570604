package scaffold

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/dubbogo"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/registry/metadata"
	"github.com/dubbo-lab/dubbo/node/registry/zookeeper"
	"github.com/dubbo-lab/dubbo/plugins"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// startProvider starts a provider of app registered at zkAddr, exporting
// svc.
func startProvider(t *testing.T, zkAddr, app string, svc provider.Service) {
	t.Helper()
	cfg := provider.Config{Application: app, Registry: "zookeeper://" + zkAddr}
	cfg.Protocol.Host, cfg.Protocol.Port = "127.0.0.1", -1
	p, err := provider.Start(testCtx(t), cfg, provider.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if err := p.Export(testCtx(t), svc); err != nil {
		t.Fatal(err)
	}
}

func openRegistry(t *testing.T, zkAddr string) *zookeeper.Registry {
	t.Helper()
	reg, err := zookeeper.Open(testCtx(t), "zookeeper://"+zkAddr, 5*time.Second, zookeeper.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	return reg
}

// definitionOf reads the service definition app published for the
// service, as ZooKeeper holds it.
func definitionOf(t *testing.T, zkAddr, iface, version, app string) *metadata.ServiceDefinition {
	t.Helper()
	conn, _, err := zk.Connect([]string{zkAddr}, 5*time.Second, zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	path := metadata.ReportPath("/dubbo/metadata", iface, version, "", "provider", app)
	var data []byte
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if data, _, err = conn.Get(path); err == nil || time.Since(start) > 5*time.Second {
			break
		}
	}
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	def, err := metadata.ParseServiceDefinition(data)
	if err != nil {
		t.Fatal(err)
	}
	return def
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// signatures are a definition's methods: "name(params) return".
func signatures(def *metadata.ServiceDefinition) []string {
	var out []string
	for _, m := range def.Methods {
		out = append(out, m.Name+"("+strings.Join(m.ParameterTypes, ",")+") "+m.ReturnType)
	}
	slices.Sort(out)
	return out
}

// The handler of our own provider's Greeter, read from the registry, builds
// and passes its test, and served from a provider registers the same
// methods with the same Java signatures.
func TestFromOurProvider(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	startProvider(t, zkAddr, "greeter-java", providertest.Greeter(nil))
	e, err := ReadService(testCtx(t), openRegistry(t, zkAddr), providertest.GreeterInterface, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if e.Version != providertest.GreeterVersion || e.Definition == nil || len(e.Definition.Methods) != len(providertest.GreeterMethods) {
		t.Fatalf("read %+v", e)
	}
	res := written(t, Spec{Name: "greeter", Existing: e})
	builds(t, res)

	bin := filepath.Join(t.TempDir(), "greeter")
	goRun(t, res.Dir, "build", "-o", bin, ".")
	plugin, err := plugins.Start(testCtx(t), plugins.Config{Path: bin, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plugin.Close() })
	sd := plugin.Services()[0]
	svc := provider.Service{Interface: sd.Interface, Version: sd.Version, Group: sd.Group, Invoker: plugin}
	for _, m := range sd.Methods {
		svc.Methods = append(svc.Methods, provider.Method{Name: m.Name, ParamTypes: m.ParamTypes, ReturnType: m.ReturnType})
	}
	startProvider(t, zkAddr, "greeter-go", svc)

	java := definitionOf(t, zkAddr, providertest.GreeterInterface, providertest.GreeterVersion, "greeter-java")
	goDef := definitionOf(t, zkAddr, providertest.GreeterInterface, providertest.GreeterVersion, "greeter-go")
	if got, want := signatures(goDef), signatures(java); !reflect.DeepEqual(got, want) {
		t.Errorf("the Go handler registers\n%q\nthe original\n%q", got, want)
	}
}

// A stock dubbo-go provider publishes no service definition: the handler
// gets the method names its provider URL lists, builds and passes its test.
func TestFromDubboGo(t *testing.T) {
	if testing.Short() {
		t.Skip("dubbo-go peers skipped with -short")
	}
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	dubbogo.StartProvider(t, dubbogo.ProviderOptions{Registry: "zookeeper://" + zkAddr})
	e, err := ReadService(testCtx(t), openRegistry(t, zkAddr), providertest.GreeterInterface, "", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dubbo-go's provider gives %+v", e)
	if want := []string{"add", "echoMap", "fail", "sayHello", "sleep"}; e.Version != providertest.GreeterVersion || e.Definition != nil || !slices.Equal(e.Methods, want) {
		t.Fatalf("read %+v", e)
	}
	res := written(t, Spec{Name: "dggreeter", Existing: e})
	if out := builds(t, res); !strings.Contains(out, "--- PASS: TestSignatures") {
		t.Errorf("the module's test did not pass:\n%s", out)
	}
}
