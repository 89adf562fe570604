package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestConfigPathsRelativeToFile: relative paths written in a config file
// (plugins, data dirs) are relative to the file's directory, as in
// docker-compose, so `dubbo up -c env/dubbo.toml` run from elsewhere finds
// env/bin/greeter and keeps its data in env/data; a path given with --set
// stays relative to the current directory. Before, the file's paths were
// relative to the current directory: "bin/greeter does not exist".
func TestConfigPathsRelativeToFile(t *testing.T) {
	dir := t.TempDir()
	env := filepath.Join(dir, "env")
	if err := os.MkdirAll(filepath.Join(env, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	greeter, err := os.ReadFile(binary("greeter"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(env, "bin", "greeter"), greeter, 0o755); err != nil {
		t.Fatal(err)
	}
	p := freePorts(t, 1)
	cfg := fmt.Sprintf(`data-dir = "data"
[application]
name = "e2e"
[registry]
address = %q
[registry.server]
listen = "127.0.0.1:%d"
[protocol]
host = "127.0.0.1"
port = %d
[provider]
plugins = ["bin/greeter"]
[monitor.server]
port = %d
[console]
listen = "127.0.0.1:%d"
[qos]
listen = ""
`, p.registryURL(), p.registry, p.provider, p.monitor, p.console)
	if err := os.WriteFile(filepath.Join(env, "dubbo.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name    string
		args    []string
		dataDir string // where the registry's data must be
	}{
		{"paths of the file", nil, filepath.Join(env, "data", "registry")},
		{"--set data-dir", []string{"--set", "data-dir=elsewhere"}, filepath.Join(dir, "elsewhere", "registry")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := startNode(t, "dubbo up -c env/dubbo.toml", dir, append([]string{"up", "-c", "env/dubbo.toml"}, tt.args...)...)
			if _, ok := waitFor(20*time.Second, func() bool {
				r := call(t, dir, p, "org.example.Greeter", "sayHello", `"paths"`)
				return r.code == 0 || up.exited()
			}); !ok || up.exited() {
				t.Fatalf("dubbo up run from %s did not serve Greeter from env/bin/greeter within 20s", dir)
			}
			if _, err := os.Stat(tt.dataDir); err != nil {
				t.Errorf("registry data: %v", err)
			}
			if code := up.stop(t); code != 0 {
				t.Errorf("dubbo up exited %d after Ctrl-C", code)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); err == nil {
		t.Errorf("%s/data exists: the file's data-dir was taken relative to the current directory", dir)
	}
}
