//go:build unix

package wire

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
)

// LinkFDEnv names the environment variable that tells a plugin which of
// its file descriptors is its end of the link.
const LinkFDEnv = "DUBBO_PLUGIN_LINK_FD"

// NewSocketPair makes the link's socket pair: node is the node's end, child
// the plugin's, to be passed in exec.Cmd.ExtraFiles (and closed by the
// node once the plugin has started). Only the two processes hold it: no
// address another process could connect to.
func NewSocketPair() (node net.Conn, child *os.File, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socket pair for the plugin link: %w", err)
	}
	nf := os.NewFile(uintptr(fds[0]), "dubbo-plugin-link")
	defer nf.Close() // FileConn keeps a duplicate
	node, err = net.FileConn(nf)
	if err != nil {
		syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("socket pair for the plugin link: %w", err)
	}
	return node, os.NewFile(uintptr(fds[1]), "dubbo-plugin-link"), nil
}

// PluginLink opens, in a plugin, the link the node passed it (LinkFDEnv);
// Start it to serve the node's calls.
func PluginLink() (*Link, error) {
	v := os.Getenv(LinkFDEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("no link to the node: %s=%q is not a file descriptor (start this plugin from a node of the same version)", LinkFDEnv, v)
	}
	f := os.NewFile(uintptr(fd), "dubbo-plugin-link")
	defer f.Close() // FileConn keeps a duplicate, closed on exec
	conn, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("no link to the node on file descriptor %d: %w", fd, err)
	}
	return NewLink(conn), nil
}
