package interop

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"

	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
	"github.com/dubbo-lab/dubbo/internal/testkit/dubbogo"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// withRegistries runs fn against our embedded registry and against Apache
// ZooKeeper, each in its own subtest sharing one server.
func withRegistries(t *testing.T, fn func(t *testing.T, zkAddr string)) {
	t.Run("embedded", func(t *testing.T) { fn(t, zktest.StartEmbedded(t, embeddedzk.Config{})) })
	t.Run("apache", func(t *testing.T) { fn(t, apachezk.Start(t, apachezk.Options{}).Addr()) })
}

// dubbo-go's view of each result: Java int is int32, a map comes back keyed
// by interface{}.
var dubboGoTypes = map[string]string{
	"sayHello": "string",
	"add":      "int32",
	"echoMap":  "map[interface {}]interface {}",
	"sleep":    "string",
}

// checkDubboGoCalls checks what dgconsumer printed for the five calls.
func checkDubboGoCalls(t *testing.T, results []dubbogo.CallResult, runErr error) {
	t.Helper()
	if runErr != nil {
		t.Error(runErr)
	}
	byMethod := map[string]dubbogo.CallResult{}
	for _, r := range results {
		t.Logf("dgconsumer %s -> result=%v type=%s error=%q", r.Method, r.Result, r.Type, r.Error)
		byMethod[r.Method] = r
	}
	if len(results) != 5 {
		t.Fatalf("dgconsumer made %d calls, want 5", len(results))
	}
	for method, typ := range dubboGoTypes {
		if r := byMethod[method]; r.Error != "" || r.Type != typ {
			t.Errorf("%s: type %q error %q, want type %q and no error", method, r.Type, r.Error, typ)
		}
	}
	if r := byMethod["sayHello"]; r.Result != "Hello, world" {
		t.Errorf("sayHello(world) = %v, want Hello, world", r.Result)
	}
	if r := byMethod["add"]; r.Result != float64(5) { // a JSON number
		t.Errorf("add(2, 3) = %v, want 5", r.Result)
	}
	if m, _ := byMethod["echoMap"].Result.(map[string]any); len(m) != 2 || m["k"] != "v" || m["n"] != "1" {
		t.Errorf("echoMap({k:v, n:1}) = %v", byMethod["echoMap"].Result)
	}
	if r := byMethod["fail"]; r.Error != "boom" {
		t.Errorf("fail(boom): error %q, want exactly the exception message boom", r.Error)
	}
	if r := byMethod["sleep"]; r.Result != "slept" {
		t.Errorf("sleep(10) = %v, want slept", r.Result)
	}
}

var noRetries = 0

// A stock dubbo-go consumer finds our provider in ZooKeeper (embedded and
// Apache) and calls every method; our provider is node/provider in this
// process and, separately, the dubbo binary with the greeter handler plugin.
func TestDubboGoConsumerCallsOurProvider(t *testing.T) {
	dubbogo.Build(t) // skip (or fail under CI) before starting anything

	withRegistries(t, func(t *testing.T, zkAddr string) {
		registry := "zookeeper://" + zkAddr
		conn := zkConnect(t, zkAddr)

		t.Run("in-process", func(t *testing.T) {
			p := startInProcessProvider(t, registry)
			node := waitNode(t, conn, providersPath, p.Addr())
			checkOurProviderNode(t, node)

			results, err := dubbogo.RunConsumer(t, dubbogo.ConsumerOptions{Registry: registry, Retries: &noRetries})
			checkDubboGoCalls(t, results, err)
			if n := p.calls.Load(); n != 5 {
				t.Errorf("our handler ran %d times, want 5 (one per call, no retries)", n)
			}
			// dgconsumer's own node is one we can read too.
			found := false
			for _, u := range nodesUnder(t, conn, consumersPath) {
				found = found || (u.Protocol() == "consumer" && u.Param("application") == "dgconsumer")
			}
			if !found {
				t.Errorf("no consumer:// node of dgconsumer under %s", consumersPath)
			}
		})

		t.Run("plugin", func(t *testing.T) {
			p := startPluginProvider(t, registry)
			node := waitNode(t, conn, providersPath, p.Addr)
			checkOurProviderNode(t, node)
			if nodes := nodesUnder(t, conn, providersPath); len(nodes) != 1 {
				t.Fatalf("providers = %v, want only the plugin provider's", nodes)
			}
			results, err := dubbogo.RunConsumer(t, dubbogo.ConsumerOptions{Registry: registry, Retries: &noRetries})
			checkDubboGoCalls(t, results, err)
		})
	})

	t.Run("direct", func(t *testing.T) {
		t.Run("in-process", func(t *testing.T) {
			p := startInProcessProvider(t, "")
			results, err := dubbogo.RunConsumer(t, dubbogo.ConsumerOptions{URL: "dubbo://" + p.Addr(), Retries: &noRetries})
			checkDubboGoCalls(t, results, err)
			if n := p.calls.Load(); n != 5 {
				t.Errorf("our handler ran %d times, want 5", n)
			}
		})
		t.Run("plugin", func(t *testing.T) {
			p := startPluginProvider(t, "")
			results, err := dubbogo.RunConsumer(t, dubbogo.ConsumerOptions{URL: "dubbo://" + p.Addr, Retries: &noRetries})
			checkDubboGoCalls(t, results, err)
		})
	})
}

// checkOurProviderNode checks the interface-level URL our provider wrote,
// the one dgconsumer subscribes to.
func checkOurProviderNode(t *testing.T, u *url.URL) {
	t.Helper()
	t.Logf("our provider node: %s", u)
	if u.Protocol() != "dubbo" || u.Path() != greeterIface {
		t.Errorf("provider URL %s: want dubbo://host:port/%s", u, greeterIface)
	}
	for key, want := range map[string]string{"interface": greeterIface, "version": greeterVersion, "side": "provider"} {
		if got := u.Param(key); got != want {
			t.Errorf("provider URL %s=%q, want %q", key, got, want)
		}
	}
	methods := "," + u.Param("methods") + ","
	for _, m := range []string{"sayHello", "add", "echoMap", "fail", "sleep"} {
		if !strings.Contains(methods, ","+m+",") {
			t.Errorf("provider URL methods=%q lacks %s", u.Param("methods"), m)
		}
	}
}

// Our consumer finds a stock dubbo-go provider in ZooKeeper (embedded and
// Apache) or calls it by URL, and gets every value with its Go type.
func TestOurConsumerCallsDubboGoProvider(t *testing.T) {
	dubbogo.Build(t)

	withRegistries(t, func(t *testing.T, zkAddr string) {
		registry := "zookeeper://" + zkAddr
		dg := dubbogo.StartProvider(t, dubbogo.ProviderOptions{Registry: registry})

		// dgprovider's node, read and decoded by our URL code.
		conn := zkConnect(t, zkAddr)
		node := waitNode(t, conn, providersPath, dg.Addr)
		t.Logf("dgprovider node: %s", node)
		for key, want := range map[string]string{
			"interface": greeterIface, "version": greeterVersion, "side": "provider", "application": "dgprovider",
		} {
			if got := node.Param(key); got != want {
				t.Errorf("dgprovider URL %s=%q, want %q", key, got, want)
			}
		}
		if node.Protocol() != "dubbo" || node.Host() != "127.0.0.1" || !strings.Contains(","+node.Param("methods")+",", ",sayHello,") {
			t.Errorf("dgprovider URL %s: want dubbo://127.0.0.1:port with sayHello among its methods", node)
		}

		cons := newConsumer(t, registry)
		ref, err := cons.Reference(testCtx(t), consumer.ReferenceConfig{Interface: greeterIface, Version: greeterVersion})
		if err != nil {
			t.Fatal(err)
		}
		// The directory holds dgprovider, decoded from the same node.
		deadline := time.Now().Add(15 * time.Second)
		for {
			ps := ref.Providers()
			if len(ps) == 1 && ps[0].URL().Address() == dg.Addr {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("reference providers = %d, want dgprovider at %s", len(ps), dg.Addr)
			}
			time.Sleep(50 * time.Millisecond)
		}
		callAll(t, cons, dg.Addr)
	})

	t.Run("direct", func(t *testing.T) {
		dg := dubbogo.StartProvider(t, dubbogo.ProviderOptions{})
		cons := newConsumer(t, "", consumer.ReferenceConfig{Interface: greeterIface, Version: greeterVersion, URL: dg.URL()})
		// Start's check (on by default) waits for the connection.
		if err := cons.Start(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		callAll(t, cons, dg.Addr)
	})
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newConsumer(t *testing.T, registry string, refs ...consumer.ReferenceConfig) *consumer.Consumer {
	t.Helper()
	cons, err := consumer.New(testCtx(t), consumer.Config{
		Application: "interop-consumer",
		Registry:    registry,
		Defaults:    consumer.Settings{Timeout: 3 * time.Second, Retries: &noRetries},
		References:  refs,
	}, consumer.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cons.Close() })
	return cons
}

// callAll makes the five calls through cons and checks values, Go types
// and the provider that answered.
func callAll(t *testing.T, cons *consumer.Consumer, wantProvider string) {
	t.Helper()
	call := func(method string, types []string, args ...any) *rpc.Result {
		t.Helper()
		res, err := cons.Invoke(testCtx(t), &rpc.Invocation{
			Service: greeterIface, Version: greeterVersion, Method: method, ParamTypes: types, Args: args,
		})
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		t.Logf("%s -> value=%#v exception=%v", method, res.Value, res.Exception)
		if res.Provider != wantProvider {
			t.Errorf("%s answered by %q, want %s", method, res.Provider, wantProvider)
		}
		return res
	}
	if v := call("sayHello", []string{"java.lang.String"}, "world").Value; v != "Hello, world" {
		t.Errorf("sayHello(world) = %#v, want string Hello, world", v)
	}
	if v := call("add", []string{"int", "int"}, int32(2), int32(3)).Value; v != int32(5) {
		t.Errorf("add(2, 3) = %#v (%T), want int32 5", v, v)
	}
	m := call("echoMap", []string{"java.util.Map"}, map[string]any{"k": "v", "n": "1"}).Value
	if got := stringKeys(m); !reflect.DeepEqual(got, map[string]any{"k": "v", "n": "1"}) {
		t.Errorf("echoMap({k:v, n:1}) = %#v (%T), want a map k:v, n:1", m, m)
	}
	res := call("fail", []string{"java.lang.String"}, "boom")
	if res.Exception == nil || res.Exception.Message != "boom" {
		t.Errorf("fail(boom) = %#v, exception %#v: want an exception with message boom", res.Value, res.Exception)
	}
	if v := call("sleep", []string{"int"}, int32(10)).Value; v != "slept" {
		t.Errorf("sleep(10) = %#v, want string slept", v)
	}
}

// stringKeys turns a decoded map of any key type into a string-keyed one;
// anything that is not a map gives nil.
func stringKeys(v any) map[string]any {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || rv.Kind() != reflect.Map {
		return nil
	}
	out := make(map[string]any, rv.Len())
	for it := rv.MapRange(); it.Next(); {
		out[fmt.Sprint(it.Key().Interface())] = it.Value().Interface()
	}
	return out
}

// The dubbo CLI calls a stock dubbo-go provider by URL and through the
// registry and prints the JSON result.
func TestDubboCallAgainstDubboGoProvider(t *testing.T) {
	dubbogo.Build(t)
	bin, _, _ := buildOurs(t)
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	registry := "zookeeper://" + zkAddr
	dg := dubbogo.StartProvider(t, dubbogo.ProviderOptions{Registry: registry})

	for _, tc := range []struct {
		name    string
		args    []string
		stdout  string // exact, "" when the call must fail
		inError string
	}{
		{"url/sayHello", []string{"--url", dg.URL(), "org.example.Greeter", "sayHello", `"world"`}, `"Hello, world"`, ""},
		{"registry/sayHello", []string{"--registry", registry, "org.example.Greeter", "sayHello", `"world"`}, `"Hello, world"`, ""},
		{"url/add", []string{"--url", dg.URL(), "--types", "int,int", "org.example.Greeter", "add", "2", "3"}, "5", ""},
		{"url/fail", []string{"--url", dg.URL(), "org.example.Greeter", "fail", `"boom"`}, "", "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			args := append([]string{"call", "--version", greeterVersion, "--timeout", "5s"}, tc.args...)
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Dir = t.TempDir() // no dubbo.toml there
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			t.Logf("dubbo %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), stdout.String(), stderr.String())
			if tc.stdout != "" {
				if err != nil {
					t.Fatalf("dubbo call: %v", err)
				}
				if got := strings.TrimSpace(stdout.String()); got != tc.stdout {
					t.Errorf("printed %s, want %s", got, tc.stdout)
				}
				return
			}
			if err == nil {
				t.Fatalf("dubbo call succeeded, want a non-zero exit")
			}
			if !strings.Contains(stderr.String(), tc.inError) {
				t.Errorf("stderr lacks %q", tc.inError)
			}
		})
	}
}
