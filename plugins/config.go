package plugins

import (
	"log/slog"
	"path/filepath"
	"time"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Config describes one plugin binary.
type Config struct {
	// Path of the plugin binary. Required.
	Path string
	// Args are passed to the binary. Default none.
	Args []string
	// Env is added to the node's environment for the plugin. Default none.
	Env []string
	// Name tags the plugin's log lines and errors. Default: the base name of Path.
	Name string
	// Logger receives the plugin's output and lifecycle events.
	// Default slog.Default().
	Logger *slog.Logger
	// Host answers the calls handlers make to other services (sdk.Client);
	// normally the node's consumer. Default nil: such calls fail with
	// rpc.ErrServiceNotFound.
	Host rpc.Invoker
	// StartTimeout bounds launching, the handshake and Describe.
	// Default 10s.
	StartTimeout time.Duration
}

func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = filepath.Base(c.Path)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 10 * time.Second
	}
	return c
}
