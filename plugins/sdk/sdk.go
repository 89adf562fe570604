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
// and Attachments(ctx) holds the attachments the caller sent. Serve points
// log/slog's default logger at the node's log, where records keep their
// level and attributes and are tagged with the plugin's name; anything
// printed to stdout or stderr lands there too.
//
// NewDispatcher serves the same handlers in-process, which is how handler
// tests can call them without a node.
package sdk

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

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
}

// Signature is the Java view of one method.
type Signature struct {
	// Params are the Java parameter type names, one per argument after ctx.
	Params []string
	// Returns is the Java return type name; "void" for methods returning
	// only an error.
	Returns string
}

// Serve serves services to the node that launched this process and returns
// when the node closes the plugin. It returns at once with an error when the
// services are invalid (the error says which method and why) or when the
// binary was not started by a node.
func Serve(services ...Service) error {
	d, err := NewDispatcher(services...)
	if err != nil {
		return err
	}
	if os.Getenv(wire.Handshake.MagicCookieKey) != wire.Handshake.MagicCookieValue {
		return errors.New("this program is a Dubbo handler plugin: list it in provider.plugins of the node's config instead of running it")
	}
	// go-plugin turns os.Stderr into a pipe to the node's SyncStderr after
	// Serve starts; the real stderr is read by the node as structured log
	// lines, so slog goes there.
	stderr := os.Stderr
	slog.SetDefault(slog.New(newHostLogHandler(stderr)))
	stop := watchParent(time.Second)
	defer stop()

	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: wire.Handshake,
		Plugins: plugin.PluginSet{wire.PluginName: &wire.GRPCPlugin{
			Handler: func(b *plugin.GRPCBroker) wire.HandlerServer { return newServer(d, b) },
		}},
		GRPCServer: wire.NewGRPCServer,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:       "go-plugin",
			Level:      hclog.Warn,
			Output:     stderr,
			JSONFormat: true,
		}),
	})
	return nil
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

func errorf(format string, args ...any) error { return fmt.Errorf("sdk: "+format, args...) }
