package embeddedzk_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
)

// TestZkCliSmoke drives Apache's Java CLI (zkCli) against the embedded
// server: the Java client must connect, read, write, list and receive a
// watch event exactly as it does from Apache ZooKeeper.
func TestZkCliSmoke(t *testing.T) {
	apachezk.Classpath(t) // skip early when Java or the jars are missing
	tg := target{name: "embedded", addr: startEmbedded(t, confTick).String()}
	runZkCliSmoke(t, tg)
}

func runZkCliSmoke(t *testing.T, tg target) {
	const wait = 30 * time.Second // JVM start-up on a busy 2-core machine
	cli := apachezk.StartCLI(t, tg.addr)
	steps := []struct {
		command string
		want    string // a line the CLI must print in answer
	}{
		{"create /smoke v1", "Created /smoke"},
		{"get /smoke", "v1"},
		{"set /smoke v2", ""},
		{"get /smoke", "v2"},
		{"ls /", "[smoke, zookeeper]"},
		{"stat /smoke", "dataVersion = 1"},
		{"get -w /smoke", "v2"},
	}
	for _, s := range steps {
		before := len(cli.Output())
		if err := cli.Send(s.command); err != nil {
			t.Fatal(err)
		}
		if s.want == "" {
			continue
		}
		if !cli.WaitForLine(before, s.want, wait) {
			t.Fatalf("after %q the CLI output lacks %q:\n%s", s.command, s.want, cli.Output())
		}
	}

	// A change from another client reaches the CLI's watcher.
	c := connect(t, tg)
	if _, err := c.Set("/smoke", []byte("v3"), -1); err != nil {
		t.Fatalf("set from go-zookeeper: %v", err)
	}
	const event = "WatchedEvent state:SyncConnected type:NodeDataChanged path:/smoke"
	if !cli.WaitForLine(0, event, wait) {
		t.Fatalf("the CLI did not print %q:\n%s", event, cli.Output())
	}

	before := len(cli.Output())
	for _, cmd := range []string{"delete /smoke", "ls /"} {
		if err := cli.Send(cmd); err != nil {
			t.Fatal(err)
		}
	}
	if !cli.WaitForLine(before, "[zookeeper]", wait) {
		t.Fatalf("after delete, ls / does not show [zookeeper]:\n%s", cli.Output())
	}
	if ok, _, err := c.Exists("/smoke"); ok || err != nil {
		t.Errorf("go-zookeeper sees /smoke after the CLI deleted it: %v, %v", ok, err)
	}
	if err := cli.Send("quit"); err != nil {
		t.Fatal(err)
	}
	if err := cli.Close(wait); err != nil {
		t.Error(err)
	}
	out := cli.Output()
	for _, bad := range []string{"Exception", "KeeperErrorCode", "Xid out of order"} {
		if strings.Contains(out, bad) {
			t.Errorf("CLI output contains %q:\n%s", bad, out)
		}
	}
}

// TestJavaClientBench checks the Java client that BenchmarkRegistryJavaClient
// drives the server with: each operation, run through Apache's client
// against the embedded server, leaves what it should (a create per
// operation, a set per data version).
func TestJavaClientBench(t *testing.T) {
	classes := apachezk.JavaClasses(t)
	tg := target{name: "embedded", addr: startEmbedded(t, confTick).String()}
	addr, conn := tg.addr, connect(t, tg)
	for _, op := range []string{"get", "set", "create"} {
		base := "/java-" + op
		jb := apachezk.StartJavaBench(t, classes, addr, op, 2, base)
		if _, err := jb.Run(50); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		var sets int32
		var creates int
		for _, child := range []string{base + "/0", base + "/1"} {
			kids, st, err := conn.Children(child)
			if err != nil {
				t.Fatalf("%s: %v", op, err)
			}
			if st.DataLength != 100 {
				t.Errorf("%s: %s holds %d bytes, want 100", op, child, st.DataLength)
			}
			sets += st.Version
			creates += len(kids)
		}
		want := map[string][2]int{"get": {0, 0}, "set": {50, 0}, "create": {0, 50}}[op]
		if int(sets) != want[0] || creates != want[1] {
			t.Errorf("%s: 50 operations left %d sets and %d creates, want %d and %d", op, sets, creates, want[0], want[1])
		}
	}
}
