package tree

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/dubbo-lab/dubbo/embeddedzk/wire"
)

const (
	snapMagic    = "ZKGOSNAP"
	snapFormat   = 1
	snapMaxEntry = 64 << 20
)

// ErrBadSnapshot means a snapshot stream is truncated or corrupt.
var ErrBadSnapshot = errors.New("tree: bad snapshot")

// Image is a consistent copy of the tree and session table, taken under the
// server's lock and written out without it. Nodes are listed parents first.
type Image struct {
	LastZxid int64
	paths    []string
	nodes    []node // children omitted
	sessions map[int64]SessionInfo
}

// Image copies the tree's state. Data and ACL slices are shared: they are
// never changed in place.
func (t *Tree) Image() *Image {
	im := &Image{
		LastZxid: t.lastZxid,
		paths:    make([]string, 0, len(t.nodes)),
		nodes:    make([]node, 0, len(t.nodes)),
		sessions: t.Sessions(),
	}
	var walk func(p string)
	walk = func(p string) {
		n := t.nodes[p]
		c := *n
		c.children = nil
		im.paths = append(im.paths, p)
		im.nodes = append(im.nodes, c)
		for name := range n.children {
			if p == "/" {
				walk("/" + name)
			} else {
				walk(p + "/" + name)
			}
		}
	}
	walk("/")
	return im
}

// NodeCount is the number of nodes in the image.
func (im *Image) NodeCount() int { return len(im.paths) }

// WriteTo writes the image as length-prefixed records.
func (im *Image) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	cw := &countWriter{w: bw}
	rec := func(fill func(e *wire.Encoder)) error {
		e := wire.NewEncoder(make([]byte, 4, 256))
		fill(e)
		b := e.Bytes()
		n := len(b) - 4
		b[0], b[1], b[2], b[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
		_, err := cw.Write(b)
		return err
	}
	if err := rec(func(e *wire.Encoder) {
		e.String(snapMagic)
		e.Byte(snapFormat)
		e.Int64(im.LastZxid)
		e.Int64(int64(len(im.paths)))
		e.Int64(int64(len(im.sessions)))
	}); err != nil {
		return cw.n, fmt.Errorf("write snapshot header: %w", err)
	}
	for i := range im.paths {
		n := &im.nodes[i]
		if err := rec(func(e *wire.Encoder) {
			e.String(im.paths[i])
			e.Buffer(n.data)
			e.ACLs(n.acl)
			e.Int64(n.czxid)
			e.Int64(n.mzxid)
			e.Int64(n.pzxid)
			e.Int64(n.ctime)
			e.Int64(n.mtime)
			e.Int64(n.owner)
			e.Int32(n.version)
			e.Int32(n.cversion)
			e.Int32(n.aversion)
		}); err != nil {
			return cw.n, fmt.Errorf("write snapshot node %s: %w", im.paths[i], err)
		}
	}
	for id, s := range im.sessions {
		if err := rec(func(e *wire.Encoder) {
			e.Int64(id)
			e.Int32(s.Timeout)
			e.Buffer(s.Passwd)
		}); err != nil {
			return cw.n, fmt.Errorf("write snapshot session: %w", err)
		}
	}
	if err := rec(func(e *wire.Encoder) { e.String(snapMagic) }); err != nil {
		return cw.n, fmt.Errorf("write snapshot trailer: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return cw.n, fmt.Errorf("flush snapshot: %w", err)
	}
	return cw.n, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Load rebuilds a tree from a snapshot written by Image.WriteTo.
func Load(r io.Reader) (*Tree, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	next := func() (*wire.Decoder, error) {
		b, err := wire.ReadFrame(br, snapMaxEntry, buf)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadSnapshot, err)
		}
		buf = b
		return wire.NewDecoder(b), nil
	}
	d, err := next()
	if err != nil {
		return nil, err
	}
	magic, format := d.String(), d.Byte()
	last, nodeCount, sessCount := d.Int64(), d.Int64(), d.Int64()
	if d.Err() != nil || magic != snapMagic || format != snapFormat || nodeCount < 1 || sessCount < 0 {
		return nil, fmt.Errorf("%w: header", ErrBadSnapshot)
	}
	t := New()
	t.nodes = make(map[string]*node, min(nodeCount, 1<<16)) // the count is not trusted yet
	t.dataSize = 0
	for i := int64(0); i < nodeCount; i++ {
		if d, err = next(); err != nil {
			return nil, err
		}
		p := d.String()
		n := &node{data: d.Buffer()}
		n.acl = t.intern(d.ACLs())
		n.czxid, n.mzxid, n.pzxid = d.Int64(), d.Int64(), d.Int64()
		n.ctime, n.mtime, n.owner = d.Int64(), d.Int64(), d.Int64()
		n.version, n.cversion, n.aversion = d.Int32(), d.Int32(), d.Int32()
		if d.Err() != nil {
			return nil, fmt.Errorf("%w: node %d: %v", ErrBadSnapshot, i, d.Err())
		}
		if p != "/" {
			parentPath, name, ok := parentOf(p)
			parent := t.nodes[parentPath]
			if !ok || parent == nil || t.nodes[p] != nil {
				return nil, fmt.Errorf("%w: node %s before its parent", ErrBadSnapshot, p)
			}
			if parent.children == nil {
				parent.children = make(map[string]struct{})
			}
			parent.children[name] = struct{}{}
		}
		t.nodes[p] = n
		t.dataSize += int64(len(p) + len(n.data))
		t.track(p, n.owner, true)
	}
	if t.nodes["/"] == nil {
		return nil, fmt.Errorf("%w: no root", ErrBadSnapshot)
	}
	for i := int64(0); i < sessCount; i++ {
		if d, err = next(); err != nil {
			return nil, err
		}
		id, timeout, passwd := d.Int64(), d.Int32(), d.Buffer()
		if d.Err() != nil {
			return nil, fmt.Errorf("%w: session: %v", ErrBadSnapshot, d.Err())
		}
		t.sessions[id] = SessionInfo{Timeout: timeout, Passwd: passwd}
	}
	if d, err = next(); err != nil {
		return nil, err
	}
	if d.String() != snapMagic {
		return nil, fmt.Errorf("%w: trailer", ErrBadSnapshot)
	}
	t.lastZxid = last
	return t, nil
}
