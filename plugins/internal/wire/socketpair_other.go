//go:build !unix

package wire

import (
	"errors"
	"net"
	"os"
)

// LinkFDEnv names the environment variable that tells a plugin which of
// its file descriptors is its end of the link.
const LinkFDEnv = "DUBBO_PLUGIN_LINK_FD"

var errNoSocketPair = errors.New("handler plugins need Unix socket pairs, which this system does not have")

// NewSocketPair fails: plugins run on Unix systems only.
func NewSocketPair() (net.Conn, *os.File, error) { return nil, nil, errNoSocketPair }

// PluginLink fails: plugins run on Unix systems only.
func PluginLink() (*Link, error) { return nil, errNoSocketPair }
