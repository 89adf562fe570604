package config

import (
	"cmp"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/dubbo-lab/dubbo/node/provider"
)

// Java Dubbo's environment variables for the address a provider binds and
// the one it registers, which differ behind NAT, in a container or in
// Kubernetes. They are read as Java's ServiceConfig (findConfiguredHosts,
// findConfiguredPort) reads them: first with the protocol's name in front
// (DUBBO_DUBBO_IP_TO_BIND, TRI_DUBBO_IP_TO_BIND), then bare; and, as in
// Java, they win over the configuration (file, DUBBO_<KEY> and --set
// alike), which then gets a warning. The bare ones are [protocol]'s (the
// other protocols take its hosts unless they set their own); a
// [protocols.<name>] table reads only those with its name in front, so
// that two protocols are not given one port. They are not config keys:
// the DUBBO_<KEY> mapping never takes them.
var addressEnv = []struct {
	name string // Java's, without the protocol prefix
	key  string // the key it overrides, in its protocol's table
	port bool
}{
	{"DUBBO_IP_TO_BIND", "host", false},
	{"DUBBO_PORT_TO_BIND", "port", true},
	{"DUBBO_IP_TO_REGISTRY", "registry-host", false},
	{"DUBBO_PORT_TO_REGISTRY", "registry-port", true},
}

// isAddressEnv says whether an environment variable that starts as a key's
// would (DUBBO_<NAME>, DUBBO_DUBBO_<NAME>) is one of them.
func isAddressEnv(name string) bool {
	for _, a := range addressEnv {
		if name == a.name || name == envPrefixOf(provider.ProtocolDubbo)+a.name {
			return true
		}
	}
	return false
}

// envPrefixOf is Java's prefix of these variables for a protocol: its
// name, upper case, and '_'.
func envPrefixOf(protocol string) string { return strings.ToUpper(protocol) + "_" }

// addressTarget is one protocol's table the variables may set.
type addressTarget struct {
	table              string // "protocol", "protocols.tri"
	prefix             string // "DUBBO_", "TRI_"
	bare               bool   // the unprefixed variables apply too
	host, registryHost *string
	port, registryPort *int
}

// applyAddressEnv sets f's protocol addresses from the environment and
// returns a warning for each config value it overrides.
func applyAddressEnv(f *File, environ []string) (warnings []string, err error) {
	env := map[string]string{}
	for _, kv := range environ {
		if name, val, ok := strings.Cut(kv, "="); ok && (strings.Contains(name, "_DUBBO_") || isAddressEnv(name)) {
			env[name] = val
		}
	}
	main := cmp.Or(f.Protocol.Name, provider.ProtocolDubbo)
	targets := []addressTarget{{table: "protocol", prefix: envPrefixOf(main), bare: true,
		host: &f.Protocol.Host, registryHost: &f.Protocol.RegistryHost, port: &f.Protocol.Port, registryPort: &f.Protocol.RegistryPort}}
	for _, t := range []struct {
		name string
		s    *provider.ProtocolServer
	}{{provider.ProtocolDubbo, f.Protocols.Dubbo}, {provider.ProtocolTriple, f.Protocols.Tri}} {
		if t.s != nil && t.name != main {
			targets = append(targets, addressTarget{table: "protocols." + t.name, prefix: envPrefixOf(t.name),
				host: &t.s.Host, registryHost: &t.s.RegistryHost, port: &t.s.Port, registryPort: &t.s.RegistryPort})
		}
	}
	for _, target := range targets {
		for _, a := range addressEnv {
			name := target.prefix + a.name
			val := strings.TrimSpace(env[name])
			if val == "" && target.bare {
				name, val = a.name, strings.TrimSpace(env[a.name])
			}
			if val == "" {
				continue
			}
			key := target.table + "." + a.key
			if a.port {
				port, err := strconv.Atoi(val)
				if err != nil || port < 1 || port > 65535 {
					return nil, fmt.Errorf("environment %s=%q: not a port (1-65535)", name, val)
				}
				p := target.port
				if a.key == "registry-port" {
					p = target.registryPort
				}
				if *p != 0 && *p != port {
					warnings = append(warnings, fmt.Sprintf("%s=%d overrides %s = %d, as in Java Dubbo", name, port, key, *p))
				}
				*p = port
				continue
			}
			if !validHost(val) {
				return nil, fmt.Errorf("environment %s=%q: not an IP address or host name", name, val)
			}
			h := target.host
			if a.key == "registry-host" {
				if ip := net.ParseIP(val); ip != nil && ip.IsUnspecified() {
					return nil, fmt.Errorf("environment %s=%q: consumers cannot dial the unspecified address; give the address they reach this provider at", name, val)
				}
				h = target.registryHost
			}
			if *h != "" && *h != val {
				warnings = append(warnings, fmt.Sprintf("%s=%s overrides %s = %q, as in Java Dubbo", name, val, key, *h))
			}
			*h = val
		}
	}
	return warnings, nil
}

// validHost accepts an IP address or a DNS name.
func validHost(h string) bool {
	if net.ParseIP(h) != nil {
		return true
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !(r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				return false
			}
		}
	}
	return len(h) <= 253
}
