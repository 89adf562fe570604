package embeddedzk_test

// A minimal synchronous ZooKeeper client speaking raw jute, for what
// go-zookeeper v1.0.4 cannot do: addWatch, getEphemerals, whoAmI, unknown
// opcodes, resuming a session with a chosen password, and counting every
// notification the server sends.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Opcodes and values go-zookeeper does not export.
const (
	opCreate               = 1
	opExists               = 3
	opGetData              = 4
	opSetData              = 5
	opPing                 = 11
	opGetEphemerals        = 103
	opGetAllChildrenNumber = 104
	opAuth                 = 100
	opAddWatch             = 106
	opWhoAmI               = 107

	addWatchPersistent          = 0
	addWatchPersistentRecursive = 1

	errUnimplemented = -6
)

type rawEvent struct {
	Type zk.EventType
	Path string
}

// connectReply is the server's ConnectResponse.
type connectReply struct {
	Timeout   int32
	SessionID int64
	Passwd    []byte
}

type rawConn struct {
	conn   net.Conn
	xid    int32
	events []rawEvent
	sess   connectReply
}

// dialRaw connects and performs the handshake: sessionID 0 asks for a new
// session. The connection is closed when the test ends.
func dialRaw(t testing.TB, addr string, timeoutMs int32, sessionID int64, passwd []byte) (*rawConn, connectReply) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("raw dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	if passwd == nil {
		passwd = make([]byte, 16)
	}
	var e jute
	e.int(0)  // protocolVersion
	e.long(0) // lastZxidSeen
	e.int(timeoutMs)
	e.long(sessionID)
	e.buf(passwd)
	r := &rawConn{conn: c}
	if err := r.writeFrame(e.b); err != nil {
		t.Fatalf("raw connect: %v", err)
	}
	frame, err := r.readFrame(5 * time.Second)
	if err != nil {
		t.Fatalf("raw connect reply: %v", err)
	}
	d := dec{b: frame}
	d.int() // protocolVersion
	r.sess = connectReply{Timeout: d.int(), SessionID: d.long(), Passwd: d.buf()}
	if d.err != nil {
		t.Fatalf("raw connect reply %x: %v", frame, d.err)
	}
	return r, r.sess
}

func (r *rawConn) writeFrame(body []byte) error {
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	_ = r.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := r.conn.Write(append(frame, body...))
	return err
}

func (r *rawConn) readFrame(timeout time.Duration) ([]byte, error) {
	_ = r.conn.SetReadDeadline(time.Now().Add(timeout))
	var n [4]byte
	if _, err := io.ReadFull(r.conn, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > 16<<20 {
		return nil, fmt.Errorf("frame of %d bytes", size)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(r.conn, body); err != nil {
		return nil, err
	}
	return body, nil
}

// call sends one request and returns the reply's error code and body,
// collecting notifications that arrive before it.
func (r *rawConn) call(op int32, body []byte) (int32, *dec, error) {
	r.xid++
	xid := r.xid
	if op == opPing {
		xid = -2
	}
	var e jute
	e.int(xid)
	e.int(op)
	if err := r.writeFrame(append(e.b, body...)); err != nil {
		return 0, nil, fmt.Errorf("op %d: write: %w", op, err)
	}
	for {
		frame, err := r.readFrame(10 * time.Second)
		if err != nil {
			return 0, nil, fmt.Errorf("op %d: read: %w", op, err)
		}
		d := &dec{b: frame}
		gotXid, _, code := d.int(), d.long(), d.int()
		if d.err != nil {
			return 0, nil, fmt.Errorf("op %d: reply header %x: %w", op, frame, d.err)
		}
		switch {
		case gotXid == -1:
			typ := zk.EventType(d.int())
			d.int() // state: always SyncConnected from a server
			r.events = append(r.events, rawEvent{Type: typ, Path: d.str()})
		case gotXid == xid:
			return code, d, nil
		case gotXid == -2:
		default:
			return 0, nil, fmt.Errorf("op %d: reply for xid %d, want %d", op, gotXid, xid)
		}
	}
}

// ping round-trips a ping; every notification sent before it is then in
// r.events, since a server writes events before later replies.
func (r *rawConn) ping(t testing.TB) {
	t.Helper()
	if code, _, err := r.call(opPing, nil); err != nil || code != 0 {
		t.Fatalf("ping: code %d, %v", code, err)
	}
}

// takeEvents returns and clears the collected notifications.
func (r *rawConn) takeEvents() []rawEvent {
	ev := r.events
	r.events = nil
	return ev
}

func (r *rawConn) addWatch(t testing.TB, path string, mode int32) {
	t.Helper()
	var e jute
	e.str(path)
	e.int(mode)
	code, d, err := r.call(opAddWatch, e.b)
	if err != nil || code != 0 {
		t.Fatalf("addWatch %s: code %d, %v", path, code, err)
	}
	// The reply body is an ErrorResponse holding 0.
	if v := d.int(); d.err != nil || v != 0 {
		t.Fatalf("addWatch %s: reply body %d, %v; want int 0", path, v, d.err)
	}
}

// getDataWatch is getData with watch=true.
func (r *rawConn) getDataWatch(t testing.TB, path string) []byte {
	t.Helper()
	var e jute
	e.str(path)
	e.bool(true)
	code, d, err := r.call(opGetData, e.b)
	if err != nil || code != 0 {
		t.Fatalf("getData %s: code %d, %v", path, code, err)
	}
	return d.buf()
}

// exists returns the error code of exists(path) (0 or NoNode).
func (r *rawConn) exists(path string) (int32, error) {
	var e jute
	e.str(path)
	e.bool(false)
	code, _, err := r.call(opExists, e.b)
	return code, err
}

// create makes a node with data "x" and an open ACL.
func (r *rawConn) create(t testing.TB, path string, flags int32) {
	t.Helper()
	var e jute
	e.str(path)
	e.buf([]byte("x"))
	e.int(1) // one ACL
	e.int(zk.PermAll)
	e.str("world")
	e.str("anyone")
	e.int(flags)
	if code, _, err := r.call(opCreate, e.b); err != nil || code != 0 {
		t.Fatalf("create %s: code %d, %v", path, code, err)
	}
}

// waitClosed reports whether the server closes the connection within d
// (any frames received meanwhile are dropped).
func (r *rawConn) waitClosed(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		_, err := r.readFrame(time.Until(deadline))
		if err == nil {
			continue
		}
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}
	return false
}

// jute encodes the binary archive format.
type jute struct{ b []byte }

func (e *jute) int(v int32)  { e.b = binary.BigEndian.AppendUint32(e.b, uint32(v)) }
func (e *jute) long(v int64) { e.b = binary.BigEndian.AppendUint64(e.b, uint64(v)) }
func (e *jute) str(s string) { e.int(int32(len(s))); e.b = append(e.b, s...) }
func (e *jute) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}
func (e *jute) buf(p []byte) {
	if p == nil {
		e.int(-1)
		return
	}
	e.int(int32(len(p)))
	e.b = append(e.b, p...)
}

// dec decodes the binary archive format; the first error sticks.
type dec struct {
	b   []byte
	err error
}

func (d *dec) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = fmt.Errorf("short record: need %d bytes, have %d", n, len(d.b))
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *dec) int() int32 {
	p := d.take(4)
	if p == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(p))
}

func (d *dec) long() int64 {
	p := d.take(8)
	if p == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(p))
}

func (d *dec) buf() []byte {
	n := d.int()
	if n == -1 || d.err != nil {
		return nil
	}
	return append([]byte{}, d.take(int(n))...)
}

func (d *dec) str() string { return string(d.buf()) }

func (d *dec) strings() []string {
	n := d.int()
	var out []string
	for i := int32(0); i < n && d.err == nil; i++ {
		out = append(out, d.str())
	}
	return out
}
