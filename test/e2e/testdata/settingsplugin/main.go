// Command settingsplugin serves org.example.Greeter 1.0.0 with Dubbo
// settings given in its sdk.Service, for the end-to-end test of settings
// that travel from a plugin to the registry.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/dubbo-lab/dubbo/plugins/sdk"
)

// Greeter serves sayHello.
type Greeter struct{}

// SayHello returns "Hello, " + name.
func (Greeter) SayHello(_ context.Context, name string) (string, error) { return "Hello, " + name, nil }

func main() {
	retries := 0
	err := sdk.Serve(sdk.Service{Interface: "org.example.Greeter", Version: "1.0.0", Handler: Greeter{},
		Settings: sdk.Settings{Weight: new(200), Tag: "gray", Timeout: 3 * time.Second, Retries: &retries, Executes: 7,
			Parameters: map[string]string{"owner": "plugin"}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "settingsplugin:", err)
		os.Exit(1)
	}
}
