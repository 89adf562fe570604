package plugins_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/plugins"
)

func startGreeter(t testing.TB, cfg plugins.Config) *plugins.Plugin {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	p, err := plugins.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func invoke(t *testing.T, p rpc.Invoker, inv *rpc.Invocation) *rpc.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := p.Invoke(ctx, inv)
	if err != nil {
		t.Fatalf("%s: %v", inv.Method, err)
	}
	return res
}

func TestDescribe(t *testing.T) {
	p := startGreeter(t, startConfig(t, "greeter"))
	svcs := p.Services()
	if len(svcs) != 1 || svcs[0].Key() != "org.example.Greeter:1.0.0" {
		t.Fatalf("services = %+v", svcs)
	}
	got := map[string]plugins.MethodDesc{}
	for _, m := range svcs[0].Methods {
		got[m.Name] = m
	}
	want := []plugins.MethodDesc{
		{Name: "sayHello", ParamTypes: []string{"java.lang.String"}, ReturnType: "java.lang.String"},
		{Name: "add", ParamTypes: []string{"int", "int"}, ReturnType: "int"},
		{Name: "addLong", ParamTypes: []string{"long", "long"}, ReturnType: "long"},
		{Name: "echoMap", ParamTypes: []string{"java.util.Map"}, ReturnType: "java.util.Map"},
		{Name: "fail", ParamTypes: []string{"java.lang.String"}, ReturnType: "void"},
		{Name: "sleep", ParamTypes: []string{"int"}, ReturnType: "java.lang.String"},
		{Name: "echo", ParamTypes: []string{"java.lang.Object"}, ReturnType: "java.lang.Object"},
		{Name: "echoUser", ParamTypes: []string{"org.example.User"}, ReturnType: "org.example.User"},
	}
	for _, w := range want {
		if !reflect.DeepEqual(got[w.Name], w) {
			t.Errorf("method %s = %+v, want %+v", w.Name, got[w.Name], w)
		}
	}
}

// The settings of an sdk.Service reach the node with the description, as
// the Dubbo URL parameters the node registers.
func TestDescribeSettings(t *testing.T) {
	p := startGreeter(t, startConfig(t, "settings"))
	svcs := p.Services()
	want := map[string]string{"weight": "200", "dubbo.tag": "gray", "timeout": "3000", "retries": "0", "executes": "4", "owner": "team-a"}
	if len(svcs) != 1 || !reflect.DeepEqual(svcs[0].Params, want) {
		t.Fatalf("services = %+v, want params %v", svcs, want)
	}
	if plain := startGreeter(t, startConfig(t, "greeter")).Services(); plain[0].Params != nil {
		t.Errorf("a service without settings has params %v", plain[0].Params)
	}
}

// TestJavaTypes checks that values cross the boundary both ways with their
// Java types: an int stays int32, a long int64, a Map a map, a POJO keeps
// its class.
func TestJavaTypes(t *testing.T) {
	p := startGreeter(t, startConfig(t, "greeter"))
	user := map[string]any{"_class": "org.example.User", "name": "ann", "age": int32(41), "tags": []string{"a", "b"}}
	tests := []struct {
		name string
		inv  *rpc.Invocation
		want any
	}{
		{"string", greeterCall("sayHello", []string{"java.lang.String"}, "world"), "Hello, world"},
		{"int", greeterCall("add", []string{"int", "int"}, int32(2), int32(3)), int32(5)},
		{"long into int", greeterCall("add", []string{"int", "int"}, int64(2), int64(3)), int32(5)},
		{"long", greeterCall("addLong", []string{"long", "long"}, int64(1)<<40, int64(1)), int64(1)<<40 + 1},
		{"map", greeterCall("echoMap", []string{"java.util.Map"}, map[any]any{"k": "v", "n": int32(1)}), map[any]any{"k": "v", "n": int32(1)}},
		{"object int", greeterCall("echo", []string{"java.lang.Object"}, int32(7)), int32(7)},
		{"object long", greeterCall("echo", []string{"java.lang.Object"}, int64(7)), int64(7)},
		{"object double", greeterCall("echo", []string{"java.lang.Object"}, 1.5), 1.5},
		{"object bool", greeterCall("echo", []string{"java.lang.Object"}, true), true},
		{"object bytes", greeterCall("echo", []string{"java.lang.Object"}, []byte{1, 2, 3}), []byte{1, 2, 3}},
		{"object list", greeterCall("echo", []string{"java.lang.Object"}, []any{"a", int32(1), int64(2)}), []any{"a", int32(1), int64(2)}},
		{"object null", greeterCall("echo", []string{"java.lang.Object"}, nil), nil},
		{"object POJO", greeterCall("echo", []string{"java.lang.Object"}, user), user},
		{"POJO param", greeterCall("echoUser", []string{"org.example.User"}, user),
			map[string]any{"_class": "org.example.User", "name": "ann", "age": int32(42), "tags": []string{"a", "b"}}},
		{"void", greeterCall("sleep", []string{"int"}, int32(1)), "slept"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := invoke(t, p, tt.inv)
			if res.Exception != nil {
				t.Fatalf("exception %v", res.Exception)
			}
			if !reflect.DeepEqual(res.Value, tt.want) {
				t.Errorf("got %#v (%T), want %#v (%T)", res.Value, res.Value, tt.want, tt.want)
			}
		})
	}
}

func TestExceptions(t *testing.T) {
	p := startGreeter(t, startConfig(t, "greeter"))
	tests := []struct {
		name      string
		inv       *rpc.Invocation
		class     string
		inMessage string
	}{
		{"error", greeterCall("fail", []string{"java.lang.String"}, "boom"), "java.lang.RuntimeException", "boom"},
		{"error with class", greeterCall("illegal", []string{"java.lang.String"}, "bad state"), "java.lang.IllegalStateException", "bad state"},
		{"panic", greeterCall("panic", []string{"java.lang.String"}, "oops"), "java.lang.RuntimeException", "panic in org.example.Greeter:1.0.0.panic: oops"},
		{"wrong type", greeterCall("sayHello", []string{"int"}, int32(1)), "java.lang.IllegalArgumentException", "argument 1 of sayHello (java.lang.String): got int"},
		{"overflow", greeterCall("add", []string{"long", "long"}, int64(1)<<40, int64(1)), "java.lang.IllegalArgumentException", "does not fit in int"},
		{"arity", greeterCall("add", []string{"int"}, int32(1)), "java.lang.IllegalArgumentException", "takes 2 arguments, got 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := invoke(t, p, tt.inv)
			if res.Exception == nil {
				t.Fatalf("no exception, value %#v", res.Value)
			}
			if res.Exception.Class != tt.class || !strings.Contains(res.Exception.Message, tt.inMessage) {
				t.Errorf("exception = %s: %q, want %s containing %q", res.Exception.Class, res.Exception.Message, tt.class, tt.inMessage)
			}
		})
	}
	// The plugin keeps serving after a panic.
	if res := invoke(t, p, greeterCall("sayHello", nil, "again")); res.Value != "Hello, again" {
		t.Errorf("after panic: %#v", res)
	}
}

// TestGCTarget: a plugin collects at GOGC=400 unless its environment,
// inherited from the node, says otherwise.
func TestGCTarget(t *testing.T) {
	t.Setenv("GOGC", "") // restored after the test
	os.Unsetenv("GOGC")
	for _, tt := range []struct {
		env  []string
		want int64
	}{
		{nil, 400},
		{[]string{"GOGC=150"}, 150},
	} {
		cfg := startConfig(t, "greeter")
		cfg.Env = append(cfg.Env, tt.env...)
		p := startGreeter(t, cfg)
		if res := invoke(t, p, greeterCall("gcPercent", nil)); res.Value != tt.want {
			t.Errorf("env %v: the plugin's GC target is %v, want %d", tt.env, res.Value, tt.want)
		}
	}
}

func TestNotFound(t *testing.T) {
	p := startGreeter(t, startConfig(t, "greeter"))
	for _, tt := range []struct {
		inv  *rpc.Invocation
		says string
	}{
		{greeterCall("nope", nil), "org.example.Greeter:1.0.0 has no method nope"},
		{&rpc.Invocation{Service: "org.example.Greeter", Version: "2.0.0", Method: "sayHello"}, "does not serve org.example.Greeter:2.0.0 (it serves org.example.Greeter:1.0.0"},
		{&rpc.Invocation{Service: "org.example.Other", Method: "sayHello"}, "does not serve org.example.Other (it serves"},
	} {
		_, err := p.Invoke(context.Background(), tt.inv)
		if !errors.Is(err, rpc.ErrServiceNotFound) || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s:%s.%s: err = %v, want ErrServiceNotFound saying %q", tt.inv.Service, tt.inv.Version, tt.inv.Method, err, tt.says)
		}
	}
}

func TestGenericAndEcho(t *testing.T) {
	p := startGreeter(t, startConfig(t, "greeter"))
	inv := greeterCall("$invoke", []string{"java.lang.String", "[Ljava.lang.String;", "[Ljava.lang.Object;"},
		"echoUser", []string{"org.example.User"}, []any{map[any]any{"class": "org.example.User", "name": "bob", "age": int32(1)}})
	inv.SetAttachment("generic", "true")
	res := invoke(t, p, inv)
	want := map[string]any{"class": "org.example.User", "name": "bob", "age": int32(2), "tags": nil}
	if !reflect.DeepEqual(res.Value, want) {
		t.Errorf("$invoke = %#v, want %#v", res.Value, want)
	}
	res = invoke(t, p, greeterCall("$echo", []string{"java.lang.Object"}, "ping"))
	if res.Value != "ping" {
		t.Errorf("$echo = %#v", res.Value)
	}
}

func TestCallback(t *testing.T) {
	var mu sync.Mutex
	var seen []*rpc.Invocation
	cfg := startConfig(t, "greeter")
	cfg.Host = rpc.InvokerFunc(func(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
		mu.Lock()
		seen = append(seen, inv)
		mu.Unlock()
		if inv.Args[0] == "fail" {
			return &rpc.Result{Exception: &rpc.Exception{Class: "java.lang.IllegalStateException", Message: "echo refused"}}, nil
		}
		if inv.Args[0] == "down" {
			return nil, &rpc.CallError{Kind: rpc.ErrNoProvider, Service: inv.Service, Method: inv.Method, Detail: "nobody home"}
		}
		return &rpc.Result{Value: "echo:" + inv.Args[0].(string)}, nil
	})
	p := startGreeter(t, cfg)

	inv := greeterCall("relay", []string{"java.lang.String"}, "hi")
	inv.SetAttachment("who", "tester")
	res := invoke(t, p, inv)
	if res.Value != "echo:hi via tester" {
		t.Fatalf("relay = %#v", res)
	}
	mu.Lock()
	got := seen[0]
	mu.Unlock()
	if got.Service != "org.example.Echo" || got.Version != "1.0.0" || got.Method != "echo" || !reflect.DeepEqual(got.ParamTypes, []string{"java.lang.String"}) {
		t.Errorf("host saw %+v", got)
	}

	// A business exception of the callee comes back with its class.
	res = invoke(t, p, greeterCall("relay", nil, "fail"))
	if res.Exception == nil || res.Exception.Class != "java.lang.IllegalStateException" || res.Exception.Message != "echo refused" {
		t.Errorf("relay fail = %+v", res.Exception)
	}
	// A failed call names its category in the handler's error.
	res = invoke(t, p, greeterCall("relay", nil, "down"))
	if res.Exception == nil || !strings.Contains(res.Exception.Message, "no provider available: nobody home") {
		t.Errorf("relay down = %+v", res.Exception)
	}
}

func TestNoHost(t *testing.T) {
	p := startGreeter(t, startConfig(t, "greeter"))
	res := invoke(t, p, greeterCall("relay", nil, "hi"))
	if res.Exception == nil || !strings.Contains(res.Exception.Message, "Config.Host is nil") {
		t.Errorf("relay without host = %+v", res.Exception)
	}
}

func TestRefused(t *testing.T) {
	good := startGreeter(t, startConfig(t, "greeter"))
	tests := []struct{ mode, want string }{
		{"exit", "it exited with status 3 before the handshake; its stderr ended with: cannot open config: no such file"},
		{"notplugin", "Unrecognized remote plugin message"},
		{"wrongcookie", "This binary is a plugin"},
		{"noservices", `service interface "" is not a Java class name`},
		{"badtype", `parameter 1 type "java.lang.String;DROP" is not a Java type`},
		{"badsettings", `service org.example.Greeter:1.0.0: parameter weight: "-1" is not a non-negative integer`},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			start := time.Now()
			p, err := plugins.Start(context.Background(), startConfig(t, tt.mode))
			if err == nil {
				p.Close()
				t.Fatal("started")
			}
			t.Log(err)
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "refused") {
				t.Errorf("err = %v\nwant it to contain %q", err, tt.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("refusing took %v", d)
			}
		})
	}
	dir := t.TempDir()
	notExec := filepath.Join(dir, "plain")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ path, want string }{
		{"/nonexistent/plugin", "/nonexistent/plugin does not exist"},
		{dir, dir + " is a directory, not a plugin binary"},
		{notExec, notExec + " is not executable"},
	} {
		_, err := plugins.Start(context.Background(), plugins.Config{Path: tt.path})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Start(%s) = %v, want an error with %q", tt.path, err, tt.want)
		}
	}
	if res := invoke(t, good, greeterCall("sayHello", nil, "still here")); res.Value != "Hello, still here" {
		t.Errorf("good plugin after bad ones: %#v", res)
	}
}

func TestLyingPlugin(t *testing.T) {
	p := startGreeter(t, startConfig(t, "ghost"))
	_, err := p.Invoke(context.Background(), greeterCall("ghost", nil))
	if !errors.Is(err, rpc.ErrServiceNotFound) || !strings.Contains(err.Error(), "described it but cannot serve it") {
		t.Errorf("ghost: %v", err)
	}

	g := startGreeter(t, startConfig(t, "garbage"))
	_, err = g.Invoke(context.Background(), greeterCall("sayHello", nil, "x"))
	if !errors.Is(err, rpc.ErrProvider) || !strings.Contains(err.Error(), "cannot be decoded") {
		t.Errorf("garbage: %v", err)
	}
}

func TestCloseLeavesNoProcess(t *testing.T) {
	p := startGreeter(t, startConfig(t, "greeter"))
	pid := p.Pid()
	p.Close()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d still there after Close: %v", pid, err)
	}
	_, err := p.Invoke(context.Background(), greeterCall("sayHello", nil, "x"))
	if !errors.Is(err, rpc.ErrConnection) {
		t.Errorf("call after Close: %v", err)
	}
}

func TestTimeout(t *testing.T) {
	p := startGreeter(t, startConfig(t, "greeter"))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := p.Invoke(ctx, greeterCall("sleep", nil, int32(5000)))
	if !errors.Is(err, rpc.ErrTimeout) {
		t.Errorf("err = %v, want ErrTimeout", err)
	}
}

// TestTooBig: a call above the message limit is refused as a bad request
// without breaking the stream the other calls share.
func TestTooBig(t *testing.T) {
	p := startGreeter(t, startConfig(t, "greeter"))
	big := make([]byte, 17<<20)
	_, err := p.Invoke(context.Background(), greeterCall("echo", []string{"java.lang.Object"}, big))
	if !errors.Is(err, rpc.ErrBadRequest) {
		t.Errorf("17 MiB call: %v, want ErrBadRequest", err)
	}
	if res := invoke(t, p, greeterCall("sayHello", nil, "small")); res.Value != "Hello, small" {
		t.Errorf("after the big call: %#v", res)
	}
}

// TestFrozenPlugin: calls to a plugin that stopped (SIGSTOP) fail with a
// timeout when their caller's deadline passes, even once the socket to it
// is full, and the plugin serves again when it resumes.
func TestFrozenPlugin(t *testing.T) {
	p := startGreeter(t, startConfig(t, "greeter"))
	invoke(t, p, greeterCall("sayHello", []string{"java.lang.String"}, "before"))
	proc, err := os.FindProcess(p.Pid())
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer proc.Signal(syscall.SIGCONT)
	big := strings.Repeat("x", 256<<10) // a few of these fill the socket
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			_, err := p.Invoke(ctx, greeterCall("sayHello", []string{"java.lang.String"}, big))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("calls to a frozen plugin returned after %v, want about their 300ms timeout", took)
	}
	for err := range errs {
		if !errors.Is(err, rpc.ErrTimeout) {
			t.Errorf("call to a frozen plugin: %v, want ErrTimeout", err)
		}
	}
	if err := proc.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	res := invoke(t, p, greeterCall("sayHello", []string{"java.lang.String"}, "after"))
	if res.Value != "Hello, after" {
		t.Errorf("after resuming: %v", res.Value)
	}
}

// TestLargeCallThenConcurrent: after a call and a reply over 1 MiB, the
// plugin answers each of many concurrent calls with its own reply, and
// stays up. (The link's write buffers once ended up sharing an array after
// a write past 1 MiB: replies carried other calls' bytes, then the link
// broke and the plugin was killed.) A few rounds, since the sharing showed
// only when a write overlapped the queueing of the next calls.
func TestLargeCallThenConcurrent(t *testing.T) {
	p := startGreeter(t, startConfig(t, "greeter"))
	for i := range 10 {
		invoke(t, p, greeterCall("sayHello", nil, fmt.Sprint("warm-up ", i)))
	}
	big := strings.Repeat("x", 2_000_000)
	const rounds, callers, calls = 12, 64, 2
	for r := range rounds {
		if res := invoke(t, p, greeterCall("sayHello", nil, big)); res.Value != "Hello, "+big {
			t.Fatalf("round %d: the 2,000,000-character call came back wrong (%d characters)", r, len(fmt.Sprint(res.Value)))
		}
		errs := make(chan error, callers)
		for g := range callers {
			go func() {
				for i := range calls {
					// Up to 64 KiB, so that writes fill the socket and are
					// taken in parts while more calls are queued.
					name := fmt.Sprintf("round %d caller %d call %d %s", r, g, i, strings.Repeat("y", (g*7919+i*613)%(64<<10)))
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					res, err := p.Invoke(ctx, greeterCall("sayHello", nil, name))
					cancel()
					if err == nil && (res.Exception != nil || res.Value != "Hello, "+name) {
						err = fmt.Errorf("sayHello(%.40q) = %.60q, exception %v", name, fmt.Sprint(res.Value), res.Exception)
					}
					if err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range callers {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		if t.Failed() {
			break
		}
	}
	if err := p.Err(); err != nil {
		t.Errorf("the plugin exited: %v", err)
	}
}
