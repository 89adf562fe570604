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

// The monitor, console and QoS keys: defaults, and "" turning a listener
// off rather than meaning "the default".
func TestMonitorConsoleQoSKeys(t *testing.T) {
	f, err := Load("", false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.QoS.Listen != "127.0.0.1:22222" || f.QoS.AcceptForeignIP || f.Console.Listen != "127.0.0.1:8080" ||
		!f.Monitor.IsEnabled() || f.Monitor.Address != "" || f.Monitor.Server.DB != filepath.Join(".dubbo", "monitor.db") {
		t.Errorf("defaults: qos %+v console %+v monitor %+v", f.QoS, f.Console, f.Monitor)
	}
	p := writeFile(t, `data-dir = "/d"
[monitor]
enabled = false
interval = 1000
buffer = 5
[monitor.server]
port = 7071
raw-retention = "2h"
[console]
listen = ""
[qos]
listen = ""
accept-foreign-ip = true
`)
	f, err = Load(p, false, []string{"DUBBO_MONITOR_ADDRESS=dubbo://127.0.0.1:7071"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := f.Monitor
	if m.IsEnabled() || m.Interval != time.Second || m.Buffer != 5 || m.Address != "dubbo://127.0.0.1:7071" ||
		m.Server.Port != 7071 || m.Server.RawRetention != 2*time.Hour || m.Server.DB != "/d/monitor.db" {
		t.Errorf("monitor %+v", m)
	}
	if f.QoS.Listen != "" || !f.QoS.AcceptForeignIP || f.Console.Listen != "" {
		t.Errorf("qos %+v console %+v: \"\" must stay off", f.QoS, f.Console)
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
		{"monitor interval under 1s", "[monitor]\naddress = \"\"\ninterval = \"500ms\"\n", nil,
			[]string{":3:", "monitor.interval", "shorter than 1s"}},
		{"monitor address not dubbo", "[monitor]\naddress = \"127.0.0.1:7070\"\n", nil,
			[]string{":2:", "monitor.address", "dubbo://host:port"}},
		{"monitor interval by --set", "", []string{"monitor.interval=100"}, []string{"monitor.interval", "--set"}},
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

// A bare integer duration is milliseconds, as in Dubbo, wherever it comes
// from; before, the file's integers were nanoseconds (timeout = 3000 was 3µs
// and protocol.heartbeat = 60 broke every connection).
func TestDurationsInMilliseconds(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		environ []string
		sets    []string
		check   func(f *File) (got, want time.Duration)
	}{
		{"file integer timeout", "[consumer.defaults]\ntimeout = 3000\n", nil, nil,
			func(f *File) (time.Duration, time.Duration) { return f.Consumer.Defaults.Timeout, 3 * time.Second }},
		{"file integer heartbeat", "[protocol]\nheartbeat = 60\n", nil, nil,
			func(f *File) (time.Duration, time.Duration) { return f.Protocol.Heartbeat, 60 * time.Millisecond }},
		{"file integer tick-time", "[registry.server]\ntick-time = 2000\n", nil, nil,
			func(f *File) (time.Duration, time.Duration) { return f.Registry.Server.TickTime, 2 * time.Second }},
		{"file duration string", "[consumer.defaults]\ntimeout = \"2500ms\"\n", nil, nil,
			func(f *File) (time.Duration, time.Duration) {
				return f.Consumer.Defaults.Timeout, 2500 * time.Millisecond
			}},
		{"method timeout in a reference", "[[consumer.references]]\ninterface = \"a.B\"\ntimeout = 1500\n[[consumer.references.methods]]\nname = \"m\"\ntimeout = 4000\n", nil, nil,
			func(f *File) (time.Duration, time.Duration) {
				return f.Consumer.References[0].Timeout + f.Consumer.References[0].Methods[0].Timeout, 5500 * time.Millisecond
			}},
		{"--set integer", "", nil, []string{"consumer.defaults.timeout=3000"},
			func(f *File) (time.Duration, time.Duration) { return f.Consumer.Defaults.Timeout, 3 * time.Second }},
		{"--set duration", "", nil, []string{"provider.shutdown-timeout=15s"},
			func(f *File) (time.Duration, time.Duration) { return f.Provider.ShutdownTimeout, 15 * time.Second }},
		{"environment integer", "", []string{"DUBBO_PROTOCOL_HEARTBEAT=60000"}, nil,
			func(f *File) (time.Duration, time.Duration) { return f.Protocol.Heartbeat, time.Minute }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Load(writeFile(t, tt.file), false, tt.environ, tt.sets)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := tt.check(f); got != want {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

// List keys take "[]", TOML arrays, "[a,b]" and "a,b" from --set and the
// environment; before, --set provider.plugins=[] named a plugin file "[]".
func TestListValues(t *testing.T) {
	file := "[provider]\nplugins = [\"/opt/greeter\"]\n[[consumer.references]]\ninterface = \"org.example.Greeter\"\n"
	tests := []struct {
		name    string
		environ []string
		sets    []string
		plugins []string
		refs    int
	}{
		{"file only", nil, nil, []string{"/opt/greeter"}, 1},
		{"empty list", nil, []string{"provider.plugins=[]"}, []string{}, 1},
		{"empty list with spaces", nil, []string{"provider.plugins= [ ] "}, []string{}, 1},
		{"TOML array", nil, []string{`provider.plugins=["a/one", "b/two"]`}, []string{"a/one", "b/two"}, 1},
		{"bracketed bare names", nil, []string{"provider.plugins=[a/one, b/two]"}, []string{"a/one", "b/two"}, 1},
		{"comma separated", nil, []string{"provider.plugins=a/one,b/two"}, []string{"a/one", "b/two"}, 1},
		{"one name", nil, []string{"provider.plugins=hello/hello"}, []string{"hello/hello"}, 1},
		{"empty value", nil, []string{"provider.plugins="}, []string{}, 1},
		{"environment", []string{"DUBBO_PROVIDER_PLUGINS=[]"}, nil, []string{}, 1},
		{"no references", nil, []string{"consumer.references=[]"}, []string{"/opt/greeter"}, 0},
		{"references as TOML", nil, []string{`consumer.references=[{interface = "a.B"}, {interface = "c.D", version = "2"}]`},
			[]string{"/opt/greeter"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Load(writeFile(t, file), false, tt.environ, tt.sets)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(f.Provider.Plugins, tt.plugins) && !(len(f.Provider.Plugins) == 0 && len(tt.plugins) == 0) {
				t.Errorf("provider.plugins = %q, want %q", f.Provider.Plugins, tt.plugins)
			}
			if len(f.Consumer.References) != tt.refs {
				t.Errorf("consumer.references = %+v, want %d", f.Consumer.References, tt.refs)
			}
		})
	}
	for _, set := range []string{"consumer.references=x", "consumer.references=[{interface = }]", "provider.plugins=[a, b"} {
		if _, err := Load(writeFile(t, file), false, nil, []string{set}); err == nil || !strings.Contains(err.Error(), "--set") {
			t.Errorf("--set %s: error %v, want one naming the --set", set, err)
		}
	}
}

// Relative paths in a config file resolve against the file's directory, as
// docker-compose resolves its paths; paths from the environment and --set,
// absolute paths and defaults not written anywhere stay as they are
// (relative to the current directory).
func TestPathsRelativeToFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "env")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "dubbo.toml")
	body := `data-dir = "data"
[registry.server]
data-dir = "zk"
[provider]
plugins = ["bin/greeter", "/opt/abs"]
[consumer]
plugins = ["./bin/caller"]
cache-file = "cache/c.json"
[monitor.server]
db = "../m.db"
`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	in := func(rel string) string { return filepath.Join(dir, rel) }
	tests := []struct {
		name      string
		env, sets []string
		check     func(f *File) any
		want      any
	}{
		{"data-dir", nil, nil, func(f *File) any { return f.DataDir }, in("data")},
		{"registry.server.data-dir", nil, nil, func(f *File) any { return f.Registry.Server.DataDir }, in("zk")},
		{"provider.plugins", nil, nil, func(f *File) any { return f.Provider.Plugins }, []string{in("bin/greeter"), "/opt/abs"}},
		{"consumer.plugins", nil, nil, func(f *File) any { return f.Consumer.Plugins }, []string{in("bin/caller")}},
		{"consumer.cache-file", nil, nil, func(f *File) any { return f.Consumer.CacheFile }, in("cache/c.json")},
		{"monitor.server.db", nil, nil, func(f *File) any { return f.Monitor.Server.DB }, filepath.Join(filepath.Dir(dir), "m.db")},
		{"--set stays relative to the current directory", nil, []string{"provider.plugins=[x/p]", "data-dir=d"},
			func(f *File) any { return []any{f.Provider.Plugins, f.DataDir} }, []any{[]string{"x/p"}, "d"}},
		{"environment stays relative to the current directory", []string{"DUBBO_CONSUMER_CACHE_FILE=e.json"}, nil,
			func(f *File) any { return f.Consumer.CacheFile }, "e.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Load(path, false, tt.env, tt.sets)
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.check(f); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}

	// Defaults derived from a data-dir written in the file follow it.
	short := filepath.Join(dir, "short.toml")
	if err := os.WriteFile(short, []byte("data-dir = \"d\"\n[application]\nname = \"a\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(short, false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Registry.Server.DataDir != in("d/registry") || f.Monitor.Server.DB != in("d/monitor.db") ||
		f.Consumer.CacheFile != in("d/cache/consumer-a.json") {
		t.Errorf("defaults under data-dir: registry %q, monitor %q, cache %q", f.Registry.Server.DataDir, f.Monitor.Server.DB, f.Consumer.CacheFile)
	}
}

// Every path key names a key of the file, so none is silently left out.
func TestPathKeysAreKeys(t *testing.T) {
	keys := knownKeys(reflect.TypeOf(File{}), "")
	for _, k := range pathKeys {
		if _, ok := keys[k]; !ok {
			t.Errorf("pathKeys lists %q, which is not a config key", k)
		}
	}
}

// registry.server.listen = "" means no embedded registry (dubbo up then
// starts none); unset, it is the default address.
func TestRegistryServerOff(t *testing.T) {
	f, err := Load(writeFile(t, "[registry.server]\nlisten = \"\"\n"), false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Registry.Server.Listen != "" || f.Registry.Server.TickTime != 2*time.Second {
		t.Errorf("listen %q, tick %v; want \"\" and the other defaults", f.Registry.Server.Listen, f.Registry.Server.TickTime)
	}
	if f, err = Load(writeFile(t, ""), false, nil, []string{"registry.server.listen="}); err != nil || f.Registry.Server.Listen != "" {
		t.Errorf("--set registry.server.listen=: %q, %v", f.Registry.Server.Listen, err)
	}
	if f, err = Load(writeFile(t, ""), false, nil, nil); err != nil || f.Registry.Server.Listen != "127.0.0.1:2181" {
		t.Errorf("default: %q, %v", f.Registry.Server.Listen, err)
	}
}
