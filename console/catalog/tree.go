package catalog

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/node/url"
)

// ErrNoNode is returned by Browse for a path that does not exist.
var ErrNoNode = errors.New("no such registry node")

// ErrBadPath is returned by Browse for a path ZooKeeper would refuse.
var ErrBadPath = errors.New("bad registry path")

// maxShownData bounds the data Browse returns for one node.
const maxShownData = 64 << 10

// Node is one registry node as the browser shows it, secrets hidden.
type Node struct {
	Path      string    `json:"path"`
	Data      string    `json:"data"`
	Truncated bool      `json:"truncated,omitempty"`
	Binary    bool      `json:"binary,omitempty"`
	URL       string    `json:"url,omitempty"` // the node's name read as a Dubbo URL
	Ephemeral bool      `json:"ephemeral"`
	Version   int32     `json:"version"`
	Created   time.Time `json:"created"`
	Modified  time.Time `json:"modified"`
	Children  []Child   `json:"children"`
}

// Child is one child of a Node. Name is what to append to the parent's
// path to browse it (secrets hidden; Browse finds the real node).
type Child struct {
	Name string `json:"name"`
	URL  string `json:"url,omitempty"` // the name read as a Dubbo URL
}

// Browse reads one node and its children's names from ZooKeeper.
func (c *Catalog) Browse(ctx context.Context, p string) (Node, error) {
	if err := ctx.Err(); err != nil {
		return Node{}, err
	}
	if err := checkPath(p); err != nil {
		return Node{}, err
	}
	real, err := c.resolve(p)
	if err != nil {
		return Node{}, err
	}
	data, st, err := c.conn.Get(real)
	if errors.Is(err, zk.ErrNoNode) {
		return Node{}, fmt.Errorf("%w: %s", ErrNoNode, p)
	}
	if err != nil {
		return Node{}, fmt.Errorf("read %s: %w", p, err)
	}
	kids, _, err := c.conn.Children(real)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return Node{}, fmt.Errorf("children of %s: %w", p, err)
	}
	slices.Sort(kids)
	n := Node{Path: p, Ephemeral: st.EphemeralOwner != 0, Version: st.Version,
		Created: time.UnixMilli(st.Ctime), Modified: time.UnixMilli(st.Mtime), Children: make([]Child, 0, len(kids))}
	if len(data) > maxShownData {
		data, n.Truncated = data[:maxShownData], true
	}
	if utf8.Valid(data) {
		n.Data = RedactText(string(data))
	} else {
		n.Binary = true
		n.Data = fmt.Sprintf("(%d bytes of binary data)", len(data))
	}
	if u := decodedURL(lastElem(real)); u != nil {
		n.URL = u.Redacted()
	}
	for _, k := range kids {
		ch := Child{Name: redactName(k)}
		if u := decodedURL(k); u != nil {
			ch.URL = u.Redacted()
		}
		n.Children = append(n.Children, ch)
	}
	return n, nil
}

// resolve maps a path whose last element was shown redacted back to the
// real node: the parent's child whose redacted name matches.
func (c *Catalog) resolve(p string) (string, error) {
	ok, _, err := c.conn.Exists(p)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	if ok || p == "/" || (!strings.Contains(p, url.Hidden) && !strings.Contains(p, neturl.QueryEscape(url.Hidden))) {
		return p, nil
	}
	parent := p[:strings.LastIndex(p, "/")]
	if parent == "" {
		parent = "/"
	}
	kids, _, err := c.conn.Children(parent)
	if err != nil {
		return p, nil
	}
	name := lastElem(p)
	for _, k := range kids {
		if redactName(k) == name {
			return strings.TrimSuffix(parent, "/") + "/" + k, nil
		}
	}
	return p, nil
}

// redactName hides secrets in a node name, keeping its encoding: a
// query-escaped URL stays escaped, so the name is still one path element.
func redactName(k string) string {
	if d, err := neturl.QueryUnescape(k); err == nil && d != k {
		if r := redactString(d); r != d {
			return neturl.QueryEscape(r)
		}
		return k
	}
	return redactString(k)
}

func lastElem(p string) string { return p[strings.LastIndex(p, "/")+1:] }

// decodedURL reads a node name as a Dubbo URL, or nil.
func decodedURL(name string) *url.URL {
	if !strings.Contains(name, "%3A%2F%2F") && !strings.Contains(name, "://") {
		return nil
	}
	u, err := url.Decode(name)
	if err != nil {
		return nil
	}
	return u
}

// checkPath refuses what ZooKeeper would refuse, with a message that says
// why.
func checkPath(p string) error {
	switch {
	case p == "/":
		return nil
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%w %q: it must start with /", ErrBadPath, p)
	case strings.HasSuffix(p, "/"):
		return fmt.Errorf("%w %q: it must not end with /", ErrBadPath, p)
	case strings.Contains(p, "//"):
		return fmt.Errorf("%w %q: empty element", ErrBadPath, p)
	case len(p) > 4096:
		return fmt.Errorf("%w: longer than 4096 bytes", ErrBadPath)
	case !utf8.ValidString(p) || strings.ContainsRune(p, 0):
		return fmt.Errorf("%w: not valid UTF-8 text", ErrBadPath)
	}
	for _, e := range strings.Split(p[1:], "/") {
		if e == "." || e == ".." {
			return fmt.Errorf("%w %q: relative element %q", ErrBadPath, p, e)
		}
	}
	return nil
}
