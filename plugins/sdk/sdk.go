// Package sdk is what a Dubbo handler plugin imports. A handler is a plain
// Go type; its exported methods that take a context.Context first and
// return an error last become Dubbo methods, named in lowerCamel case
// (SayHello serves sayHello). One call serves it:
//
//	type Greeter struct{}
//
//	func (Greeter) SayHello(ctx context.Context, name string) (string, error) {
//		return "Hello, " + name, nil
//	}
//
//	func main() {
//		err := sdk.Serve(sdk.Service{Interface: "org.example.Greeter", Version: "1.0.0", Handler: Greeter{}})
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//	}
//
// The node launches the binary (the plugins package, configured with
// provider.plugins), asks what it serves and registers those services. Java
// types come from Go types: string is java.lang.String, int32 int, int64
// long, float64 double, bool boolean, []byte byte[], other slices
// java.util.List, maps java.util.Map, *int32 java.lang.Integer (and the
// other boxes), time.Time java.util.Date, any java.lang.Object, and a struct
// (or pointer to one) with a JavaClassName() string method that class; Go
// int maps to long. Service.Signatures overrides what reflection derives.
//
// Arguments are converted to the parameter types (a long that fits into an
// int32 parameter, a Map into map[string]any or into a struct by field
// name); a value that does not fit fails the call with
// java.lang.IllegalArgumentException. A returned error becomes a Dubbo
// exception carrying its message, of class java.lang.RuntimeException
// unless its chain holds a *rpc.Exception (its Class is used) or an error
// with a JavaClassName() string method, like the dubbo-go-hessian2
// java_exception types. A panic becomes a java.lang.RuntimeException too,
// and the plugin keeps serving.
//
// Inside a call, Client(ctx) calls other Dubbo services through the node,
// and Attachments(ctx) holds the attachments the caller sent.
//
// A plugin can serve protobuf services too, which Triple (gRPC) callers
// reach through the node: a ProtoService takes the service's descriptor
// from the protoc-gen-go package and a handler per method on its generated
// message types, checked against the descriptor when Serve starts:
//
//	func greet(ctx context.Context, req *greetpb.GreetRequest) (*greetpb.GreetResponse, error) {
//		return &greetpb.GreetResponse{Greeting: "Hello, " + req.Name}, nil
//	}
//
//	sdk.Serve(sdk.ProtoService{
//		Service: greetpb.File_greet_proto.Services().ByName("GreetService"),
//		Methods: []sdk.ProtoMethod{sdk.Unary("Greet", greet)},
//	})
//
// ServerStream, ClientStream and BidiStream serve the streaming methods:
// their handlers send on a Sender and read from a Receiver (Recv returns
// io.EOF once the caller has sent all), or both (a Stream), like grpc-go's
// stream interfaces; Send waits while the caller is behind on reading.
// Unary handlers that have been quick run on the link's reader as Dubbo
// ones do; each stream runs on a goroutine of its own.
//
// Metadata(ctx) holds the metadata the caller sent, SetTrailer(ctx, md)
// adds to the trailer it gets back (a stream's SetHeader and SetTrailer
// too). A returned grpc-go status
// (status.Error(codes.NotFound, "..."), or an error wrapping one) reaches
// the caller with its code, message and details; the context's end is
// Canceled or DeadlineExceeded; any other error is Unknown with its
// message, and a panic Internal, after which the plugin serves on. The
// plugin sends the node the descriptors of the service's file and of every
// file it imports, for reflection and JSON callers.
//
// Calls run concurrently, each on a goroutine of its own, except that a
// method whose recent calls each returned within 50µs (and never called
// through the node) runs on the goroutine reading the node's calls, which
// saves a goroutine hand-off per call. A method that then takes longer goes
// back to its own goroutines; should it block, another goroutine takes
// over the reading after 2ms, so the plugin's other calls wait that long
// at most.
//
// Serve sets the garbage collector's target to 400 (GOGC=400) unless GOGC
// is set in the plugin's environment, which it inherits from the node, or
// the plugin set its own (debug.SetGCPercent) before: a plugin's heap is
// small, and collecting it at Go's default pace takes CPU from the node
// beside it.
//
// A plugin can also run code of its own, for instance a consumer-side
// plugin (listed in consumer.plugins) that serves nothing and only calls.
// Run gives it a Caller as soon as the node has connected, and ends its
// context when the node stops the plugin:
//
//	func main() {
//		err := sdk.Run(func(ctx context.Context, c *sdk.Caller) error {
//			for ctx.Err() == nil {
//				v, err := c.Call(ctx, "org.example.Greeter:1.0.0", "sayHello", []string{"java.lang.String"}, "world")
//				slog.Info("sayHello", "reply", v, "err", err)
//				select {
//				case <-ctx.Done():
//				case <-time.After(time.Second):
//				}
//			}
//			return nil
//		})
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//	}
//
// ServeWith(Options{Start: f}, services...) runs f beside serving services;
// there f reaches the node with Client(ctx). An error from the start hook
// ends the plugin, and the node restarts it with backoff. Serve points
// log/slog's default logger at the node's log, where records keep their
// level and attributes and are tagged with the plugin's name; anything
// printed to stdout or stderr lands there too.
//
// Package sdktest calls a plugin's handlers in a test without a node,
// through the node's encoding and the dispatch Serve uses (ServeConn), so
// that a type that would not cross the wire fails the test.
// NewDispatcher serves Dubbo handlers in-process without any encoding.
package sdk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/dubbo-lab/dubbo/node/provider/settings"
	"github.com/dubbo-lab/dubbo/plugins/internal/wire"
)

// Service is one Dubbo service served by a handler.
type Service struct {
	// Interface is the Java interface name, e.g. org.example.Greeter. Required.
	Interface string
	// Version of the service. Default "" (none; "0.0.0" is the same).
	Version string
	// Group of the service. Default "" (none).
	Group string
	// Handler is the value whose methods are served. Required.
	Handler any
	// Signatures override the Java types derived from the Go signature, by
	// Dubbo method name (sayHello). A zero field keeps the derived one, so
	// Signature{Returns: "java.lang.Integer"} changes only the return type.
	// Default none.
	Signatures map[string]Signature
	// Settings are the service's Dubbo settings (weight, tag, timeout,
	// retries, loadbalance, warmup, token, executes, actives, delay,
	// parameters), which the node writes into its provider URL as Java's
	// ServiceConfig does; a [[provider.services]] table in the node's
	// config wins over each of them. Default none: the node's.
	Settings Settings
}

// Settings are Dubbo's settings of one service, by Java's names:
//
//	sdk.Service{Interface: "org.example.Greeter", Handler: Greeter{},
//		Settings: sdk.Settings{Weight: new(200), Tag: "gray", Timeout: 3 * time.Second, Executes: 10}}
//
// A negative number or a malformed parameter makes Serve fail at once.
type Settings = settings.Settings

// Signature is the Java view of one method.
type Signature struct {
	// Params are the Java parameter type names, one per argument after ctx.
	Params []string
	// Returns is the Java return type name; "void" for methods returning
	// only an error.
	Returns string
}

// Options are what ServeWith takes besides the services.
type Options struct {
	// Start, when set, runs the plugin's own code once the node has
	// accepted what the plugin serves and is connected to it: a plugin that
	// calls other services on its own (a consumer-side plugin) does its
	// work here, through Client(ctx). It runs on its own goroutine, beside
	// the calls the plugin serves. ctx ends when the node stops the plugin;
	// Start must then return within a second, after which the node kills
	// the process. Returning nil keeps the plugin serving its services, if
	// any, until the node stops it; returning an error ends the plugin:
	// ServeWith returns that error and the node restarts the plugin with
	// backoff. A panic is an error. Default none.
	Start func(ctx context.Context) error
}

// A Servable is what Serve serves: a Service (Dubbo, hessian2) or a
// ProtoService (protobuf).
type Servable interface{ servable() }

func (Service) servable()      {}
func (ProtoService) servable() {}

// Serve serves services to the node that launched this process and returns
// when the node closes the plugin. It returns at once with an error when the
// services are invalid (the error says which method and why) or when the
// binary was not started by a node.
func Serve(services ...Servable) error { return ServeWith(Options{}, services...) }

// Run is ServeWith for a plugin that serves nothing and only calls: f runs
// as Options.Start with the Caller to the node.
func Run(f func(ctx context.Context, c *Caller) error) error {
	return ServeWith(Options{Start: func(ctx context.Context) error { return f(ctx, Client(ctx)) }})
}

// ServeWith is Serve with options: it serves services, which may be none
// when opts.Start is set, and returns when the node closes the plugin (nil)
// or when opts.Start failed (its error).
func ServeWith(opts Options, services ...Servable) error {
	sv, err := newServed(services)
	if err != nil {
		return err
	}
	if len(services) == 0 && opts.Start == nil {
		return errorf("nothing to run: give Serve at least one Service, or use Run (or ServeWith with Options.Start) for a plugin that only calls")
	}
	if os.Getenv(wire.Handshake.MagicCookieKey) != wire.Handshake.MagicCookieValue {
		return errors.New("this program is a Dubbo handler plugin: list it in provider.plugins (or consumer.plugins) of the node's config instead of running it")
	}
	if pct := gcPercent(os.LookupEnv, currentGCPercent()); pct != 0 {
		debug.SetGCPercent(pct)
	}
	// go-plugin turns os.Stderr into a pipe to the node's SyncStderr after
	// Serve starts; the real stderr is read by the node as structured log
	// lines, so slog goes there.
	stderr := os.Stderr
	slog.SetDefault(slog.New(newHostLogHandler(stderr)))
	stop := watchParent(time.Second)
	defer stop()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := newServer(ctx, sv, opts.Start)
	link, err := wire.PluginLink()
	if err != nil {
		return err
	}
	defer link.Close()
	srv.caller = &Caller{host: link}
	link.Start(srv)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: wire.Handshake,
		Plugins:         plugin.PluginSet{wire.PluginName: &wire.GRPCPlugin{Handler: srv}},
		GRPCServer:      srv.newGRPCServer,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:       "go-plugin",
			Level:      hclog.Warn,
			Output:     stderr,
			JSONFormat: true,
		}),
	})
	// The node closed the plugin, or the start hook failed and stopped the
	// server: either way the hook's context ends now.
	cancel()
	return srv.wait(time.Second)
}

// pluginGCPercent is the garbage collector's target in a plugin: a
// plugin's heap is small and its calls allocate, so at Go's default (100)
// it collects every few thousand calls, and each collection's idle mark
// worker takes a core the node could use. At 400 it collects a quarter as
// often, for a few MB more: BenchmarkProviderPathTurns at 32 callers, in
// alternating runs, made 0.896 0.900 0.889 0.875 of the floor at 100 and
// 0.897 0.911 0.921 0.914 at 400.
const pluginGCPercent = 400

// gcPercent is the target Serve sets: pluginGCPercent, or 0 (leave it)
// when GOGC in the plugin's environment decides, or the plugin set its
// own target (current, not Go's default of 100) before Serve.
func gcPercent(lookupEnv func(string) (string, bool), current int) int {
	if _, set := lookupEnv("GOGC"); set || current != 100 {
		return 0
	}
	return pluginGCPercent
}

// currentGCPercent is the collector's target now.
func currentGCPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 100 // not reported: take Go's default
	}
	return int(s[0].Value.Uint64())
}

// watchParent exits the process when the node that started it is gone
// (its parent changed), so a node killed with SIGKILL leaves no plugin
// behind. The returned func stops the watch.
func watchParent(every time.Duration) (stop func()) {
	parent := os.Getppid()
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if os.Getppid() != parent {
					slog.Error("the node that started this plugin is gone; exiting", "parent", parent)
					os.Exit(2)
				}
			}
		}
	}()
	return func() { close(done) }
}

// served is what a plugin serves: its Dubbo services (the Dispatcher),
// its protobuf ones, and the description of both.
type served struct {
	d      *Dispatcher
	protos *protoServices
	desc   wire.Description
}

// newServed checks services and prepares them; the error names the
// service and method at fault and how to fix it.
func newServed(services []Servable) (*served, error) {
	var dubbo []Service
	var protos []ProtoService
	for _, s := range services {
		switch s := s.(type) {
		case Service:
			dubbo = append(dubbo, s)
		case ProtoService:
			protos = append(protos, s)
		case *Service:
			if s == nil {
				return nil, errorf("a nil *sdk.Service")
			}
			dubbo = append(dubbo, *s)
		case *ProtoService:
			if s == nil {
				return nil, errorf("a nil *sdk.ProtoService")
			}
			protos = append(protos, *s)
		case nil:
			return nil, errorf("a nil service")
		}
	}
	d, err := NewDispatcher(dubbo...)
	if err != nil {
		return nil, err
	}
	ps, err := newProtoServices(len(d.desc.Services), protos)
	if err != nil {
		return nil, err
	}
	sv := &served{d: d, protos: ps, desc: wire.Description{Services: slices.Clone(d.desc.Services)}}
	for _, p := range ps.services {
		sv.desc.Services = append(sv.desc.Services, p.desc)
	}
	// What the node will check, checked here, where the error reaches the
	// author: a Dubbo and a protobuf service of one name, for one.
	if err := sv.desc.Validate(); err != nil {
		return nil, errorf("%v", err)
	}
	return sv, nil
}

func errorf(format string, args ...any) error { return fmt.Errorf("sdk: "+format, args...) }
