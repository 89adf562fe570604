package embeddedzk

import (
	"net"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk/wire"
)

func connectReq(timeoutMs int32, sessionID int64, passwd []byte, ro bool) []byte {
	return wire.AppendFrame(nil, &wire.ConnectRequest{TimeOut: timeoutMs, SessionID: sessionID, Passwd: passwd, HasReadOnly: ro})
}

func writeFrame(t *testing.T, nc net.Conn, b []byte) {
	t.Helper()
	nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write(b); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func readFrame(t *testing.T, nc net.Conn) []byte {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := wire.ReadFrame(nc, 1<<21, nil)
	if err != nil {
		t.Fatalf("read frame: %v", err)
	}
	return b
}

// rawClient speaks the protocol by hand for what go-zookeeper cannot send.
type rawClient struct {
	t      *testing.T
	nc     net.Conn
	xid    int32
	events []wire.WatcherEvent
	resp   wire.ConnectResponse
}

func newRawClient(t *testing.T, s *Server, timeoutMs int32) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	rc := &rawClient{t: t, nc: nc}
	writeFrame(t, nc, connectReq(timeoutMs, 0, make([]byte, 16), false))
	if err := wire.Unmarshal(readFrame(t, nc), &rc.resp); err != nil || rc.resp.SessionID == 0 {
		t.Fatalf("handshake: %+v %v", rc.resp, err)
	}
	return rc
}

func (rc *rawClient) send(op wire.OpCode, rec wire.Record) int32 {
	rc.xid++
	writeFrame(rc.t, rc.nc, wire.AppendFrame(nil, &wire.RequestHeader{Xid: rc.xid, Type: op}, rec))
	return rc.xid
}

// call sends a request and returns its reply header and body, collecting
// any notifications that arrive first.
func (rc *rawClient) call(op wire.OpCode, rec wire.Record) (wire.ReplyHeader, []byte) {
	rc.t.Helper()
	xid := rc.send(op, rec)
	for {
		b := readFrame(rc.t, rc.nc)
		var h wire.ReplyHeader
		d := wire.NewDecoder(b)
		h.Decode(d)
		body := b[d.Offset():]
		if h.Xid == wire.XidNotification {
			var ev wire.WatcherEvent
			if err := wire.Unmarshal(body, &ev); err != nil {
				rc.t.Fatal(err)
			}
			rc.events = append(rc.events, ev)
			continue
		}
		if h.Xid != xid {
			rc.t.Fatalf("reply xid %d, want %d", h.Xid, xid)
		}
		return h, body
	}
}

// closed reports whether the server closed the socket within d.
func (rc *rawClient) closed(d time.Duration) bool {
	rc.nc.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 64)
	for {
		_, err := rc.nc.Read(buf)
		if err != nil {
			ne, ok := err.(net.Error)
			return !(ok && ne.Timeout())
		}
	}
}
