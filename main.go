// Command dubbo runs the Apache Dubbo service architecture from one binary:
// `dubbo up` starts every role of dubbo.toml in one process, `dubbo run
// --role=NAME` runs one role. This package only parses the command line and
// loads the configuration; package roles runs the roles.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/dubbo-lab/dubbo/config"
	"github.com/dubbo-lab/dubbo/roles"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCommand(os.Stdout, os.Stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil {
		if cmd == root { // an unknown command: root itself runs nothing
			err = usage(err)
		}
		fmt.Fprintln(os.Stderr, "dubbo:", err)
		stop()
		os.Exit(exitCode(err))
	}
}

// Exit codes: 0 success; 1 a failure while running (for call and bench: a
// call failed); 2 a usage or config error (a bad flag or argument, a config
// file or value that is refused), before anything ran.
const (
	exitFailure = 1
	exitUsage   = 2
)

// usageError is an error of the command line or the configuration.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usage marks err as a usage or config error (exit code 2).
func usage(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

func exitCode(err error) int {
	var u usageError
	if errors.As(err, &u) {
		return exitUsage
	}
	return exitFailure
}

// usageArgs makes an argument check's complaint a usage error.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error { return usage(check(cmd, args)) }
}

// globalFlags are accepted by every command that loads configuration.
type globalFlags struct {
	configPath string
	sets       []string
	logLevel   string
}

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	var g globalFlags
	root := &cobra.Command{
		Use:           "dubbo",
		Short:         "Run an Apache Dubbo service architecture: registry, providers, consumers, monitor, console",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage(err) })
	pf := root.PersistentFlags()
	pf.StringArrayVar(&g.sets, "set", nil, "override a config key, e.g. --set registry.server.listen=127.0.0.1:2182 (repeatable)")
	pf.StringVar(&g.logLevel, "log-level", "info", "debug, info, warn or error (dubbo up: warn)")

	for _, cmd := range []*cobra.Command{newUpCommand(&g), newRunCommand(&g), newCallCommand(&g), newBenchCommand(&g)} {
		// -c is the config file everywhere but in bench, where it is the
		// concurrency (the command line's contract, docs/ARCHITECTURE.md); there the file is --config.
		short := "c"
		if cmd.Name() == "bench" {
			short = ""
		}
		cmd.Flags().StringVarP(&g.configPath, "config", short, "", "config file (default dubbo.toml in the current directory, if present)")
		root.AddCommand(cmd)
	}
	root.AddCommand(newNewCommand(&g), newVersionCommand())
	return root
}

// load reads the configuration named by the flags and builds the logger.
// Its errors are usage errors.
func (g *globalFlags) load(cmd *cobra.Command) (*config.File, *slog.Logger, error) {
	logger, err := g.logger(cmd)
	if err != nil {
		return nil, nil, err
	}
	path, optional := g.configPath, false
	if path == "" {
		path, optional = "dubbo.toml", true
	}
	cfg, err := config.Load(path, optional, os.Environ(), g.sets)
	if err != nil {
		return nil, nil, usage(err)
	}
	return cfg, logger, nil
}

// logger is the logger of --log-level, on stderr. Its error is a usage
// error.
func (g *globalFlags) logger(cmd *cobra.Command) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		return nil, usage(fmt.Errorf("--log-level %q: %w", g.logLevel, err))
	}
	return slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level})), nil
}

func newUpCommand(g *globalFlags) *cobra.Command {
	var build bool
	cmd := &cobra.Command{
		Use:   "up [--watch]",
		Short: "Start every role of the config file in one process: registry, monitor, providers, consumer",
		Long: `Start every role of the config file in one process: registry, monitor,
providers, consumer. The terminal shows where each role listens, each plugin
and what it serves, then what changes; the log (stderr) shows warnings and
errors, --log-level info or debug more.

A plugin binary replaced on disk (a new build) is swapped in while calls go
on: the new process takes the calls once it is up, the old one finishes its
own and stops. A build that does not start leaves the old one serving.
--watch also rebuilds each plugin with go build whenever its Go sources are
saved (the binary's directory holds its main package), printing the
compiler's errors.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("log-level") {
				g.logLevel = "warn" // the terminal says what changes
			}
			cfg, logger, err := g.load(cmd)
			if err != nil {
				return err
			}
			return runRoles(cmd, cfg, logger, roles.Up(cfg), roles.Options{Replicas: cfg.Provider.Replicas, Swap: true, Build: build})
		},
	}
	cmd.Flags().BoolVar(&build, "watch", false, "rebuild each plugin with go build when its Go sources change; the new build is swapped in")
	return cmd
}

func newRunCommand(g *globalFlags) *cobra.Command {
	var role string
	cmd := &cobra.Command{
		Use:   "run --role=registry|monitor|provider|consumer",
		Short: "Run one role of the config file",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if role == "" {
				return usage(fmt.Errorf("run: --role is required (%s)", strings.Join(roles.Known(), ", ")))
			}
			if !slices.Contains(roles.Known(), role) {
				return usage(fmt.Errorf("run: unknown role %q (known: %s)", role, strings.Join(roles.Known(), ", ")))
			}
			cfg, logger, err := g.load(cmd)
			if err != nil {
				return err
			}
			return runRoles(cmd, cfg, logger, []string{role}, roles.Options{Replicas: 1})
		},
	}
	cmd.Flags().StringVar(&role, "role", "", "the role to run: "+strings.Join(roles.Known(), ", "))
	return cmd
}

// runRoles runs the roles until the command's context ends (Ctrl-C,
// SIGTERM), with opts and what every command gives them.
func runRoles(cmd *cobra.Command, cfg *config.File, logger *slog.Logger, which []string, opts roles.Options) error {
	pluginStart, err := pluginStartTimeout()
	if err != nil {
		return err
	}
	opts.Out, opts.Logger, opts.PluginStart, opts.Version = cmd.OutOrStdout(), logger, pluginStart, versionString()
	return roles.Run(cmd.Context(), cfg, which, opts)
}

// pluginStartEnv sets how long a plugin may take to launch and complete
// its handshake (a Go duration; default 10s), mainly for tests.
const pluginStartEnv = "DUBBO_PLUGIN_START_TIMEOUT"

func pluginStartTimeout() (time.Duration, error) {
	v := os.Getenv(pluginStartEnv)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive duration such as 10s", pluginStartEnv, v)
	}
	return d, nil
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  usageArgs(cobra.NoArgs),
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "dubbo %s\n", versionString())
		},
	}
}

// versionString is the version set at build time, else the module's.
func versionString() string {
	v := version
	if bi, ok := debug.ReadBuildInfo(); ok && v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	return v
}
