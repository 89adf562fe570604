//go:build linux

package embeddedzk_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
	"github.com/dubbo-lab/dubbo/internal/testkit/smallfs"
)

const notServing = "This ZooKeeper instance is not currently serving requests\n"

// TestDiskFull runs `dubbo run --role=registry` with its data dir on a small
// real filesystem and fills it. Writes and new sessions are refused and
// ruok/srvr say the server is not serving; once space is freed the registry
// recovers by itself, the sessions it could not serve are still alive, and
// every acknowledged write survives a kill -9 after the episode.
func TestDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the dubbo binary")
	}
	bin := buildDubbo(t)
	mnt := smallfs.Mount(t, 4<<20)
	reg := newRegistryProcess(t, bin)
	reg.dataDir = filepath.Join(mnt, "registry")
	reg.start(t)

	c := connect(t, reg.target())
	want := writeNodes(t, c, "/before", 50)
	// A session whose timeout is shorter than the episode below.
	owner, _, err := zk.Connect([]string{reg.addr}, 2*time.Second, zk.WithLogger(nopLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	mustCreate(t, owner, "/owner", nil, zk.FlagPersistent)
	mustCreate(t, owner, "/owner/eph", nil, zk.FlagEphemeral)

	free := smallfs.Fill(t, mnt, 8<<20)
	// The log file's last page may take a few more writes.
	data := []byte(strings.Repeat("x", 1000))
	var failed error
	for i := 0; i < 200 && failed == nil; i++ {
		p := fmt.Sprintf("/during-%03d", i)
		if _, err := c.Create(p, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
			failed = err
			break
		}
		want.nodes[p] = nodeWant{string(data), 0}
	}
	if failed == nil {
		t.Fatal("200 writes of 1 KB succeeded on a full filesystem")
	}
	t.Logf("write refused on the full disk: %v", failed)

	waitFor(t, "ruok to stop answering imok", func() bool {
		out, _ := apachezk.FourLetter(reg.addr, "ruok", time.Second)
		return out != "imok"
	})
	if out, err := apachezk.FourLetter(reg.addr, "srvr", time.Second); out != notServing {
		t.Errorf("srvr on a full disk = %q, %v; want %q", out, err, notServing)
	}
	// New sessions are refused too, and nothing recovers while it is full:
	// the episode outlasts the owner's 2s session.
	newcomer, events, err := zk.Connect([]string{reg.addr}, 4*time.Second, zk.WithLogger(nopLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(4 * time.Second)
wait:
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				t.Fatal("a new session was established on a full disk")
			}
		case <-deadline:
			break wait
		}
	}
	newcomer.Close()
	if out, _ := apachezk.FourLetter(reg.addr, "ruok", time.Second); out == "imok" {
		t.Fatal("ruok says imok while the disk is still full")
	}

	free()
	waitFor(t, "ruok to answer imok after space was freed", func() bool {
		out, _ := apachezk.FourLetter(reg.addr, "ruok", time.Second)
		return out == "imok"
	})
	if out, err := apachezk.FourLetter(reg.addr, "srvr", time.Second); err != nil || !strings.Contains(out, "Mode: standalone") {
		t.Errorf("srvr after recovery = %q, %v", out, err)
	}
	waitFor(t, "the first client to resume its session", func() bool { return c.State() == zk.StateHasSession })
	after := writeNodes(t, c, "/after", 20)
	// The ephemeral's session was not expired while it could not be served.
	waitFor(t, "the owner to resume its session", func() bool { return owner.State() == zk.StateHasSession })
	if ok, _, err := c.Exists("/owner/eph"); err != nil || !ok {
		t.Errorf("ephemeral of a session the server could not serve: exists %v, %v", ok, err)
	}

	reg.kill9(t)
	reg.start(t)
	c = connect(t, reg.target())
	checkNodes(t, c, want)
	checkNodes(t, c, after)
}

// waitFor polls cond for up to 20 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
