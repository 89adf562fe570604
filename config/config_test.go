package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "dubbo.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadLayers(t *testing.T) {
	p := writeFile(t, `data-dir = "/tmp/d"
[application]
name = "demo"
[registry.server]
listen = "127.0.0.1:3000"
tick-time = "500ms"
fsync = false
`)
	f, err := Load(p, false,
		[]string{"DUBBO_REGISTRY_SERVER_MAX_CLIENT_CNXNS=7", "DUBBO_UNRELATED=1", "HOME=/root"},
		[]string{"registry.server.listen=127.0.0.1:4000"})
	if err != nil {
		t.Fatal(err)
	}
	s := f.Registry.Server
	if s.Listen != "127.0.0.1:4000" {
		t.Errorf("listen = %q, want the --set value", s.Listen)
	}
	if s.TickTime != 500*time.Millisecond || s.MinSessionTimeout != time.Second || s.MaxSessionTimeout != 10*time.Second {
		t.Errorf("tick/min/max = %s/%s/%s, want 500ms/1s/10s", s.TickTime, s.MinSessionTimeout, s.MaxSessionTimeout)
	}
	if s.MaxClientCnxns != 7 {
		t.Errorf("max-client-cnxns = %d, want 7 from the environment", s.MaxClientCnxns)
	}
	if s.FsyncOn() {
		t.Error("fsync should be off")
	}
	if s.DataDir != "/tmp/d/registry" || f.Application.Name != "demo" {
		t.Errorf("data dir %q app %q", s.DataDir, f.Application.Name)
	}
}

func TestDefaultsWithoutFile(t *testing.T) {
	f, err := Load(filepath.Join(t.TempDir(), "missing.toml"), true, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := f.Registry.Server
	if s.Listen != "127.0.0.1:2181" || s.TickTime != 2*time.Second || s.MaxClientCnxns != 60 ||
		s.MaxPacketSize != 0xfffff || !s.FsyncOn() || s.DataDir != filepath.Join(".dubbo", "registry") {
		t.Errorf("unexpected defaults: %+v", s)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.toml"), false, nil, nil); err == nil {
		t.Error("a named config file that is missing must be an error")
	}
}

func TestBadConfigNamesFileLineAndKey(t *testing.T) {
	tests := []struct {
		name string
		body string
		sets []string
		want []string
	}{
		{"bad duration", "[registry.server]\nlisten = \"127.0.0.1:1\"\ntick-time = \"soon\"\n", nil,
			[]string{":3:", "registry.server.tick-time"}},
		{"unknown key", "[registry]\naddress = \"zookeeper://127.0.0.1:2181\"\n\n[registry.server]\nlisen = \"x\"\n", nil,
			[]string{":5:", "registry.server.lisen"}},
		{"wrong type", "[registry.server]\nmax-client-cnxns = \"many\"\n", nil,
			[]string{":2:", "registry.server.max-client-cnxns"}},
		{"syntax", "[registry.server\nlisten = 1\n", nil, []string{"line 1"}},
		{"invalid value", "[registry.server]\nmin-session-timeout = \"9s\"\nmax-session-timeout = \"1s\"\n", nil,
			[]string{"min-session-timeout"}},
		{"unknown --set", "", []string{"registry.server.tick=1s"}, []string{"unknown key", "registry.server.tick-time"}},
		{"malformed --set", "", []string{"registry.server.listen"}, []string{"want key=value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, tt.body)
			_, err := Load(p, false, nil, tt.sets)
			if err == nil {
				t.Fatal("expected an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// The shipped dubbo.toml must always load.
func TestShippedConfigLoads(t *testing.T) {
	f, err := Load("../dubbo.toml", false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Registry.Server.Listen != "127.0.0.1:2181" || f.Application.Name != "demo" {
		t.Errorf("unexpected values from dubbo.toml: %+v", f)
	}
}

// Every key the config accepts is documented in the README's reference.
func TestReadmeDocumentsEveryKey(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for key := range knownKeys(reflect.TypeOf(File{}), "") {
		if !strings.Contains(string(readme), "| `"+key+"` |") {
			t.Errorf("README.md's configuration reference lacks %s", key)
		}
	}
}
