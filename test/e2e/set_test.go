package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// --set on a list key takes [] and TOML arrays: provider.plugins=[] runs
// no provider (before, it tried to launch a plugin file named "[]"), and
// a TOML array of paths runs those plugins.
func TestSetListKeys(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 1)
	cfg := writeConfig(t, dir, p, setup{providerPlugins: []string{"greeter"}, references: []string{"org.example.Greeter"}, gateway: true})

	up := startNode(t, "dubbo up --set provider.plugins=[]", dir, "up", "-c", cfg, "--set", "provider.plugins=[]")
	if _, ok := waitFor(15*time.Second, func() bool { return strings.Contains(up.stdout.String(), "ready") || up.exited() }); !ok || up.exited() {
		t.Fatalf("dubbo up with provider.plugins=[] did not get ready within 15s")
	}
	if out := up.stdout.String(); strings.Contains(out, "provider ") {
		t.Errorf("provider.plugins=[] started a provider:\n%s", out)
	}
	if code := up.stop(t); code != 0 {
		t.Errorf("dubbo up exited %d after Ctrl-C", code)
	}

	set := fmt.Sprintf("provider.plugins=[%q]", binary("greeter"))
	up = startNode(t, "dubbo up --set "+set, dir, "up", "-c", cfg, "--set", set)
	waitGateway(t, up, p)
	if out := up.stdout.String(); !strings.Contains(out, "plugins ["+binary("greeter")+"]") {
		t.Errorf("--set %s: the provider does not run the greeter:\n%s", set, out)
	}
	if code := up.stop(t); code != 0 {
		t.Errorf("dubbo up exited %d after Ctrl-C", code)
	}
}
