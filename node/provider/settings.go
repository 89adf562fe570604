package provider

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/dubbo-lab/dubbo/node/cluster/loadbalance"
	"github.com/dubbo-lab/dubbo/node/dispatch"
	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/provider/settings"
	"github.com/dubbo-lab/dubbo/node/url"
)

// KeyThreads is the provider URL parameter with the pool size, which an
// override rule may change.
const KeyThreads = "threads"

// ServiceConfig is one [[provider.services]] table: settings for the
// exported services of an interface, or only of one version or group.
type ServiceConfig struct {
	// Interface is the Java interface name. Required.
	Interface string `koanf:"interface"`
	// Version and Group, when set, narrow the services the settings apply
	// to. Default: every version and group.
	Version string `koanf:"version"`
	Group   string `koanf:"group"`
	// Protocols limits the service to these of the provider's protocols
	// (dubbo, tri), as Dubbo's service protocol. Default: every protocol
	// the provider serves that can carry the service (a protobuf service
	// goes over tri only).
	Protocols []string `koanf:"protocols"`
	// The settings, written in the same table.
	settings.Settings `koanf:",squash"`
}

// matches says whether c applies to the service iface, version, group.
func (c *ServiceConfig) matches(iface, version, group string) bool {
	return c.Interface == iface && (c.Version == "" || url.NormalVersion(c.Version) == url.NormalVersion(version)) &&
		(c.Group == "" || c.Group == group)
}

// specificity ranks matching tables: the one naming more wins.
func (c *ServiceConfig) specificity() int {
	n := 0
	if c.Version != "" {
		n += 2
	}
	if c.Group != "" {
		n++
	}
	return n
}

// serviceConfig is the [[provider.services]] table that applies to the
// service, nil if none does.
func (c Config) serviceConfig(iface, version, group string) *ServiceConfig {
	var best *ServiceConfig
	for i := range c.Services {
		s := &c.Services[i]
		if s.matches(iface, version, group) && (best == nil || s.specificity() > best.specificity()) {
			best = s
		}
	}
	return best
}

// CheckParams reports the first service URL parameter that cannot be
// written or means nothing: a reserved or malformed key, a value that
// would break the URL, a negative or non-integer number, an unknown load
// balancer, dispatcher, thread pool or serialization (the extension
// tables' names). Keys are named as they are given.
func CheckParams(params map[string]string) error {
	if err := settings.CheckParams(params); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v := params[k]
		var err error
		switch settings.Base(k) {
		case settings.KeyLoadBalance:
			if !slices.Contains(loadbalance.Names(), v) {
				err = fmt.Errorf("unknown load balancer %q; known: %s", v, strings.Join(loadbalance.Names(), ", "))
			}
		case "dispatcher":
			err = dispatch.CheckDispatcher(v)
		case "threadpool":
			err = dispatch.CheckPool(v)
		case "serialization": // and prefer.serialization, a list
			for _, name := range strings.Split(v, ",") {
				if err = protocol.CheckSerialization(strings.TrimSpace(name)); err != nil {
					break
				}
			}
		}
		if err != nil {
			return fmt.Errorf("parameter %s: %w", k, err)
		}
	}
	return nil
}

// validate checks one [[provider.services]] table; key is its config key
// ("provider.services[0]"), served the protocols the provider serves.
func (c *ServiceConfig) validate(key string, served []ProtocolConfig) error {
	if c.Interface == "" {
		return fmt.Errorf("%s.interface: missing; name the Java interface the settings are for", key)
	}
	for _, name := range c.Protocols {
		if !slices.ContainsFunc(served, func(pc ProtocolConfig) bool { return pc.Name == name }) {
			return fmt.Errorf("%s.protocols: %q is not a protocol this provider serves (%s); set protocol.name or add a [protocols.%s] table",
				key, name, strings.Join(servedNames(served), ", "), name)
		}
	}
	for _, d := range []struct {
		name string
		d    *time.Duration
	}{{"timeout", &c.Timeout}, {"warmup", c.Warmup}, {"delay", &c.Delay}} {
		if d.d != nil && *d.d < 0 {
			return fmt.Errorf("%s.%s: %s is negative", key, d.name, *d.d)
		}
	}
	for _, n := range []struct {
		name string
		n    *int
	}{{"weight", c.Weight}, {"retries", c.Retries}, {"executes", &c.Executes}, {"actives", &c.Actives}} {
		if n.n != nil && *n.n < 0 {
			return fmt.Errorf("%s.%s: %d is negative", key, n.name, *n.n)
		}
	}
	if c.LoadBalance != "" && !slices.Contains(loadbalance.Names(), c.LoadBalance) {
		return fmt.Errorf("%s.loadbalance: unknown load balancer %q; known: %s", key, c.LoadBalance, strings.Join(loadbalance.Names(), ", "))
	}
	if err := CheckParams(c.Parameters); err != nil {
		return fmt.Errorf("%s.parameters: %w", key, err)
	}
	return nil
}

// servedNames are the names of served protocols.
func servedNames(served []ProtocolConfig) []string {
	names := make([]string, len(served))
	for i, pc := range served {
		names[i] = pc.Name
	}
	return names
}
