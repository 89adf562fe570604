package roles

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/dubbo-lab/dubbo/config"
	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/examples/greet/greetpb"
	"github.com/dubbo-lab/dubbo/internal/testkit/child"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/internal/testkit/syncbuf"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/rpc"
	tripleclient "github.com/dubbo-lab/dubbo/node/triple/client"
	"github.com/dubbo-lab/dubbo/plugins"
	"github.com/dubbo-lab/dubbo/plugins/sdk"
)

// The test binary is also the provider plugin: started with pluginEnv set,
// TestMain serves org.example.Greeter instead of running tests. It writes
// its PID to the file named by pidFileEnv, and refuses to start while the
// file named by downEnv exists, so a test can keep it down.
const (
	pluginEnv  = "DUBBO_ROLES_TEST_PLUGIN"
	pidFileEnv = "DUBBO_ROLES_TEST_PIDFILE"
	downEnv    = "DUBBO_ROLES_TEST_DOWN"
	// byeEnv set makes the plugin serve sayBye too: a new build with
	// another method.
	byeEnv = "DUBBO_ROLES_TEST_BYE"
)

func TestMain(m *testing.M) {
	if os.Getenv(pluginEnv) == "" {
		os.Exit(m.Run())
	}
	if _, err := os.Stat(os.Getenv(downEnv)); err == nil {
		fmt.Fprintln(os.Stderr, "plugin: asked to stay down")
		os.Exit(1)
	}
	if err := os.WriteFile(os.Getenv(pidFileEnv), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "plugin:", err)
		os.Exit(1)
	}
	var handler any = greeter{}
	if os.Getenv(byeEnv) != "" {
		handler = greeterBye{}
	}
	if err := sdk.Serve(sdk.Service{Interface: providertest.GreeterInterface, Version: providertest.GreeterVersion, Handler: handler}); err != nil {
		fmt.Fprintln(os.Stderr, "plugin:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

type greeter struct{}

func (greeter) SayHello(_ context.Context, name string) (string, error) { return "Hello, " + name, nil }

type greeterBye struct{ greeter }

func (greeterBye) SayBye(_ context.Context, name string) (string, error) { return "Bye, " + name, nil }

const greeterProviders = "/dubbo/" + providertest.GreeterInterface + "/providers"

func TestUp(t *testing.T) {
	off := false
	tests := []struct {
		name string
		edit func(f *config.File)
		want []string
	}{
		{"registry and monitor only", func(*config.File) {}, []string{Registry, Monitor}},
		{"plugins make a provider", func(f *config.File) { f.Provider.Plugins = []string{"p"} }, []string{Registry, Monitor, Provider}},
		{"references make a consumer", func(f *config.File) { f.Consumer.References = make([]consumer.ReferenceConfig, 1) }, []string{Registry, Monitor, Consumer}},
		{"consumer plugins make a consumer", func(f *config.File) { f.Consumer.Plugins = []string{"c"} }, []string{Registry, Monitor, Consumer}},
		{"no embedded registry", func(f *config.File) { f.Registry.Server.Listen = "" }, []string{Monitor}},
		{"no monitor", func(f *config.File) { f.Monitor.Enabled = &off }, []string{Registry}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := loadConfig(t, "")
			tt.edit(f)
			if got := Up(f); !slices.Equal(got, tt.want) {
				t.Errorf("Up = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestStopLastStartedFirst: the node stops what it started in reverse, each
// step with the stop context, every step even when one fails, and once.
func TestStopLastStartedFirst(t *testing.T) {
	n := &node{log: slog.New(slog.DiscardHandler)}
	var order []string
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "stop")
	for _, name := range []string{"qos", "registry", "consumer", "monitor", "provider"} {
		n.onStop(name, func(c context.Context) error {
			if c.Value(key{}) != "stop" {
				t.Errorf("%s stopped without the stop context", name)
			}
			order = append(order, name)
			if name == "monitor" {
				return errors.New("monitor would not stop")
			}
			return nil
		})
	}
	n.stop(ctx)
	n.stop(ctx)
	if want := []string{"provider", "monitor", "consumer", "registry", "qos"}; !slices.Equal(order, want) {
		t.Errorf("stop order %v, want %v", order, want)
	}
}

// TestRunStopOrder runs the monitor, a provider (the test binary as its
// plugin) and the consumer with its gateway in one process, as dubbo up
// does, and reads the order they stop in from the debug log: the calls'
// entry points first, then the statistics' last report while the monitor
// is up, then the monitor, its store, and last the node's consumer that the
// report went through.
func TestRunStopOrder(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(pluginEnv, "1")
	t.Setenv(pidFileEnv, filepath.Join(dir, "plugin.pid"))
	t.Setenv(downEnv, filepath.Join(dir, "down"))
	cfg := loadConfig(t, fmt.Sprintf(`
registry.address = %q
protocol.host = "127.0.0.1"
protocol.port = -1
provider.plugins = [%q]
consumer.gateway.listen = "127.0.0.1:0"
monitor.server.port = -1
console.listen = ""
`, "zookeeper://"+zkAddr, self))

	var logs syncbuf.Buffer
	_, stop := startRun(t, cfg, []string{Monitor, Provider, Consumer},
		slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	stop()
	var order []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if _, what, ok := strings.Cut(line, "msg=stopped what="); ok {
			order = append(order, strings.Trim(what, `"`))
		}
	}
	want := []string{"gateway", "provider 1", "statistics reporter", "monitor", "monitor store", "node consumer"}
	if !slices.Equal(order, want) {
		t.Errorf("stopped in the order %q, want %q\nlog:\n%s", order, want, logs.String())
	}
}

// TestConsumerMadeOnFirstNeed: a provider plugin's call to another service
// connects the node's consumer then, not before; once the node closes it,
// calls fail, and a node that had made none makes none any more.
func TestConsumerMadeOnFirstNeed(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	cfg := loadConfig(t, fmt.Sprintf("registry.address = %q\n", "zookeeper://"+zkAddr))
	ctx := testCtx(t)
	p, err := provider.Start(ctx, provider.Config{Application: "greeter-app", Registry: "zookeeper://" + zkAddr,
		Protocol: provider.ProtocolConfig{Host: "127.0.0.1", Port: -1}}, provider.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	if err := p.Export(ctx, providertest.Greeter(nil)); err != nil {
		t.Fatal(err)
	}

	n := newTestNode(t, cfg)
	host := n.hostInvoker(ctx, cfg)
	if n.made.Load() != nil {
		t.Fatal("the consumer was made before anything needed it")
	}
	res, err := host.Invoke(ctx, sayHello("lazy"))
	if err != nil {
		t.Fatalf("first call through the node: %v", err)
	}
	if res.Value != "Hello, lazy" {
		t.Errorf("first call answered %v", res.Value)
	}
	if n.made.Load() == nil {
		t.Error("the call did not make the consumer")
	}
	if err := n.closeConsumer(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := host.Invoke(ctx, sayHello("late")); err == nil {
		t.Error("a call through the closed consumer succeeded")
	}

	// A node that needed no consumer makes none, even when asked after it
	// stopped.
	idle := newTestNode(t, cfg)
	if err := idle.closeConsumer(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := idle.hostInvoker(ctx, cfg).Invoke(ctx, sayHello("late")); !errors.Is(err, rpc.ErrNoProvider) || !strings.Contains(err.Error(), "stopping") {
		t.Errorf("call to a stopped node: %v, want no_provider (stopping)", err)
	}
	if idle.made.Load() != nil {
		t.Error("a stopped node made a consumer")
	}
}

// TestPluginExportsFollowPlugin: a plugin's services are in the registry
// while it is up and out while it is down; a service the provider refuses
// does not keep the others out; when the node is stopping, down leaves the
// unregistering to the provider's Shutdown.
func TestPluginExportsFollowPlugin(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	ctx := testCtx(t)
	p, err := provider.Start(ctx, provider.Config{Application: "greeter-app", Registry: "zookeeper://" + zkAddr,
		Protocol: provider.ProtocolConfig{Host: "127.0.0.1", Port: -1}}, provider.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	zc := zkConn(t, zkAddr)

	runCtx, stopNode := context.WithCancel(ctx)
	defer stopNode()
	ex := &pluginExports{ctx: runCtx, p: p, log: slog.New(slog.DiscardHandler), plugin: "greeter"}
	greeterDesc := plugins.ServiceDesc{Interface: providertest.GreeterInterface, Version: providertest.GreeterVersion,
		Methods: []plugins.MethodDesc{{Name: "sayHello", ParamTypes: []string{"java.lang.String"}, ReturnType: "java.lang.String"}}}
	refused := plugins.ServiceDesc{} // no interface: the provider refuses it
	// A protobuf service goes over tri only, which this provider does not
	// serve: it is refused too.
	greet := plugins.ServiceDesc{Interface: "greet.GreetService", Methods: []plugins.MethodDesc{{Name: "Greet"}},
		Proto: greetpb.File_greet_proto.Services().Get(0)}
	inv := answering{}

	for round := 1; round <= 2; round++ {
		ex.up([]plugins.ServiceDesc{refused, greet, greeterDesc}, inv)
		waitChildren(t, zc, greeterProviders, 1, fmt.Sprintf("registered while the plugin is up (round %d)", round))
		if got := p.Services(); len(got) != 1 {
			t.Errorf("provider exports %d services, want the Dubbo one only: %+v", len(got), got)
		}
		ex.down(errors.New("killed"))
		waitChildren(t, zc, greeterProviders, 0, fmt.Sprintf("unregistered while the plugin is down (round %d)", round))
		if got := p.Services(); len(got) != 0 {
			t.Errorf("provider still exports %+v while the plugin is down", got)
		}
	}

	ex.up([]plugins.ServiceDesc{greeterDesc}, inv)
	waitChildren(t, zc, greeterProviders, 1, "registered again")
	stopNode()
	ex.down(context.Canceled)
	if got := p.Services(); len(got) != 1 {
		t.Errorf("a stopping node's plugin going down unexported its services: %+v", got)
	}
}

// TestRunProviderPlugin runs the provider role as dubbo run does, with the
// test binary as its plugin: the plugin's service is registered, taken out
// while the plugin is killed and kept down, registered again when it is
// back; when the run ends, the plugin process is gone and so is the
// registration.
func TestRunProviderPlugin(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pidFile, downFile := filepath.Join(dir, "plugin.pid"), filepath.Join(dir, "down")
	t.Setenv(pluginEnv, "1") // the plugin processes inherit the test's environment
	t.Setenv(pidFileEnv, pidFile)
	t.Setenv(downEnv, downFile)
	cfg := loadConfig(t, fmt.Sprintf(`
registry.address = %q
protocol.host = "127.0.0.1"
protocol.port = -1
provider.plugins = [%q]
monitor.enabled = false
`, "zookeeper://"+zkAddr, self))

	_, stop := startRun(t, cfg, []string{Provider}, slog.New(slog.DiscardHandler))
	zc := zkConn(t, zkAddr)
	waitChildren(t, zc, greeterProviders, 1, "registered once the plugin is up")

	first := readPid(t, pidFile)
	if err := os.WriteFile(downFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitChildren(t, zc, greeterProviders, 0, "unregistered while the plugin is down")
	if err := os.Remove(downFile); err != nil {
		t.Fatal(err)
	}
	waitChildren(t, zc, greeterProviders, 1, "registered again once the plugin is back")
	second := readPid(t, pidFile)
	if second == first {
		t.Fatalf("the plugin's pid did not change (%d)", first)
	}

	stop()
	if err := syscall.Kill(second, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("plugin process %d outlived the node (kill 0: %v)", second, err)
	}
	if kids, _, err := zc.Children(greeterProviders); err != nil || len(kids) != 0 {
		t.Errorf("after the node stopped: providers %v (%v)", kids, err)
	}
}

// loadConfig loads dubbo.toml text as the command line does, with the QoS
// port off and the data (registry cache file, monitor db) in a temporary
// directory, not in the source tree.
func loadConfig(t *testing.T, toml string) *config.File {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "dubbo.toml")
	toml = fmt.Sprintf("data-dir = %q\nqos.listen = \"\"\n", dir) + toml
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startRun runs roles as the command line does, until the ready line;
// stop ends it and waits (30 s at most) for Run to return, which must be
// without an error. out is what Run printed.
func startRun(t *testing.T, cfg *config.File, roles []string, log *slog.Logger) (out *syncbuf.Buffer, stop func()) {
	t.Helper()
	return startRunWith(t, cfg, roles, Options{Logger: log})
}

// startRunWith is startRun with more options.
func startRunWith(t *testing.T, cfg *config.File, roles []string, opts Options) (out *syncbuf.Buffer, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	out = &syncbuf.Buffer{}
	opts.Out = out
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, roles, opts) }()
	waitFor(t, "the ready line", func() (bool, string) { return strings.Contains(out.String(), "ready; Ctrl-C"), out.String() })
	return out, func() {
		t.Helper()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return after its context ended")
		}
	}
}

// newTestNode is a node as Run makes it, before any role starts.
func newTestNode(t *testing.T, cfg *config.File) *node {
	n := &node{log: slog.New(slog.DiscardHandler), term: newTerminal(io.Discard), errc: make(chan error, 8)}
	n.startObserving(cfg)
	t.Cleanup(func() { n.closeConsumer(context.Background()) })
	return n
}

func sayHello(name string) *rpc.Invocation {
	return &rpc.Invocation{Service: providertest.GreeterInterface, Version: providertest.GreeterVersion,
		Method: "sayHello", ParamTypes: []string{"java.lang.String"}, Args: []any{name}}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func zkConn(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	zc, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(zkQuiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(zc.Close)
	return zc
}

type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

func waitChildren(t *testing.T, zc *zk.Conn, path string, want int, what string) {
	t.Helper()
	waitFor(t, what, func() (bool, string) {
		kids, _, err := zc.Children(path)
		if errors.Is(err, zk.ErrNoNode) {
			return want == 0, "no node"
		}
		return err == nil && len(kids) == want, fmt.Sprintf("%v %v", kids, err)
	})
}

func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 30s; last: %s", what, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	var pid int
	waitFor(t, "the plugin's pid file", func() (bool, string) {
		b, err := os.ReadFile(path)
		if err != nil {
			return false, err.Error()
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0, string(b)
	})
	return pid
}

// answering is a plugin that answers every Dubbo call with "plugin" and
// serves no protobuf call.
type answering struct{}

func (answering) Invoke(context.Context, *rpc.Invocation) (*rpc.Result, error) {
	return &rpc.Result{Value: "plugin"}, nil
}

func (answering) CallProto(_ context.Context, _ plugins.ProtoCall, _ []byte, done func([]byte, rpc.Metadata, *plugins.Status)) {
	done(nil, nil, &plugins.Status{Code: codes.Unimplemented, Message: "no protobuf service"})
}

func (answering) OpenStream(context.Context, plugins.ProtoCall) (*plugins.Stream, error) {
	return nil, &plugins.Status{Code: codes.Unimplemented, Message: "no protobuf service"}
}

// TestRunTripleProvider runs the provider role serving Triple only, with
// the example plugins: greet.GreetService's protobuf calls and
// org.example.Greeter's wrapper-mode calls reach them, and the health
// service says the node is ready.
func TestRunTripleProvider(t *testing.T) {
	dir, err := child.Build("../examples/greet", "../examples/greeter")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg := loadConfig(t, fmt.Sprintf(`
registry.address = ""
protocol.name = "tri"
protocol.host = "127.0.0.1"
protocol.port = -1
provider.plugins = [%q, %q]
monitor.enabled = false
`, filepath.Join(dir, "greet"), filepath.Join(dir, "greeter")))
	out, stop := startRun(t, cfg, []string{Provider}, slog.New(slog.DiscardHandler))
	defer stop()
	m := regexp.MustCompile(`provider   tri://(\S+)   plugins`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no tri:// address in %q", out)
	}
	cc, err := grpc.Dial(m[1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx := testCtx(t)
	var resp greetpb.GreetResponse
	if err := cc.Invoke(ctx, "/greet.GreetService/Greet", &greetpb.GreetRequest{Name: "x"}, &resp); err != nil || resp.Greeting != "Hello, x" {
		t.Errorf("Greet: %q, %v", resp.Greeting, err)
	}
	tc := tripleclient.New(m[1], tripleclient.Config{})
	defer tc.Close()
	waitFor(t, "a Triple connection", func() (bool, string) { return tc.Available(), "" })
	res, err := tc.Invoke(ctx, &rpc.Invocation{Service: providertest.GreeterInterface, Version: providertest.GreeterVersion,
		Method: "sayHello", ParamTypes: []string{"java.lang.String"}, Args: []any{"tri"}})
	if err != nil || res.Value != "Hello, tri" {
		t.Errorf("sayHello in wrapper mode: %v, %v", res, err)
	}
	for _, svc := range []string{"", "greet.GreetService", "org.example.Greeter"} {
		h, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || h.Status != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health of %q: %v, %v", svc, h, err)
		}
	}
}
