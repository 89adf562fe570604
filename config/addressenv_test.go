package config

import (
	"reflect"
	"strings"
	"testing"
)

// Dubbo's address variables set the bound and registered addresses, with
// Java's names and precedence: DUBBO_DUBBO_<NAME> before DUBBO_<NAME>,
// both before the config (file, DUBBO_<KEY>, --set), with a warning for
// each config value they replace.
func TestAddressEnvironment(t *testing.T) {
	file := "[protocol]\nhost = \"127.0.0.1\"\nport = 20880\nregistry-host = \"10.0.0.1\"\n"
	tests := []struct {
		name          string
		environ, sets []string
		host, regHost string
		port, regPort int
		warnings      []string
	}{
		{"none", nil, nil, "127.0.0.1", "10.0.0.1", 20880, 0, nil},
		{"all four", []string{"DUBBO_IP_TO_BIND=127.0.0.2", "DUBBO_PORT_TO_BIND=20999", "DUBBO_IP_TO_REGISTRY=192.168.7.7", "DUBBO_PORT_TO_REGISTRY=30880"}, nil,
			"127.0.0.2", "192.168.7.7", 20999, 30880, []string{
				`DUBBO_IP_TO_BIND=127.0.0.2 overrides protocol.host = "127.0.0.1"`,
				"DUBBO_PORT_TO_BIND=20999 overrides protocol.port = 20880",
				`DUBBO_IP_TO_REGISTRY=192.168.7.7 overrides protocol.registry-host = "10.0.0.1"`}},
		{"protocol prefix first", []string{"DUBBO_IP_TO_REGISTRY=192.168.7.7", "DUBBO_DUBBO_IP_TO_REGISTRY=192.168.8.8"}, nil,
			"127.0.0.1", "192.168.8.8", 20880, 0, []string{`DUBBO_DUBBO_IP_TO_REGISTRY=192.168.8.8 overrides protocol.registry-host = "10.0.0.1"`}},
		{"over --set and DUBBO_<KEY>", []string{"DUBBO_PORT_TO_REGISTRY=30881", "DUBBO_PROTOCOL_REGISTRY_PORT=40000"},
			[]string{"protocol.registry-port=40001"}, "127.0.0.1", "10.0.0.1", 20880, 30881,
			[]string{"DUBBO_PORT_TO_REGISTRY=30881 overrides protocol.registry-port = 40001"}},
		{"equal values need no warning", []string{"DUBBO_IP_TO_BIND=127.0.0.1"}, nil, "127.0.0.1", "10.0.0.1", 20880, 0, nil},
		{"a host name", []string{"DUBBO_IP_TO_REGISTRY=provider-0.greeter.svc"}, nil, "127.0.0.1", "provider-0.greeter.svc", 20880, 0,
			[]string{"overrides protocol.registry-host"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Load(writeFile(t, file), false, tt.environ, tt.sets)
			if err != nil {
				t.Fatal(err)
			}
			pc := f.Provider.Protocol
			if pc.Host != tt.host || pc.Port != tt.port || pc.RegistryHost != tt.regHost || pc.RegistryPort != tt.regPort {
				t.Errorf("protocol %s:%d registered as %s:%d, want %s:%d as %s:%d",
					pc.Host, pc.Port, pc.RegistryHost, pc.RegistryPort, tt.host, tt.port, tt.regHost, tt.regPort)
			}
			if len(f.Warnings) != len(tt.warnings) {
				t.Fatalf("warnings %q, want %q", f.Warnings, tt.warnings)
			}
			for i, w := range tt.warnings {
				if !strings.Contains(f.Warnings[i], w) {
					t.Errorf("warning %q, want %q", f.Warnings[i], w)
				}
			}
		})
	}
	for _, bad := range []struct{ env, want string }{
		{"DUBBO_PORT_TO_BIND=abc", `environment DUBBO_PORT_TO_BIND="abc": not a port`},
		{"DUBBO_PORT_TO_REGISTRY=0", `DUBBO_PORT_TO_REGISTRY="0": not a port`},
		{"DUBBO_IP_TO_REGISTRY=0.0.0.0", "consumers cannot dial the unspecified address"},
		{"DUBBO_IP_TO_BIND=a b", `DUBBO_IP_TO_BIND="a b": not an IP address or host name`},
	} {
		if _, err := Load(writeFile(t, file), false, []string{bad.env}, nil); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want %q", bad.env, err, bad.want)
		}
	}
}

// Each protocol reads the variables with its name in front; the bare ones
// are the main protocol's, whose hosts the others take.
func TestAddressEnvironmentPerProtocol(t *testing.T) {
	file := "[protocol]\nport = 20880\n[protocols.tri]\nport = 50051\n"
	f, err := Load(writeFile(t, file), false, []string{"DUBBO_PORT_TO_BIND=20999", "TRI_DUBBO_PORT_TO_BIND=50099",
		"TRI_DUBBO_PORT_TO_REGISTRY=30051", "DUBBO_IP_TO_REGISTRY=192.168.7.7"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pc := f.Provider.Protocol; pc.Port != 20999 || pc.RegistryHost != "192.168.7.7" || pc.RegistryPort != 0 {
		t.Errorf("protocol %+v", pc)
	}
	if tri := f.Provider.Protocols.Tri; tri.Port != 50099 || tri.RegistryPort != 30051 || tri.RegistryHost != "" {
		t.Errorf("protocols.tri %+v", tri)
	}
	if len(f.Warnings) != 2 || !strings.Contains(f.Warnings[1], "TRI_DUBBO_PORT_TO_BIND=50099 overrides protocols.tri.port = 50051") {
		t.Errorf("warnings %q", f.Warnings)
	}
	// With tri the main protocol, TRI_ is its prefix and the bare ones are its too.
	f, err = Load("", false, []string{"TRI_DUBBO_PORT_TO_BIND=50098", "DUBBO_DUBBO_PORT_TO_BIND=1"}, []string{"protocol.name=tri"})
	if err != nil || f.Provider.Protocol.Port != 50098 {
		t.Errorf("protocol.name=tri with TRI_DUBBO_PORT_TO_BIND: %+v, %v", f.Provider.Protocol, err)
	}
}

// No config key's DUBBO_<KEY> variable is one of Dubbo's address
// variables, so neither can be taken for the other.
func TestAddressEnvironmentIsNoKey(t *testing.T) {
	for key := range knownKeys(reflect.TypeOf(File{}), "") {
		name := EnvPrefix + strings.NewReplacer(".", "_", "-", "_").Replace(strings.ToUpper(key))
		if isAddressEnv(name) {
			t.Errorf("key %s maps to %s, which is Dubbo's address variable", key, name)
		}
	}
	// A variable that would map onto no key is ignored by the key mapping.
	env, err := envOverrides([]string{"DUBBO_IP_TO_BIND=127.0.0.9"}, map[string]reflect.Type{"ip.to-bind": reflect.TypeOf("")})
	if err != nil || len(env) != 0 {
		t.Errorf("DUBBO_IP_TO_BIND taken as key ip.to-bind: %v %v", env, err)
	}
}
