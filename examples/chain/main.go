// Command chain is an example handler plugin that calls another service:
// it serves org.example.Chain 1.0.0, whose methods call
// org.example.Greeter 1.0.0 through the node that launched the plugin
// (sdk.Client), so each inner call takes the node's whole consumer path:
// registry, routers, load balancer, cluster, timeouts and retries.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/dubbo-lab/dubbo/plugins/sdk"
)

// greeter is the service the chain calls, as Dubbo's service key.
const greeter = "org.example.Greeter:1.0.0"

// Chain is the business code.
type Chain struct{}

// Relay serves relay(java.lang.String) -> java.lang.String: it asks the
// greeter to greet name and prefixes the answer, "Chain: Hello, world".
func (Chain) Relay(ctx context.Context, name string) (string, error) {
	hello, err := sayHello(ctx, name)
	if err != nil {
		return "", err
	}
	return "Chain: " + hello, nil
}

// GreetAll serves greetAll(java.util.List names) -> java.lang.String: one
// greeter call per name, joined, "Chain: Hello, a; Hello, b".
func (Chain) GreetAll(ctx context.Context, names []string) (string, error) {
	hellos := make([]string, 0, len(names))
	for _, name := range names {
		hello, err := sayHello(ctx, name)
		if err != nil {
			return "", err
		}
		hellos = append(hellos, hello)
	}
	return "Chain: " + strings.Join(hellos, "; "), nil
}

// sayHello calls org.example.Greeter.sayHello through the node. A failure
// is returned as it is: a business exception reaches our caller as that
// exception, a failed call (no provider, timeout) as a RuntimeException
// whose message names the service, the method and why.
func sayHello(ctx context.Context, name string) (string, error) {
	v, err := sdk.Client(ctx).Call(ctx, greeter, "sayHello", []string{"java.lang.String"}, name)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s sayHello returned %T, not a string", greeter, v)
	}
	return s, nil
}

func main() {
	if err := sdk.Serve(sdk.Service{Interface: "org.example.Chain", Version: "1.0.0", Handler: Chain{}}); err != nil {
		fmt.Fprintln(os.Stderr, "chain:", err)
		os.Exit(1)
	}
}
