package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dubbo-lab/dubbo/node/registry/zookeeper"
	"github.com/dubbo-lab/dubbo/scaffold"
)

// goSum is this module's go.sum: it seeds a new handler module's, so that
// the go command finds the hashes of the dependencies it shares with a
// release of this binary.
//
//go:embed go.sum
var goSum []byte

func newNewCommand(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "new",
		Short: "Start something new: a handler plugin",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usage(errors.New("new what? dubbo new handler NAME"))
		},
	}
	cmd.AddCommand(newHandlerCommand(g))
	return cmd
}

// handlerFlags are `dubbo new handler`'s.
type handlerFlags struct {
	iface, proto, fromRegistry string
	registry, version, group   string
}

func newHandlerCommand(g *globalFlags) *cobra.Command {
	var f handlerFlags
	cmd := &cobra.Command{
		Use:   "handler NAME [--interface I | --proto FILE | --from-registry I [--registry URL]]",
		Short: "Write a handler plugin module in ./NAME that builds and passes its own test",
		Long: `Write a handler plugin module in ./NAME that builds and passes its own test:
go.mod (requiring this dubbo's version, or a replace by its checkout when it
is a development build), main.go, main_test.go (calls through package
plugins/sdk/sdktest) and a README.md with the line to add to dubbo.toml.

The handler is a Dubbo service with one example method, sayHello (its
interface is --interface, default com.example.<Name>); with --proto, the
services of a .proto file (Triple/gRPC callers), their Go code generated
with protoc; with --from-registry, a running service as the registry's
metadata describes it: its methods with their Java signatures and Go
structs for its POJOs, so that a Go handler can take it over or stand in
for it.

NAME is a lower-case Go identifier; ./NAME must not exist. The go command
then completes go.mod and go.sum (go mod tidy).`,
		Example: `  dubbo new handler hello
  dubbo new handler orders --interface com.example.OrderService --version 1.0.0
  dubbo new handler greet --proto greet.proto
  dubbo new handler greeter --from-registry org.example.Greeter --registry zookeeper://127.0.0.1:2181`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return newHandler(cmd, g, f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.iface, "interface", "", "the Java interface the handler serves (default com.example.<Name>)")
	fl.StringVar(&f.proto, "proto", "", "a .proto file: serve its services (needs protoc)")
	fl.StringVar(&f.fromRegistry, "from-registry", "", "the interface of a running service to implement, as the registry's metadata describes it")
	fl.StringVar(&f.registry, "registry", "", "the registry of --from-registry (default: registry.address of the config)")
	fl.StringVar(&f.version, "version", "", "the service's version (--from-registry: default the providers' when they agree)")
	fl.StringVar(&f.group, "group", "", "the service's group (as --version)")
	fl.StringVarP(&g.configPath, "config", "c", "", "config file of --from-registry's registry (default dubbo.toml in the current directory, if present)")
	return cmd
}

// newHandler writes the module and tidies it.
func newHandler(cmd *cobra.Command, g *globalFlags, f handlerFlags, name string) error {
	ctx := cmd.Context()
	given := 0
	for _, v := range []string{f.iface, f.proto, f.fromRegistry} {
		if v != "" {
			given++
		}
	}
	if given > 1 {
		return usage(errors.New("give one of --interface, --proto and --from-registry"))
	}
	if f.registry != "" && f.fromRegistry == "" {
		return usage(errors.New("--registry is for --from-registry"))
	}
	spec := scaffold.Spec{Name: name, Interface: f.iface, Version: f.version, Group: f.group, Proto: f.proto}
	if f.fromRegistry != "" {
		e, err := readService(ctx, cmd, g, f)
		if err != nil {
			return err
		}
		spec.Existing = e
	}
	dir, err := os.Getwd()
	if err != nil {
		return err
	}
	mod, err := scaffold.Running(dir, goSum)
	if err != nil {
		return err
	}
	res, err := scaffold.Write(dir, spec, mod)
	if err != nil {
		return usage(err)
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "wrote %s/ (%s), serving %s\n", name, strings.Join(res.Files, ", "), res.Service)
	for _, n := range res.Notes {
		fmt.Fprintln(out, "  "+n)
	}
	tctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := scaffold.Tidy(tctx, res.Dir); err != nil {
		return fmt.Errorf("the module is written, but %w", err)
	}
	printNext(out, spec)
	return nil
}

// readService reads --from-registry's service from the registry the flags
// or the config name.
func readService(ctx context.Context, cmd *cobra.Command, g *globalFlags, f handlerFlags) (*scaffold.Existing, error) {
	address := f.registry
	logger, err := g.logger(cmd)
	if err != nil {
		return nil, err
	}
	if address == "" {
		cfg, _, err := g.load(cmd)
		if err != nil {
			return nil, err
		}
		address = cfg.Registry.Address
	}
	if address == "" {
		return nil, usage(errors.New("--from-registry needs a registry: give --registry zookeeper://HOST:PORT"))
	}
	if _, err := zookeeper.ParseAddress(address); err != nil {
		return nil, usage(fmt.Errorf("--registry: %w (want zookeeper://HOST:PORT[,HOST:PORT])", err))
	}
	reg, err := zookeeper.Open(ctx, address, 5*time.Second, zookeeper.Options{Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("connect to registry %s: %w", address, err)
	}
	defer reg.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return scaffold.ReadService(rctx, reg, f.fromRegistry, f.version, f.group)
}

// printNext says how to test, build and serve the new handler.
func printNext(out io.Writer, spec scaffold.Spec) {
	fmt.Fprintf(out, `
Next:
  cd %s && go test ./... && go build
then add the plugin to the provider's plugins in dubbo.toml (here):
  [provider]
  plugins = [%q]
and start it with dubbo up.
`, spec.Name, spec.PluginPath())
}
