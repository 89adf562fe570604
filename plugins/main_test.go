package plugins_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/dubbo-go-hessian2/java_exception"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/plugins"
	"github.com/dubbo-lab/dubbo/plugins/internal/wire"
	"github.com/dubbo-lab/dubbo/plugins/sdk"
)

// The test binary is also the plugin: started with modeEnv set, TestMain
// becomes the plugin process of that mode instead of running tests, the way
// go-plugin's own tests re-execute themselves.
const modeEnv = "DUBBO_PLUGINS_TEST_MODE"

func TestMain(m *testing.M) {
	mode := os.Getenv(modeEnv)
	if mode == "" {
		os.Exit(m.Run())
	}
	if err := runPlugin(mode); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// User is the POJO of the test service.
type User struct {
	Name string
	Age  int32
	Tags []string
}

func (User) JavaClassName() string { return "org.example.User" }

// Greeter is the example service (docs/ARCHITECTURE.md, "Contracts") plus methods that exercise
// types, panics, callbacks and logging.
type Greeter struct{}

func (Greeter) SayHello(_ context.Context, name string) (string, error) { return "Hello, " + name, nil }

func (Greeter) Add(_ context.Context, a, b int32) (int32, error) { return a + b, nil }

// Greeter2 is Greeter with another greeting: the same methods, so the
// same service.
type Greeter2 struct{ Greeter }

func (Greeter2) SayHello(_ context.Context, name string) (string, error) { return "Hi, " + name, nil }

func (Greeter) EchoMap(_ context.Context, m map[string]any) (map[string]any, error) { return m, nil }

func (Greeter) Fail(_ context.Context, msg string) error { return errors.New(msg) }

func (Greeter) Sleep(ctx context.Context, ms int32) (string, error) {
	select {
	case <-time.After(time.Duration(ms) * time.Millisecond):
		return "slept", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (Greeter) Echo(_ context.Context, v any) (any, error) { return v, nil }

func (Greeter) EchoUser(_ context.Context, u *User) (*User, error) {
	if u == nil {
		return nil, nil
	}
	u.Age++
	return u, nil
}

func (Greeter) AddLong(_ context.Context, a, b int64) (int64, error) { return a + b, nil }

// GcPercent is the plugin's garbage collector target.
func (Greeter) GcPercent(context.Context) (int64, error) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64()), nil
}

func (Greeter) Illegal(_ context.Context, msg string) error {
	return fmt.Errorf("wrapped: %w", java_exception.NewIllegalStateException(msg))
}

func (Greeter) Panic(_ context.Context, msg string) (string, error) { panic(msg) }

// Relay calls org.example.Echo through the node.
func (Greeter) Relay(ctx context.Context, msg string) (string, error) {
	v, err := sdk.Client(ctx).Call(ctx, "org.example.Echo:1.0.0", "echo", []string{"java.lang.String"}, msg)
	if err != nil {
		return "", err
	}
	s, _ := v.(string)
	return s + " via " + sdk.Attachments(ctx)["who"].(string), nil
}

// Log writes msg to slog, stdout and stderr.
func (Greeter) Log(_ context.Context, msg string) error {
	slog.Info(msg, "where", "slog")
	fmt.Println(msg + " on stdout")
	fmt.Fprintln(os.Stderr, msg+" on stderr")
	return nil
}

func greeterService() sdk.Service {
	return sdk.Service{Interface: "org.example.Greeter", Version: "1.0.0", Handler: Greeter{}}
}

func runPlugin(mode string) error {
	switch mode {
	case "greeter":
		return sdk.Serve(greeterService())
	case "greeter2":
		// The greeter rebuilt with another greeting, for swaps.
		return sdk.Serve(sdk.Service{Interface: "org.example.Greeter", Version: "1.0.0", Handler: Greeter2{}})
	case "settings":
		// A service with Dubbo settings, which reach the node in Describe.
		svc := greeterService()
		zero := 0
		svc.Settings = sdk.Settings{Weight: new(200), Tag: "gray", Timeout: 3 * time.Second, Retries: &zero, Executes: 4,
			Parameters: map[string]string{"owner": "team-a"}}
		return sdk.Serve(svc)
	case "proto":
		// A Dubbo and a protobuf service in one plugin.
		return sdk.Serve(greeterService(), greetProto())
	case "consumer":
		return sdk.Run(consume)
	case "startfail":
		return sdk.Run(func(context.Context, *sdk.Caller) error { return errors.New("cannot reach the bank") })
	case "spawner", "pipeholder":
		// Starts a process of its own (this binary, sleeping) and says its
		// pid; the pipeholder's shares the plugin's stdout and stderr, as
		// the commands of a shell script would.
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), modeEnv+"=sleeper")
		if mode == "pipeholder" {
			child.Stdout, child.Stderr = os.Stdout, os.Stderr
		}
		if err := child.Start(); err != nil {
			return err
		}
		if err := os.WriteFile(os.Getenv(pidFileEnv), []byte(strconv.Itoa(child.Process.Pid)), 0o644); err != nil {
			return err
		}
		return sdk.Serve(greeterService())
	case "sleeper":
		time.Sleep(time.Minute)
	case "node":
		return runNode()
	case "exit":
		fmt.Fprintln(os.Stderr, "cannot open config: no such file")
		os.Exit(3)
	case "notplugin":
		fmt.Println("hello, I am an ordinary program")
		time.Sleep(10 * time.Second)
	case "wrongcookie":
		hs := wire.Handshake
		hs.MagicCookieValue = "some-other-host"
		plugin.Serve(&plugin.ServeConfig{HandshakeConfig: hs, Plugins: plugin.PluginSet{}})
	case "noservices", "badtype", "ghost", "garbage", "badsettings":
		d, err := sdk.NewDispatcher(greeterService())
		if err != nil {
			return err
		}
		l := &liar{mode: mode, d: d}
		link, err := wire.PluginLink()
		if err != nil {
			return err
		}
		defer link.Close()
		link.Start(l)
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig: wire.Handshake,
			Plugins:         plugin.PluginSet{wire.PluginName: &wire.GRPCPlugin{Handler: l}},
			GRPCServer:      wire.NewGRPCServer,
		})
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	return nil
}

// liar is a plugin that does not play by the rules, in one way per mode.
type liar struct {
	mode string
	d    *sdk.Dispatcher
}

func (l *liar) Describe(context.Context, *emptypb.Empty) (*wrapperspb.BytesValue, error) {
	methods := []wire.Method{{Name: "sayHello", ParamTypes: []string{"java.lang.String"}, ReturnType: "java.lang.String"}}
	desc := wire.Description{Services: []wire.Service{{Interface: "org.example.Greeter", Version: "1.0.0", Methods: methods}}}
	switch l.mode {
	case "noservices":
		desc.Services[0].Interface = ""
	case "badtype":
		desc.Services[0].Methods[0].ParamTypes = []string{"java.lang.String;DROP"}
	case "ghost":
		desc.Services[0].Methods = append(methods, wire.Method{Name: "ghost", ParamTypes: []string{}, ReturnType: "void"})
	case "badsettings":
		desc.Services[0].Params = map[string]string{"weight": "-1"}
	}
	b, err := json.Marshal(desc)
	return wrapperspb.Bytes(b), err
}

func (l *liar) Start(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

func (l *liar) Stop(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

func (l *liar) Prepare(call []byte) (wire.Runner, bool) {
	return wire.RunFunc(func(ctx context.Context) []byte {
		if l.mode == "garbage" {
			return []byte("\x4f\xff\x00garbage")
		}
		inv, err := wire.DecodeCall(call)
		if err != nil {
			return wire.ErrorReply(err)
		}
		b, err := wire.EncodeReply(l.d.Invoke(ctx, inv))
		if err != nil {
			return wire.ErrorReply(err)
		}
		return b
	}), false
}

// consume is a consumer-side plugin: it calls org.example.Echo through the
// node in a loop until the node stops it, and fails if an answer is wrong.
func consume(ctx context.Context, c *sdk.Caller) error {
	n := 0
	for ctx.Err() == nil {
		msg := "ping " + strconv.Itoa(n)
		v, err := c.Call(ctx, "org.example.Echo:1.0.0", "echo", []string{"java.lang.String"}, msg)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			return err
		case v != msg:
			return fmt.Errorf("echo(%q) = %#v", msg, v)
		default:
			n++
		}
	}
	slog.Info("consumer stopped", "calls", n, "why", ctx.Err())
	return nil
}

// pidFileEnv names the file where the spawner mode writes its child's pid.
const pidFileEnv = "DUBBO_PLUGINS_TEST_PIDFILE"

// runNode is a node in miniature, for signal tests: it starts the greeter
// plugin, prints "plugin PID", and on SIGINT or SIGTERM calls the plugin
// once more (it must still be up: the signal was the node's alone), prints
// the answer, closes the plugin and prints "closed".
func runNode() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	p, err := plugins.Start(ctx, plugins.Config{Path: exe, Name: "greeter", Env: []string{modeEnv + "=greeter"},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		return err
	}
	defer p.Close()
	fmt.Printf("plugin %d\n", p.Pid())
	<-ctx.Done()
	callCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := p.Invoke(callCtx, greeterCall("sayHello", nil, "after the signal"))
	if err != nil {
		return err
	}
	fmt.Println(res.Value)
	p.Close()
	fmt.Println("closed")
	return nil
}

// startConfig is the Config that starts this test binary in mode.
func startConfig(t testing.TB, mode string) plugins.Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return plugins.Config{Path: exe, Name: mode, Env: []string{modeEnv + "=" + mode}, Logger: testLogger(t), StartTimeout: 10 * time.Second}
}

// testLogger sends records to t.Log, so plugin output shows with -v, and
// drops those that arrive after the test (go-plugin's stdio goroutine is
// not waited for by Kill).
func testLogger(t testing.TB) *slog.Logger {
	w := &tWriter{t: t}
	t.Cleanup(func() { w.done.Store(true) })
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct {
	t    testing.TB
	done atomic.Bool

	mu   sync.Mutex
	seen strings.Builder // everything written, for captureLogger
}

func (w *tWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.seen.Write(p)
	w.mu.Unlock()
	if !w.done.Load() {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// captureLogger is testLogger that also keeps the output; waitLog waits
// (up to 5s) for a line containing all of parts.
func captureLogger(t testing.TB) (*slog.Logger, func(parts ...string) string) {
	w := &tWriter{t: t}
	t.Cleanup(func() { w.done.Store(true) })
	waitLog := func(parts ...string) string {
		deadline := time.Now().Add(5 * time.Second)
		for {
			w.mu.Lock()
			out := w.seen.String()
			w.mu.Unlock()
		lines:
			for _, line := range strings.Split(out, "\n") {
				for _, part := range parts {
					if !strings.Contains(line, part) {
						continue lines
					}
				}
				return line
			}
			if time.Now().After(deadline) {
				t.Errorf("no log line with %q", parts)
				return ""
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})), waitLog
}

func greeterCall(method string, types []string, args ...any) *rpc.Invocation {
	return &rpc.Invocation{Service: "org.example.Greeter", Version: "1.0.0", Method: method, ParamTypes: types, Args: args}
}
