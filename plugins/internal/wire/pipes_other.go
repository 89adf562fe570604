//go:build !unix

package wire

import (
	"errors"
	"net"
	"os"
)

// LinkFDEnv names the environment variable that tells a plugin which of
// its file descriptors are its ends of the link.
const LinkFDEnv = "DUBBO_PLUGIN_LINK_FD"

var errNoPipes = errors.New("handler plugins run on Unix systems only")

// ChildEnds are the plugin's ends of a link.
type ChildEnds struct{}

// NewLinkPipes fails: plugins run on Unix systems only.
func NewLinkPipes() (net.Conn, ChildEnds, error) { return nil, ChildEnds{}, errNoPipes }

// Files are none.
func (ChildEnds) Files() []*os.File { return nil }

// Env is LinkFDEnv's entry.
func (ChildEnds) Env() string { return LinkFDEnv + "=" }

// Close does nothing.
func (ChildEnds) Close() error { return nil }

// Conn is nil.
func (ChildEnds) Conn() net.Conn { return nil }

// PluginLink fails: plugins run on Unix systems only.
func PluginLink() (*Link, error) { return nil, errNoPipes }
