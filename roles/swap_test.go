package roles

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/config"
	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/node/url"
)

// swapSetup is a provider role's world for swaps: an embedded registry,
// and a plugin at plugin (a script a test replaces as a build does) that
// writes its pid to pidFile and refuses to start while downFile exists.
type swapSetup struct {
	zkAddr, plugin, pidFile, downFile string
}

func newSwapSetup(t *testing.T) swapSetup {
	t.Helper()
	dir := t.TempDir()
	s := swapSetup{zktest.StartEmbedded(t, embeddedzk.Config{}), filepath.Join(dir, "greeter"),
		filepath.Join(dir, "plugin.pid"), filepath.Join(dir, "down")}
	t.Setenv(pidFileEnv, s.pidFile)
	t.Setenv(downEnv, s.downFile)
	installPlugin(t, s.plugin, false)
	return s
}

// config is a node's config with the registry and a provider on any port
// running the plugin, no monitor, then more.
func (s swapSetup) config(t *testing.T, more string) *config.File {
	return loadConfig(t, fmt.Sprintf(`
registry.address = %q
protocol.host = "127.0.0.1"
protocol.port = -1
provider.plugins = [%q]
monitor.enabled = false
`, "zookeeper://"+s.zkAddr, s.plugin)+more)
}

// installPlugin puts a plugin binary at path as a build does (written
// beside, renamed over): a script running this test binary as the plugin,
// serving sayBye too when bye.
func installPlugin(t *testing.T, path string, bye bool) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\nexport %s=1\n", pluginEnv)
	if bye {
		script += fmt.Sprintf("export %s=1\n", byeEnv)
	}
	installScript(t, path, script+fmt.Sprintf("exec %q \"$@\"\n", self))
}

// installScript puts a shell script at path as a build does.
func installScript(t *testing.T, path, script string) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// providerCounts watches path's children until the test ends and keeps
// the fewest seen since the first.
type providerCounts struct {
	mu    sync.Mutex
	least int
}

func watchProviders(t *testing.T, zc *zk.Conn, path string) *providerCounts {
	c := &providerCounts{least: -1}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			kids, _, ev, err := zc.ChildrenW(path)
			if err != nil {
				return
			}
			c.mu.Lock()
			if c.least < 0 || len(kids) < c.least {
				c.least = len(kids)
			}
			c.mu.Unlock()
			select {
			case <-ev:
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return c
}

// TestSwapKeepsRegistration runs the provider role as dubbo up does: a new
// build of its plugin with the same service takes over with the registry
// untouched (the same provider node, never removed); one with another
// method replaces the provider URL in place, never leaving the service
// without a provider; the instance stays registered throughout.
func TestSwapKeepsRegistration(t *testing.T) {
	s := newSwapSetup(t)
	plugin, pidFile := s.plugin, s.pidFile
	_, stop := startRunWith(t, s.config(t, `application.name = "swap-app"`), []string{Provider}, Options{Logger: slog.New(slog.DiscardHandler), Swap: true})
	defer stop()
	zc := zkConn(t, s.zkAddr)
	waitChildren(t, zc, greeterProviders, 1, "registered once the plugin is up")
	first := readPid(t, pidFile)
	kids, _, err := zc.Children(greeterProviders)
	if err != nil {
		t.Fatal(err)
	}
	node := greeterProviders + "/" + kids[0]
	_, before, err := zc.Exists(node)
	if err != nil {
		t.Fatal(err)
	}
	instances := "/services/swap-app"
	counts, instCounts := watchProviders(t, zc, greeterProviders), watchProviders(t, zc, instances)

	// The same service, rebuilt.
	installPlugin(t, plugin, false)
	second := waitNewPid(t, pidFile, first)
	ok, now, err := zc.Exists(node)
	if !ok || err != nil || now.Czxid != before.Czxid {
		t.Errorf("after a swap with the same service the provider node %s is gone or new (exists %v, %v)", node, ok, err)
	}

	// Another method: the URL is replaced.
	installPlugin(t, plugin, true)
	waitNewPid(t, pidFile, second)
	waitFor(t, "the provider URL naming sayBye", func() (bool, string) {
		kids, _, err := zc.Children(greeterProviders)
		if err != nil || len(kids) != 1 {
			return false, fmt.Sprint(kids, err)
		}
		u, err := url.Decode(kids[0])
		return err == nil && u.Param("methods") == "sayBye,sayHello", fmt.Sprint(u, err)
	})
	for what, c := range map[string]*providerCounts{"providers": counts, "instances": instCounts} {
		c.mu.Lock()
		if c.least < 1 {
			t.Errorf("%s: %d registered at one point during the swaps, want 1 at least", what, c.least)
		}
		c.mu.Unlock()
	}
}

// waitNewPid waits for the plugin to write a pid other than old.
func waitNewPid(t *testing.T, path string, old int) int {
	t.Helper()
	var pid int
	waitFor(t, "a new plugin process", func() (bool, string) {
		b, err := os.ReadFile(path)
		if err != nil {
			return false, err.Error()
		}
		_, err = fmt.Sscan(strings.TrimSpace(string(b)), &pid)
		return err == nil && pid != old, string(b)
	})
	return pid
}
