package e2e

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
)

// TestPortInUse: a role whose port another process holds stops at once,
// saying which role, which address and which key to change (before: the
// bare "bind: address already in use", and the monitor role crashed on a
// nil pointer). The other roles' registry runs.
func TestPortInUse(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 1)
	cfg := writeConfig(t, dir, p, setup{providerPlugins: []string{"greeter"}, references: []string{"org.example.Greeter"}, gateway: true})
	registry := startNode(t, "registry", dir, "run", "--role=registry", "-c", cfg)
	if _, ok := waitFor(10*time.Second, func() bool {
		got, err := fourLetter(fmt.Sprintf("127.0.0.1:%d", p.registry), "ruok")
		return err == nil && got == "imok" || registry.exited()
	}); !ok || registry.exited() {
		t.Fatal("the registry did not answer ruok within 10s")
	}
	for _, tt := range []struct {
		role string
		key  string // --set key=<the taken address or port>
		port bool   // the key is a port, not an address
		says []string
	}{
		{"registry", "registry.server.listen", false, []string{"registry: 127.0.0.1:%d is already in use", "set registry.server.listen", "registry.address", `registry.server.listen = ""`}},
		{"monitor", "monitor.server.port", true, []string{"monitor: 127.0.0.1:%d is already in use", "set monitor.server.port"}},
		{"monitor", "console.listen", false, []string{"console: 127.0.0.1:%d is already in use", "set console.listen"}},
		{"provider", "protocol.port", true, []string{"provider 1: 127.0.0.1:%d is already in use", "set protocol.port"}},
		{"consumer", "consumer.gateway.listen", false, []string{"consumer gateway: 127.0.0.1:%d is already in use", "set consumer.gateway.listen"}},
	} {
		t.Run(tt.key, func(t *testing.T) {
			held, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			port := held.Addr().(*net.TCPAddr).Port
			value := held.Addr().String()
			if tt.port {
				value = fmt.Sprint(port)
			}
			// Another data dir: the registry running holds its own.
			r := dubbo(t, dir, "run", "--role="+tt.role, "-c", cfg, "--set", tt.key+"="+value,
				"--set", "registry.server.data-dir="+t.TempDir(), "--set", "consumer.defaults.check=false")
			if r.code != 1 {
				t.Errorf("exit %d, want 1; stderr %q", r.code, lastLines(r.stderr, 5))
			}
			for _, s := range tt.says {
				if strings.Contains(s, "%d") {
					s = fmt.Sprintf(s, port)
				}
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr %q does not say %q", lastLines(r.stderr, 3), s)
				}
			}
		})
	}
}

// TestUpWithRunningZooKeeper follows what dubbo up says when a ZooKeeper
// (Apache's, a real one) already holds registry.server.listen: it names
// registry.address and registry.server.listen = "", and with those the
// environment runs on that ZooKeeper, starting no registry of its own.
func TestUpWithRunningZooKeeper(t *testing.T) {
	zk := apachezk.Start(t, apachezk.Options{})
	dir := t.TempDir()
	p := freePorts(t, 1)
	cfg := writeConfig(t, dir, p, setup{providerPlugins: []string{"greeter"}})

	r := dubbo(t, dir, "up", "-c", cfg, "--set", "registry.server.listen="+zk.Addr())
	advice := fmt.Sprintf(`registry.address = "zookeeper://%s" and registry.server.listen = ""`, zk.Addr())
	if r.code != 1 || !strings.Contains(r.stderr, advice) {
		t.Fatalf("dubbo up on a port ZooKeeper holds: exit %d, stderr %q; want exit 1 and %q", r.code, lastLines(r.stderr, 3), advice)
	}

	up := startNode(t, "dubbo up on Apache ZooKeeper", dir, "up", "-c", cfg,
		"--set", "registry.address=zookeeper://"+zk.Addr(), "--set", "registry.server.listen=")
	if _, ok := waitFor(20*time.Second, func() bool { return strings.Contains(up.stdout.String(), "ready") || up.exited() }); !ok || up.exited() {
		t.Fatalf("dubbo up with registry.server.listen = \"\" did not get ready")
	}
	if out := up.stdout.String(); strings.Contains(out, "registry   ") {
		t.Errorf("dubbo up started a registry of its own:\n%s", out)
	}
	if _, ok := waitFor(15*time.Second, func() bool {
		r := dubbo(t, dir, "call", "--registry", "zookeeper://"+zk.Addr(), "--version", "1.0.0", "org.example.Greeter", "sayHello", `"zk"`)
		return r.code == 0 && strings.TrimSpace(r.stdout) == `"Hello, zk"`
	}); !ok {
		t.Error("Greeter did not answer through Apache ZooKeeper within 15s")
	}
}
