package embeddedzk

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk/wire"
	"github.com/go-zookeeper/zk"
)

func persistCfg(dir string, snapCount int) Config {
	off := false
	return Config{
		Listen: "127.0.0.1:0", DataDir: dir, TickTime: 50 * time.Millisecond,
		MinSessionTimeout: 200 * time.Millisecond, MaxSessionTimeout: 10 * time.Second,
		Fsync: &off, SnapshotCount: snapCount,
	}
}

// Nodes, data, versions, zxid and sessions survive Close + New on the same
// data dir, whether recovery comes from the log, from snapshots, or both.
func TestRestartKeepsData(t *testing.T) {
	for _, tc := range []struct {
		name      string
		snapCount int
	}{{"log only", 1 << 30}, {"snapshots and log", 7}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s1, err := New(persistCfg(dir, tc.snapCount), discard())
			if err != nil {
				t.Fatal(err)
			}
			go s1.Serve(context.Background())
			c, ev, err := zk.Connect([]string{s1.Addr().String()}, 5*time.Second, zk.WithLogger(quietLogger{}))
			if err != nil {
				t.Fatal(err)
			}
			waitState(t, ev, zk.StateHasSession)
			acl := zk.WorldACL(zk.PermAll)
			c.Create("/p", []byte("one"), 0, acl)
			for i := 0; i < 20; i++ {
				c.Set("/p", []byte("v"+string(rune('a'+i))), -1)
			}
			c.Create("/p/s-", nil, zk.FlagSequence, acl)
			c.Create("/p/e", []byte("eph"), zk.FlagEphemeral, acl)
			c.Create("/p/gone", nil, 0, acl)
			c.Delete("/p/gone", -1)
			c.Multi(&zk.CreateRequest{Path: "/m", Data: []byte("m"), Acl: acl}, &zk.SetDataRequest{Path: "/m", Data: []byte("mm"), Version: 0})
			_, rootBefore, _ := c.Get("/")
			c.Close() // closes the session: /p/e goes
			c2, ev2, _ := zk.Connect([]string{s1.Addr().String()}, 5*time.Second, zk.WithLogger(quietLogger{}))
			waitState(t, ev2, zk.StateHasSession)
			c2.Create("/p/e2", nil, zk.FlagEphemeral, acl)
			live := c2.SessionID()
			_, before, _ := c2.Get("/p")
			zxidBefore := s1.lastZxid.Load()
			if err := s1.Close(); err != nil {
				t.Fatal(err)
			}
			c2.Close()

			start := time.Now()
			s2, err := New(persistCfg(dir, tc.snapCount), discard())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("restart took %v", time.Since(start))
			defer s2.Close()
			go s2.Serve(context.Background())
			if got := s2.lastZxid.Load(); got != zxidBefore {
				t.Fatalf("zxid after restart %#x, want %#x", got, zxidBefore)
			}
			if !s2.sessions.Alive(live) {
				t.Fatal("open session not restored")
			}
			c3, ev3, _ := zk.Connect([]string{s2.Addr().String()}, 5*time.Second, zk.WithLogger(quietLogger{}))
			defer c3.Close()
			waitState(t, ev3, zk.StateHasSession)
			data, after, err := c3.Get("/p")
			if err != nil || string(data) != "vt" || *after != *before {
				t.Fatalf("/p after restart: %q %+v (before %+v) %v", data, after, before, err)
			}
			if _, rootAfter, _ := c3.Get("/"); rootAfter.Cversion != rootBefore.Cversion {
				t.Fatalf("root cversion %d, want %d", rootAfter.Cversion, rootBefore.Cversion)
			}
			kids, _, _ := c3.Children("/p")
			if len(kids) != 2 {
				t.Fatalf("children after restart %v (want s-0000000000 and e2)", kids)
			}
			if d, _, _ := c3.Get("/m"); string(d) != "mm" {
				t.Fatalf("/m = %q", d)
			}
			if p, _ := c3.Create("/p/s-", nil, zk.FlagSequence, acl); p != "/p/s-0000000004" {
				t.Fatalf("sequence after restart: %s", p)
			}
		})
	}
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestEmptyStartIsFast(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fresh")
	best := time.Hour
	for i := 0; i < 3; i++ {
		os.RemoveAll(dir)
		start := time.Now()
		s, err := New(persistCfg(dir, 0), discard())
		if err != nil {
			t.Fatal(err)
		}
		best = min(best, time.Since(start))
		s.Close()
	}
	// Not a timing benchmark: a generous bound that only catches a startup
	// that does real work (like an fsync storm) on an empty dir.
	if best > 50*time.Millisecond {
		t.Fatalf("empty start took %v", best)
	}
}

// A session survives a restart: the client resumes it with id and password
// on the new server, and reads work even when the restored state comes from
// a snapshot alone.
func TestSessionSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := persistCfg(dir, 3)
	s1, err := New(cfg, discard())
	if err != nil {
		t.Fatal(err)
	}
	go s1.Serve(context.Background())
	rc := newRawClient(t, s1, 5000)
	for _, p := range []string{"/a", "/a/b", "/a/c", "/e"} {
		flags := int32(0)
		if p == "/e" {
			flags = wire.FlagEphemeral
		}
		if h, _ := rc.call(wire.OpCreate, &wire.CreateRequest{Path: p, Data: []byte(p), ACL: []wire.ACL{{Perms: 31, ID: wire.WorldAnyone}}, Flags: flags}); h.Err != 0 {
			t.Fatal(h.Err)
		}
	}
	zxid := s1.lastZxid.Load()
	s1.Close()
	for round := 0; round < 2; round++ { // the second round restarts from snapshot data only
		s2, err := New(cfg, discard())
		if err != nil {
			t.Fatal(err)
		}
		go s2.Serve(context.Background())
		nc, err := net.Dial("tcp", s2.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		writeFrame(t, nc, connectReq(5000, rc.resp.SessionID, rc.resp.Passwd, false))
		var resp wire.ConnectResponse
		wire.Unmarshal(readFrame(t, nc), &resp)
		if resp.SessionID != rc.resp.SessionID || resp.TimeOut != 5000 {
			t.Fatalf("round %d: resume got %+v", round, resp)
		}
		rc2 := &rawClient{t: t, nc: nc, xid: 100}
		h, body := rc2.call(wire.OpGetData, &wire.PathWatchRequest{Path: "/e"})
		var gd wire.GetDataResponse
		wire.Unmarshal(body, &gd)
		if h.Err != 0 || string(gd.Data) != "/e" || gd.Stat.EphemeralOwner != rc.resp.SessionID || h.Zxid != zxid {
			t.Fatalf("round %d: getData %v %q %+v zxid %#x want %#x", round, h.Err, gd.Data, gd.Stat, h.Zxid, zxid)
		}
		nc.Close()
		s2.Close()
	}
}
