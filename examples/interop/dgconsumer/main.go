// Command dgconsumer is a stock dubbo-go v3.3.0 consumer of the example
// service org.example.Greeter:1.0.0 over the dubbo protocol with hessian2,
// or with -protocol tri over Triple: org.example.Greeter in wrapper mode
// (hessian2, as dubbo-go calls a Java-interface service), or with -service
// greet.GreetService the protobuf service's four methods.
// It is a test peer: it makes the requested calls and prints one JSON object
// per call on stdout,
//
//	{"method":"add","result":5,"error":"","type":"int32","ok":true}
//
// where type is the Go type dubbo-go decoded the hessian result into, and ok
// says whether the call behaved as the example service promises. It exits 0
// when every call was ok, 1 otherwise, 2 on bad usage. dubbo-go logs go to
// stderr.
//
//	dgconsumer -registry zookeeper://127.0.0.1:2181 -calls all
//	dgconsumer -url dubbo://127.0.0.1:20880 -calls sayHello,add -n 10
//	dgconsumer -url tri://127.0.0.1:50051 -protocol tri -service greet.GreetService
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	"dubbo.apache.org/dubbo-go/v3"
	"dubbo.apache.org/dubbo-go/v3/client"
	_ "dubbo.apache.org/dubbo-go/v3/imports"

	"github.com/dubbo-lab/dubbo/examples/interop/dgrun"
	"github.com/dubbo-lab/dubbo/examples/interop/greet"
	"github.com/dubbo-lab/dubbo/examples/interop/greeter"
)

// callResult is one output line.
type callResult struct {
	Method string `json:"method"`
	Result any    `json:"result"`
	Error  string `json:"error"`
	Type   string `json:"type"`
	OK     bool   `json:"ok"`
}

// call is one method of the example service with its arguments (Go types
// chosen for the Java signature: int32 is int, a map is java.util.Map) and
// the check of its outcome; or, with run set, a call of greet.GreetService
// that makes itself.
type call struct {
	method string
	args   []any
	check  func(result any, err error) bool
	run    func(ctx context.Context, conn *client.Connection, opts []client.CallOption) (any, error)
}

func calls(sleepMS int32) []call {
	return []call{
		{method: "sayHello", args: []any{"world"}, check: func(r any, err error) bool {
			return err == nil && r == "Hello, world"
		}},
		{method: "add", args: []any{int32(2), int32(3)}, check: func(r any, err error) bool {
			return err == nil && r == int32(5)
		}},
		{method: "echoMap", args: []any{map[string]any{"k": "v", "n": "1"}}, check: func(r any, err error) bool {
			return err == nil && reflect.DeepEqual(stringKeys(r), map[string]any{"k": "v", "n": "1"})
		}},
		{method: "fail", args: []any{"boom"}, check: func(_ any, err error) bool {
			return err != nil && strings.Contains(err.Error(), "boom")
		}},
		{method: "sleep", args: []any{sleepMS}, check: func(r any, err error) bool {
			return err == nil && r == "slept"
		}},
	}
}

func main() {
	out := dgrun.TakeStdout()
	var (
		proto          = flag.String("protocol", dgrun.ProtocolDubbo, "dubbo (hessian2) or tri (Triple: the Java interface in wrapper mode, or -service greet.GreetService)")
		service        = flag.String("service", greeter.Interface, "org.example.Greeter, or over tri greet.GreetService")
		registryAddr   = flag.String("registry", "", "registry URL, zookeeper://host:port")
		registerMode   = flag.String("register-mode", dgrun.ModeInterface, "how to register and discover: interface, instance (application level, dubbo-go's default) or all")
		direct         = flag.String("url", "", "direct provider URL, dubbo://host:port (bypasses the registry)")
		which          = flag.String("calls", "all", "all, or a comma-separated list of sayHello,add,echoMap,fail,sleep")
		n              = flag.Int("n", 1, "repetitions of the call list")
		app            = flag.String("app", "dgconsumer", "application name")
		version        = flag.String("version", greeter.Version, "service version")
		group          = flag.String("group", "", "service group")
		timeout        = flag.Duration("timeout", 3*time.Second, "per-call timeout (always sent: without it dubbo-go sends timeout=0)")
		retries        = flag.Int("retries", -1, "failover retries (-1 = dubbo-go default)")
		sleepMS        = flag.Int("sleep-ms", 10, "argument of sleep")
		wait           = flag.Duration("wait", 15*time.Second, "with a registry, how long the first call retries while no provider is known")
		sessionTimeout = flag.Duration("session-timeout", 0, "ZooKeeper session timeout (0 = dubbo-go's 5s)")
		logLevel       = flag.String("log-level", "warn", "dubbo-go log level: debug, info, warn, error")
	)
	flag.Parse()
	if (*registryAddr == "") == (*direct == "") {
		fmt.Fprintln(os.Stderr, "dgconsumer: give exactly one of -registry and -url")
		os.Exit(2)
	}
	if *proto != dgrun.ProtocolDubbo && *proto != dgrun.ProtocolTriple ||
		*service != greeter.Interface && (*service != greet.Service || *proto != dgrun.ProtocolTriple) {
		fmt.Fprintf(os.Stderr, "dgconsumer: -protocol %q -service %q: want dubbo or tri, and %s, or over tri %s\n", *proto, *service, greeter.Interface, greet.Service)
		os.Exit(2)
	}
	all := calls(int32(*sleepMS))
	if *service == greet.Service {
		all = greetCalls()
	}
	plan, err := selectCalls(all, *which)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dgconsumer:", err)
		os.Exit(2)
	}

	enc := json.NewEncoder(out)
	if *service == greet.Service {
		*version = "" // the protobuf service has none
	}
	var methods []string
	for _, c := range all {
		methods = append(methods, c.method)
	}
	conn, err := connect(*proto, *service, methods, *registryAddr, *registerMode, *direct, *app, *version, *group, *retries, *sessionTimeout, *logLevel)
	if err != nil {
		// Still one line per planned call, so that a test sees each fail.
		fmt.Fprintln(os.Stderr, "dgconsumer:", err)
		for i := 0; i < *n; i++ {
			for _, c := range plan {
				_ = enc.Encode(callResult{Method: c.method, Error: err.Error()})
			}
		}
		os.Exit(1)
	}

	allOK := true
	waitUntil := time.Time{}
	if *registryAddr != "" {
		waitUntil = time.Now().Add(*wait)
	}
	for i := 0; i < *n; i++ {
		for _, c := range plan {
			result, err := invoke(conn, c, *timeout, waitUntil)
			waitUntil = time.Time{} // only the very first call waits for providers
			line := callResult{Method: c.method, Result: jsonable(result), Type: fmt.Sprintf("%T", result), OK: c.check(result, err)}
			if result == nil {
				line.Type = ""
			}
			if err != nil {
				line.Error = err.Error()
			}
			allOK = allOK && line.OK
			if err := enc.Encode(line); err != nil {
				fmt.Fprintln(os.Stderr, "dgconsumer:", err)
				os.Exit(1)
			}
		}
	}
	if !allOK {
		os.Exit(1)
	}
	os.Exit(0)
}

func selectCalls(all []call, which string) ([]call, error) {
	if which == "all" {
		return all, nil
	}
	var plan []call
	for _, name := range strings.Split(which, ",") {
		found := false
		for _, c := range all {
			if c.method == strings.TrimSpace(name) {
				plan = append(plan, c)
				found = true
			}
		}
		if !found {
			var names []string
			for _, c := range all {
				names = append(names, c.method)
			}
			return nil, fmt.Errorf("unknown call %q (want all or %s)", name, strings.Join(names, ","))
		}
	}
	return plan, nil
}

// connect builds the client and the reference. dubbo-go dials a direct URL
// inside Dial and panics (nil pointer) when nobody listens there; that
// becomes an error.
func connect(proto, service string, methods []string, registryAddr, registerMode, direct, app, version, group string, retries int,
	sessionTimeout time.Duration, logLevel string) (conn *client.Connection, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("dubbo-go panicked while connecting: %v", p)
		}
	}()
	opts := []dubbo.InstanceOption{
		dubbo.WithName(app),
		dubbo.WithRemoteMetadata(),
		dubbo.WithLogger(dgrun.LoggerOptions(logLevel)...),
	}
	if registryAddr != "" {
		regOpts, err := dgrun.RegistryOptions(registryAddr, registerMode, sessionTimeout)
		if err != nil {
			return nil, err
		}
		opts = append(opts, dubbo.WithRegistry(regOpts...))
	}
	ins, err := dubbo.NewInstance(opts...)
	if err != nil {
		return nil, fmt.Errorf("new instance: %w", err)
	}
	// Clients default to triple with protobuf: the dubbo protocol and the
	// Java interface's hessian2 are chosen explicitly.
	cliOpts := []client.ClientOption{client.WithClientProtocolDubbo(), client.WithClientSerialization("hessian2")}
	refOpts := []client.ReferenceOption{client.WithProtocolDubbo(), client.WithSerialization("hessian2")}
	switch {
	case proto == dgrun.ProtocolTriple && service == greet.Service:
		cliOpts = []client.ClientOption{client.WithClientProtocolTriple()}
		refOpts = []client.ReferenceOption{client.WithProtocolTriple()}
	case proto == dgrun.ProtocolTriple:
		cliOpts = []client.ClientOption{client.WithClientProtocolTriple(), client.WithClientSerialization("hessian2")}
		refOpts = []client.ReferenceOption{client.WithProtocolTriple(), client.WithSerialization("hessian2")}
	}
	cli, err := ins.NewClient(cliOpts...)
	if err != nil {
		return nil, fmt.Errorf("new client: %w", err)
	}
	if version != "" {
		refOpts = append(refOpts, client.WithVersion(version))
	}
	if group != "" {
		refOpts = append(refOpts, client.WithGroup(group))
	}
	if retries >= 0 {
		refOpts = append(refOpts, client.WithRetries(retries))
	}
	if direct != "" {
		refOpts = append(refOpts, client.WithURL(direct))
	}
	if proto == dgrun.ProtocolTriple {
		// With a ClientInfo, as protoc-gen-go-triple's code dials, dubbo-go
		// takes its current Triple client; without one, its old one, which
		// sends a Java interface's arguments as an empty wrapper.
		return cli.DialWithInfo(service, &client.ClientInfo{InterfaceName: service, MethodNames: methods}, refOpts...)
	}
	return cli.Dial(service, refOpts...)
}

// invoke makes one call. Until waitUntil it retries while the registry has
// not yet delivered a provider. Panics in dubbo-go (a direct URL to a closed
// port panics in its dial) are returned as errors.
func invoke(conn *client.Connection, c call, timeout time.Duration, waitUntil time.Time) (any, error) {
	for {
		result, err := invokeOnce(conn, c, timeout)
		if err != nil && strings.Contains(err.Error(), "No provider available") && time.Now().Before(waitUntil) {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		return result, err
	}
}

func invokeOnce(conn *client.Connection, c call, timeout time.Duration) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			result, err = nil, fmt.Errorf("dubbo-go panicked: %v", p)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Second)
	defer cancel()
	if c.run != nil {
		return c.run(ctx, conn, []client.CallOption{client.WithCallRequestTimeout(timeout)})
	}
	var reply any
	err = conn.CallUnary(ctx, c.args, &reply, c.method, client.WithCallRequestTimeout(timeout))
	if err == nil && reply == nil {
		// A void method answered, or a null value.
		return nil, nil
	}
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		return reply, fmt.Errorf("%s: %w", c.method, err)
	}
	return reply, err
}

// stringKeys turns hessian's map[interface{}]interface{} into a
// string-keyed map; anything else is returned as is.
func stringKeys(v any) any {
	m, ok := v.(map[any]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for k, val := range m {
		out[fmt.Sprint(k)] = stringKeys(val)
	}
	return out
}

// jsonable makes a decoded hessian value encodable as JSON.
func jsonable(v any) any {
	switch v := v.(type) {
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, val := range v {
			out[fmt.Sprint(k)] = jsonable(val)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, val := range v {
			out[k] = jsonable(val)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, val := range v {
			out[i] = jsonable(val)
		}
		return out
	default:
		if _, err := json.Marshal(v); err != nil {
			return fmt.Sprint(v)
		}
		return v
	}
}
