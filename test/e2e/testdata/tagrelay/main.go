// Command tagrelay is a plugin for the tag routing tests: it serves
// org.example.TagRelay 1.0.0, whose relay(tag, force) calls
// org.example.Greeter 1.0.0 sayHello through the node that launched it with
// the request tag (sdk.WithTag) and, when force is true, dubbo.force.tag,
// so that the node's consumer routes the inner call by tag.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/dubbo-lab/dubbo/plugins/sdk"
)

// Relay is the business code.
type Relay struct{}

// Relay serves relay(java.lang.String, boolean) -> java.lang.String.
func (Relay) Relay(ctx context.Context, tag string, force bool) (string, error) {
	if tag != "" {
		ctx = sdk.WithTag(ctx, tag)
	}
	if force {
		ctx = sdk.WithAttachment(ctx, "dubbo.force.tag", "true")
	}
	v, err := sdk.Client(ctx).Call(ctx, "org.example.Greeter:1.0.0", "sayHello", []string{"java.lang.String"}, "relay")
	if err != nil {
		return "", err
	}
	s, _ := v.(string)
	return s, nil
}

func main() {
	if err := sdk.Serve(sdk.Service{Interface: "org.example.TagRelay", Version: "1.0.0", Handler: Relay{}}); err != nil {
		fmt.Fprintln(os.Stderr, "tagrelay:", err)
		os.Exit(1)
	}
}
