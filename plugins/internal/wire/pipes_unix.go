//go:build unix

package wire

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/dubbo-lab/dubbo/internal/sockio"
)

// LinkFDEnv names the environment variable that tells a plugin which of
// its file descriptors are its ends of the link: "r,w", the pipe it reads
// and the pipe it writes.
const LinkFDEnv = "DUBBO_PLUGIN_LINK_FD"

// pipeSize is the capacity asked of each pipe (Linux's limit for an
// unprivileged process by default; the system's default is 64 KiB).
const pipeSize = 1 << 20

// ChildEnds are the plugin's ends of a link, in the node until the plugin
// starts.
type ChildEnds struct{ r, w *os.File }

// NewLinkPipes makes the link: a pipe each way. node is the node's end;
// child the plugin's, to be passed as the first exec.Cmd.ExtraFiles
// (Files, with Env) and closed by the node once the plugin started. Only
// the two processes hold them: no address another process could open.
//
// Pipes, not a socket pair (sockio.PipeConn): the socket pair cost each
// side a wake-up of a thread for nothing per call.
func NewLinkPipes() (node net.Conn, child ChildEnds, err error) {
	var toPlugin, toNode [2]*os.File
	if toPlugin[0], toPlugin[1], err = os.Pipe(); err != nil {
		return nil, ChildEnds{}, fmt.Errorf("pipes for the plugin link: %w", err)
	}
	if toNode[0], toNode[1], err = os.Pipe(); err != nil {
		toPlugin[0].Close()
		toPlugin[1].Close()
		return nil, ChildEnds{}, fmt.Errorf("pipes for the plugin link: %w", err)
	}
	for _, f := range []*os.File{toPlugin[1], toNode[1]} {
		growPipe(f)
	}
	return sockio.NewPipeConn(toNode[0], toPlugin[1]), ChildEnds{r: toPlugin[0], w: toNode[1]}, nil
}

// growPipe asks for a larger pipe: fewer writes wait for the reader when
// calls are large. The default serves too.
func growPipe(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize) })
	}
}

// Files are the ends to pass as the first two exec.Cmd.ExtraFiles.
func (c ChildEnds) Files() []*os.File { return []*os.File{c.r, c.w} }

// Env is the environment entry that tells the plugin where Files are.
func (ChildEnds) Env() string { return LinkFDEnv + "=3,4" }

// Close closes the node's copies of the plugin's ends.
func (c ChildEnds) Close() error { return errors.Join(c.r.Close(), c.w.Close()) }

// Conn is the plugin's end in this process, for a plugin that runs in it
// (tests); Close is then not called.
func (c ChildEnds) Conn() net.Conn { return sockio.NewPipeConn(c.r, c.w) }

// PluginLink opens, in a plugin, the link the node passed it (LinkFDEnv);
// Start it to serve the node's calls.
func PluginLink() (*Link, error) {
	v := os.Getenv(LinkFDEnv)
	rs, ws, _ := strings.Cut(v, ",")
	r, rerr := strconv.Atoi(rs)
	w, werr := strconv.Atoi(ws)
	if rerr != nil || werr != nil || r < 3 || w < 3 || r == w {
		return nil, fmt.Errorf("no link to the node: %s=%q is not two file descriptors (start this plugin from a node of the same version)", LinkFDEnv, v)
	}
	var ends [2]*os.File
	for i, fd := range []int{r, w} {
		// Passed blocking, as exec passes files; the runtime's poller
		// takes a non-blocking one.
		if err := syscall.SetNonblock(fd, true); err != nil {
			return nil, fmt.Errorf("no link to the node on file descriptor %d: %w", fd, err)
		}
		syscall.CloseOnExec(fd)
		ends[i] = os.NewFile(uintptr(fd), "dubbo-plugin-link")
	}
	return NewLink(sockio.NewPipeConn(ends[0], ends[1])), nil
}
