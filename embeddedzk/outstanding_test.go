package embeddedzk

import (
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk/wire"
)

// outstanding_requests (mntr's zk_outstanding_requests, srvr's
// Outstanding, the Prometheus gauge) counts the requests whose reply is not
// written yet: a client that stops reading leaves its replies queued and
// counted until it reads them, and a connection that closes with replies
// queued leaves none counted.
func TestOutstandingRequests(t *testing.T) {
	s := testServer(t, nil)
	outstanding := func() int64 {
		var b strings.Builder
		s.writeMntr(&b)
		if !strings.Contains(b.String(), "zk_outstanding_requests\t") {
			t.Fatalf("mntr has no zk_outstanding_requests:\n%s", b.String())
		}
		return s.reading().outstanding
	}
	wait := func(what string, cond func(n int64) bool) int64 {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			n := outstanding()
			if cond(n) {
				return n
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: outstanding_requests is %d after 10s", what, n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	rc := newRawClient(t, s, 10000)
	rc.nc.(*net.TCPConn).SetReadBuffer(64 << 10)
	if h, _ := rc.call(wire.OpCreate, &wire.CreateRequest{Path: "/big", Data: bytes.Repeat([]byte("x"), 512<<10),
		ACL: []wire.ACL{{Perms: 31, ID: wire.WorldAnyone}}}); h.Err != 0 {
		t.Fatalf("create: %v", h.Err)
	}
	wait("after one answered call", func(n int64) bool { return n == 0 })

	// 16 MiB of replies: more than the sockets' buffers hold.
	const calls = 32
	for range calls {
		rc.send(wire.OpGetData, &wire.PathWatchRequest{Path: "/big"})
	}
	n := wait("with the client not reading", func(n int64) bool { return n >= calls/2 })
	if n > calls {
		t.Fatalf("outstanding_requests %d, more than the %d requests sent", n, calls)
	}
	var b strings.Builder
	s.writeSrvr(&b, false)
	if strings.Contains(b.String(), "Outstanding: 0\n") {
		t.Errorf("srvr says nothing is outstanding:\n%s", b.String())
	}
	for range calls {
		readFrame(t, rc.nc)
	}
	wait("once the client read every reply", func(n int64) bool { return n == 0 })

	for range calls {
		rc.send(wire.OpGetData, &wire.PathWatchRequest{Path: "/big"})
	}
	wait("with the client not reading", func(n int64) bool { return n >= calls/2 })
	rc.nc.Close()
	wait("once the client went with its replies unread", func(n int64) bool { return n == 0 })
}
