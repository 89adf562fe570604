package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Java Dubbo's environment variables for the address a provider binds and
// the one it registers, which differ behind NAT, in a container or in
// Kubernetes. They are read as Java's ServiceConfig (findConfiguredHosts,
// findConfiguredPort) reads them: first with the protocol's name in front
// (DUBBO_DUBBO_IP_TO_BIND), then bare; and, as in Java, they win over the
// configuration (file, DUBBO_<KEY> and --set alike), which then gets a
// warning. They are not config keys: the DUBBO_<KEY> mapping never takes
// them.
var addressEnv = []struct {
	name string // Java's, without the protocol prefix
	key  string // the config key it overrides
	port bool
}{
	{"DUBBO_IP_TO_BIND", "protocol.host", false},
	{"DUBBO_PORT_TO_BIND", "protocol.port", true},
	{"DUBBO_IP_TO_REGISTRY", "protocol.registry-host", false},
	{"DUBBO_PORT_TO_REGISTRY", "protocol.registry-port", true},
}

// protocolEnvPrefix is Java's prefix for these variables: the protocol
// name, upper case, and '_'.
const protocolEnvPrefix = "DUBBO_"

// isAddressEnv says whether an environment variable is one of them.
func isAddressEnv(name string) bool {
	for _, a := range addressEnv {
		if name == a.name || name == protocolEnvPrefix+a.name {
			return true
		}
	}
	return false
}

// applyAddressEnv sets f's [protocol] addresses from the environment and
// returns a warning for each config value it overrides.
func applyAddressEnv(f *File, environ []string) (warnings []string, err error) {
	env := map[string]string{}
	for _, kv := range environ {
		if name, val, ok := strings.Cut(kv, "="); ok && isAddressEnv(name) {
			env[name] = val
		}
	}
	pc := &f.Protocol
	for _, a := range addressEnv {
		name := protocolEnvPrefix + a.name
		val := strings.TrimSpace(env[name])
		if val == "" {
			name, val = a.name, strings.TrimSpace(env[a.name])
		}
		if val == "" {
			continue
		}
		if a.port {
			port, err := strconv.Atoi(val)
			if err != nil || port < 1 || port > 65535 {
				return nil, fmt.Errorf("environment %s=%q: not a port (1-65535)", name, val)
			}
			target := &pc.Port
			if a.key == "protocol.registry-port" {
				target = &pc.RegistryPort
			}
			if *target != 0 && *target != port {
				warnings = append(warnings, fmt.Sprintf("%s=%d overrides %s = %d, as in Java Dubbo", name, port, a.key, *target))
			}
			*target = port
			continue
		}
		if !validHost(val) {
			return nil, fmt.Errorf("environment %s=%q: not an IP address or host name", name, val)
		}
		target := &pc.Host
		if a.key == "protocol.registry-host" {
			if ip := net.ParseIP(val); ip != nil && ip.IsUnspecified() {
				return nil, fmt.Errorf("environment %s=%q: consumers cannot dial the unspecified address; give the address they reach this provider at", name, val)
			}
			target = &pc.RegistryHost
		}
		if *target != "" && *target != val {
			warnings = append(warnings, fmt.Sprintf("%s=%s overrides %s = %q, as in Java Dubbo", name, val, a.key, *target))
		}
		*target = val
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
