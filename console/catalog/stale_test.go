package catalog

import (
	"fmt"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
)

// A provider killed with -9 and started again at the same address leaves
// its old node until the old session expires: the catalog lists that node
// as stale, says why, and counts one provider, not two.
func TestStaleProviderNode(t *testing.T) {
	zktest.Both(t, func(t *testing.T, addr string) {
		old := liveSession(t, addr) // the provider before the kill; its session is left to expire
		restarted := liveSession(t, addr)
		for _, p := range []string{"/dubbo", "/dubbo/com.example.S", "/dubbo/com.example.S/providers"} {
			if _, err := old.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
				t.Fatal(err)
			}
		}
		node := func(port, timestamp int, params string) string {
			u := fmt.Sprintf("dubbo://10.1.0.1:%d/com.example.S?application=shop&interface=com.example.S&side=provider&timestamp=%d%s",
				port, timestamp, params)
			return "/dubbo/com.example.S/providers/" + neturl.QueryEscape(u)
		}
		create := func(c *zk.Conn, p string) *zk.Stat {
			t.Helper()
			if _, err := c.Create(p, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatalf("create %s: %v", p, err)
			}
			_, st, err := c.Exists(p)
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
		create(old, node(20880, 1, "&session=30000"))
		// Two versions served at one address by one session are two providers.
		create(old, node(20881, 1, "&version=1.0.0"))
		create(old, node(20881, 1, "&version=2.0.0"))

		c := loadedCatalog(t, addr)
		time.Sleep(5 * time.Millisecond) // a later creation time than the old node's
		again := create(restarted, node(20880, 2, ""))

		var d ServiceDetail
		waitUntil(t, "the restarted provider listed", func() bool {
			d, _ = c.Service("com.example.S")
			return len(d.Providers) == 4
		})
		since := time.UnixMilli(again.Ctime)
		for _, p := range d.Providers {
			wantStale := p.Address == "10.1.0.1:20880" && p.Params["timestamp"] == "1"
			if p.Stale != wantStale {
				t.Errorf("%s: stale %v, want %v", p.URL, p.Stale, wantStale)
				continue
			}
			if !wantStale {
				continue
			}
			if !p.StaleSince.Equal(since) || !p.ExpiresBy.Equal(since.Add(30*time.Second)) ||
				!strings.Contains(p.StaleReason, fmt.Sprintf("0x%x", old.SessionID())) ||
				!strings.Contains(p.StaleReason, fmt.Sprintf("0x%x", restarted.SessionID())) {
				t.Errorf("stale node: since %v (want %v), expires by %v, reason %q", p.StaleSince, since, p.ExpiresBy, p.StaleReason)
			}
		}
		if rows := c.Services(); len(rows) != 3 || rows[0].Version != "" || rows[0].Providers != 1 {
			t.Errorf("services %+v, want the unversioned row with 1 provider", rows)
		}
		if n := c.Counts().Providers; n != 3 {
			t.Errorf("counted %d providers, want 3", n)
		}

		// The old session expires: its nodes go, and the mark with them.
		old.Close()
		waitUntil(t, "the old session's nodes gone", func() bool {
			d, _ = c.Service("com.example.S")
			return len(d.Providers) == 1 && !d.Providers[0].Stale && c.Counts().Providers == 1
		})
	})
}

// liveSession is a plain client with its session established.
func liveSession(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	for deadline := time.After(10 * time.Second); ; {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn
			}
		case <-deadline:
			t.Fatalf("no session with %s", addr)
		}
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the catalog did not show %s within 10s", what)
		}
	}
}
