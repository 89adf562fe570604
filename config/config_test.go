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

// twoRefs ends inside the second of two references, at line 6.
const twoRefs = "[[consumer.references]]\ninterface = \"org.example.Other\"\n\n[[consumer.references]]\n" +
	"interface = \"org.example.Greeter\"\nversion = \"1.0.0\"\n"

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
		{"misspelt default load balancer", "[consumer.defaults]\ntimeout = 3000\nloadbalance = \"roundrobbin\"\n", nil,
			[]string{":3:", "key consumer.defaults.loadbalance", `unknown load balancer "roundrobbin"`, "did you mean roundrobin", "shortestresponse"}},
		{"misspelt cluster", "[consumer.defaults]\ncluster = \"failfats\"\n", nil,
			[]string{":2:", "key consumer.defaults.cluster", "failfast"}},
		{"misspelt load balancer of the second reference", twoRefs + "loadbalance = \"fastest\"\n", nil,
			[]string{":7:", "key consumer.references[1].loadbalance", `"fastest"`, "p2c"}},
		{"misspelt load balancer of a method", twoRefs + "[[consumer.references.methods]]\nname = \"sayHello\"\n\n" +
			"[[consumer.references.methods]]\nname = \"add\"\nloadbalance = \"leastactiv\"\n", nil,
			[]string{":12:", "key consumer.references[1].methods[1].loadbalance", "did you mean leastactive"}},
		{"bad parameter in an inline table", twoRefs + "parameters = { sticky = \"true\", forks = \"two\" }\n", nil,
			[]string{":7:", "key consumer.references[1].parameters.forks", "not a whole number"}},
		{"bad parameter in a sub-table", twoRefs + "\n[consumer.references.parameters]\nrouter = \"-tga\"\n", nil,
			[]string{":9:", "key consumer.references[1].parameters.router", `unknown router "tga"`}},
		{"reference without interface", "[[consumer.references]]\nversion = \"1.0.0\"\n", nil,
			[]string{":1:", "key consumer.references[0].interface"}},
		{"bad direct url", twoRefs + "url = \"dubbo://127.0.0.1:20880;127.0.0.1:20881\"\n", nil,
			[]string{":7:", "key consumer.references[1].url", "dubbo://host:port"}},
		{"misspelt load balancer by --set", "[consumer.defaults]\ntimeout = 3000\n", []string{"consumer.defaults.loadbalance=rr"},
			[]string{"key consumer.defaults.loadbalance (set by environment or --set)", `"rr"`}},
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

// Every key the config accepts is documented in the configuration
// reference (docs/configuration.md, linked from the README).
func TestReferenceDocumentsEveryKey(t *testing.T) {
	ref, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for key := range knownKeys(reflect.TypeOf(File{}), "") {
		if !strings.Contains(string(ref), "| `"+key+"` |") {
			t.Errorf("docs/configuration.md lacks %s", key)
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

// parameters on consumer.defaults, references and methods decode as
// strings, whether the file writes them as strings, numbers or booleans.
func TestConsumerParameters(t *testing.T) {
	p := writeFile(t, `[consumer.defaults]
parameters = { failbacktasks = 50 }

[[consumer.references]]
interface = "org.example.Greeter"
url = "dubbo://127.0.0.1:20880;dubbo://127.0.0.1:20881"
cluster = "forking"
parameters = { forks = 3, sticky = true, "hash.arguments" = "0,1" }

[[consumer.references.methods]]
name = "sayHello"
loadbalance = "consistenthash"
[consumer.references.methods.parameters]
"hash.nodes" = 320
`)
	f, err := Load(p, false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc := f.Consumer.References[0]
	want := map[string]string{"forks": "3", "sticky": "true", "hash.arguments": "0,1"}
	if !reflect.DeepEqual(rc.Parameters, want) || f.Consumer.Defaults.Parameters["failbacktasks"] != "50" ||
		rc.Methods[0].Parameters["hash.nodes"] != "320" {
		t.Errorf("parameters: defaults %v reference %v method %v", f.Consumer.Defaults.Parameters, rc.Parameters, rc.Methods[0].Parameters)
	}
}

// A misspelt extension name on the provider side, or a wrong
// [[provider.services]] setting, is refused at start with the file, the
// line and the key, and the names that exist.
func TestProviderSettingsRefused(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"dispatcher", "[protocol]\nport = 20880\ndispatcher = \"al\"\n",
			[]string{":3: key protocol.dispatcher:", `unknown dispatcher "al"; known: all, connection, direct, execution, message`}},
		{"thread pool", "[protocol]\nthreadpool = \"fixd\"\n",
			[]string{":2: key protocol.threadpool:", `unknown thread pool "fixd"; known: cached, eager, fixed, limited`}},
		{"serialization", "[protocol]\n\nserialization = \"fastjson2\"\n",
			[]string{":3: key protocol.serialization:", "only hessian2 is"}},
		{"second table's load balancer", "[[provider.services]]\ninterface = \"a.B\"\nloadbalance = \"random\"\n\n" +
			"[[provider.services]]\ninterface = \"c.D\"\nweight = 5\nloadbalance = \"roundrobbin\"\n",
			[]string{":8: key provider.services[1].loadbalance:", `unknown load balancer "roundrobbin"; known: consistenthash, leastactive, p2c, random, roundrobin, shortestresponse`}},
		{"unknown key in a table", "[[provider.services]]\ninterface = \"a.B\"\n[[provider.services]]\ninterface = \"c.D\"\nwieght = 5\n",
			[]string{":5: key provider.services[1].wieght: unknown key"}},
		{"weight not a number", "[[provider.services]]\ninterface = \"a.B\"\nweight = \"heavy\"\n",
			[]string{":3: key provider.services[0].weight:"}},
		{"parameters", "[[provider.services]]\ninterface = \"a.B\"\nparameters = { executes = \"-1\" }\n",
			[]string{":3: key provider.services[0].parameters:", `parameter executes: "-1" is not a non-negative integer`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeFile(t, tt.body), false, nil, nil)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	// Through --set, the key is named as set there.
	_, err := Load(writeFile(t, ""), false, nil, []string{"protocol.dispatcher=drect"})
	if err == nil || !strings.Contains(err.Error(), "key protocol.dispatcher (set by environment or --set)") || !strings.Contains(err.Error(), "known: all,") {
		t.Errorf("--set protocol.dispatcher=drect: %v", err)
	}
}

// [[provider.services]] tables load with every setting, durations in
// milliseconds or as strings.
func TestProviderServicesLoad(t *testing.T) {
	f, err := Load(writeFile(t, `[provider]
weight = 50
[[provider.services]]
interface = "org.example.Greeter"
version = "1.0.0"
weight = 300
tag = "gray"
timeout = 3000
retries = 0
loadbalance = "roundrobin"
warmup = "1m"
token = "true"
executes = 10
actives = 5
delay = 2000
parameters = { "sayHello.timeout" = "5000", owner = "team-a" }
`), false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := f.Provider.Services
	if len(s) != 1 {
		t.Fatalf("services %+v", s)
	}
	got := s[0].Params()
	want := map[string]string{"weight": "300", "dubbo.tag": "gray", "timeout": "3000", "retries": "0", "loadbalance": "roundrobin",
		"warmup": "60000", "token": "true", "executes": "10", "actives": "5", "delay": "2000", "sayHello.timeout": "5000", "owner": "team-a"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("params %v\nwant %v", got, want)
	}
	if f.Provider.Weight == nil || *f.Provider.Weight != 50 || s[0].Interface != "org.example.Greeter" || s[0].Version != "1.0.0" {
		t.Errorf("provider %+v", f.Provider)
	}
}

// lineOf counts the entries of arrays of tables, nested ones too, so an
// indexed key finds its line.
func TestLineOfIndexed(t *testing.T) {
	raw := []byte(`[[consumer.references]]
interface = "a.B"
[[consumer.references.methods]]
name = "m"
timeout = 1
[[consumer.references]]
interface = "c.D"
[[consumer.references.methods]]
name = "n"
[[consumer.references.methods]]
name = "o"
timeout = 2
[[provider.services]]
interface = "e.F"
[provider.services.parameters]
owner = "x"
`)
	for key, want := range map[string]int{
		"consumer.references[0].methods[0].timeout": 5,
		"consumer.references[1].interface":          7,
		"consumer.references[1].methods[1].timeout": 12,
		"consumer.references[1].methods[0].timeout": 8, // not written: its [[table]]
		"provider.services[0]":                      13,
		"provider.services[0].parameters.owner":     16,
		"provider.services[1].interface":            0,
	} {
		if got := lineOf(raw, key); got != want {
			t.Errorf("lineOf(%s) = %d, want %d", key, got, want)
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
		f.Consumer.CacheFile != in("d/cache/consumer-a.json") || f.Monitor.Spool != in("d/spool") {
		t.Errorf("defaults under data-dir: registry %q, monitor %q, cache %q, spool %q", f.Registry.Server.DataDir, f.Monitor.Server.DB, f.Consumer.CacheFile, f.Monitor.Spool)
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

// [protocol] names the main protocol, [protocols.<name>] tables add more,
// each taking [protocol]'s settings where it says nothing; what cannot be
// served is refused with its file, line and key.
func TestProtocols(t *testing.T) {
	f, err := Load(writeFile(t, `[protocol]
host = "127.0.0.1"
port = 20880
payload = 1000
[protocols.tri]
port = 50051
[[provider.services]]
interface = "org.example.Greeter"
protocols = ["tri"]
`), false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := f.Provider.Protocols.Tri; p == nil || p.Port != 50051 || f.Provider.Protocols.Dubbo != nil {
		t.Errorf("protocols %+v", f.Provider.Protocols)
	}
	if s := f.Provider.Services; len(s) != 1 || !reflect.DeepEqual(s[0].Protocols, []string{"tri"}) {
		t.Errorf("services %+v", s)
	}

	// Triple only, from the command line.
	f, err = Load("", false, nil, []string{"protocol.name=tri", "protocol.port=50052"})
	if err != nil || f.Provider.Protocol.Name != "tri" || f.Provider.Protocol.Port != 50052 {
		t.Errorf("--set protocol.name=tri: %+v, %v", f.Provider.Protocol, err)
	}
	f, err = Load("", false, []string{"DUBBO_PROTOCOLS_TRI_PORT=50053"}, nil)
	if err != nil || f.Provider.Protocols.Tri == nil || f.Provider.Protocols.Tri.Port != 50053 {
		t.Errorf("DUBBO_PROTOCOLS_TRI_PORT: %+v, %v", f.Provider.Protocols, err)
	}

	for _, tt := range []struct {
		name string
		body string
		sets []string
		want []string
	}{
		{"unknown protocol", "[protocol]\nname = \"rest\"\n", nil, []string{":2: key protocol.name:", `"rest"`, "dubbo or tri"}},
		{"unknown table", "[protocols.rest]\nport = 8080\n", nil, []string{":1: key protocols.rest: unknown key"}},
		{"main protocol as a table", "[protocol]\nname = \"tri\"\n[protocols.tri]\nport = 50051\n", nil,
			[]string{":3: key protocols.tri:", "main protocol"}},
		{"one port for two", "[protocol]\nport = 20880\n[protocols.tri]\nport = 20880\n", nil,
			[]string{":4: key protocols.tri.port:", "protocol.port already"}},
		{"default port taken", "[protocol]\nport = 50051\n[protocols.tri]\nhost = \"127.0.0.1\"\n", nil,
			[]string{":3: key protocols.tri:", "by default 50051, is protocol.port already; set protocols.tri.port"}},
		{"bad port by --set", "", []string{"protocols.tri.port=70000"}, []string{"key protocols.tri.port (set by environment or --set)", "not a port"}},
		{"service on a protocol not served", "[[provider.services]]\ninterface = \"a.B\"\nprotocols = [\"tri\"]\n", nil,
			[]string{":3: key provider.services[0].protocols:", `"tri" is not a protocol this provider serves (dubbo)`, "[protocols.tri]"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeFile(t, tt.body), false, nil, tt.sets)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
