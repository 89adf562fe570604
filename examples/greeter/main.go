// Command greeter is the example handler plugin: it serves
// org.example.Greeter 1.0.0 (sayHello, add, echoMap, fail, sleep) to any
// Dubbo consumer through the node that launches it.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/dubbo-lab/dubbo/plugins/sdk"
)

// Greeter is the business code: plain methods, no Dubbo types.
type Greeter struct{}

// SayHello returns "Hello, " + name.
func (Greeter) SayHello(_ context.Context, name string) (string, error) {
	return "Hello, " + name, nil
}

// Add returns a + b (Java int).
func (Greeter) Add(_ context.Context, a, b int32) (int32, error) { return a + b, nil }

// EchoMap returns its argument.
func (Greeter) EchoMap(_ context.Context, m map[string]any) (map[string]any, error) { return m, nil }

// Fail throws an exception carrying msg.
func (Greeter) Fail(_ context.Context, msg string) error { return errors.New(msg) }

// Sleep waits ms milliseconds, or until the call is cancelled.
func (Greeter) Sleep(ctx context.Context, ms int32) (string, error) {
	select {
	case <-time.After(time.Duration(ms) * time.Millisecond):
		return "slept", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func main() {
	if err := sdk.Serve(sdk.Service{Interface: "org.example.Greeter", Version: "1.0.0", Handler: Greeter{}}); err != nil {
		fmt.Fprintln(os.Stderr, "greeter:", err)
		os.Exit(1)
	}
}
