package provider

import (
	"cmp"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/dubbo-lab/dubbo/node/dispatch"
	"github.com/dubbo-lab/dubbo/node/protocol"
)

// The protocols a provider serves: [protocol] is the main one, dubbo by
// default or tri; [protocols.dubbo] and [protocols.tri] add the other, as
// Dubbo's dubbo.protocols.* do. An exported service is served, and its URL
// registered, on every protocol that can carry it (a protobuf service on
// tri only) unless its [[provider.services]] table names its protocols.
// Every protocol's calls run in [protocol]'s business pool, dispatched as
// [protocol] says: the pool bounds the provider, not a port.
const (
	ProtocolDubbo  = "dubbo"
	ProtocolTriple = "tri"
)

// protocolNames are the protocols a provider can serve, in the order
// errors list them.
var protocolNames = []string{ProtocolDubbo, ProtocolTriple}

// Default ports, Dubbo's.
const (
	DefaultPort       = 20880 // dubbo
	DefaultTriplePort = 50051 // tri
)

// defaultPort is the default port of a protocol.
func defaultPort(name string) int {
	if name == ProtocolTriple {
		return DefaultTriplePort
	}
	return DefaultPort
}

// ProtocolConfig is the provider's main protocol ([protocol] in
// dubbo.toml) and the business pool every protocol's calls run in.
type ProtocolConfig struct {
	// Name is the protocol: dubbo (Dubbo's 16-byte header and hessian2)
	// or tri (Triple: gRPC over HTTP/2, and unary calls over HTTP/1.1, on
	// one port). Default dubbo.
	Name string `koanf:"name"`
	// Host is the address to bind and to register. Default "": the first
	// non-loopback IPv4 address of the machine, else 127.0.0.1. "0.0.0.0"
	// binds every interface and registers the machine's address with
	// anyhost=true.
	Host string `koanf:"host"`
	// Port to listen on. Default 20880 for dubbo, 50051 for tri; -1 picks
	// a free port (Dubbo's convention), which tests use.
	Port int `koanf:"port"`
	// Payload is the largest request accepted, in bytes (over tri, the
	// largest request message). Default 8 MiB.
	Payload int `koanf:"payload"`
	// Accepts is the most consumer connections the provider keeps (Dubbo's
	// accepts); one more is closed at once with an error log. Default 0:
	// unlimited.
	Accepts int `koanf:"accepts"`
	// FrameTimeout closes a connection whose request, once begun, has not
	// fully arrived after this long (over tri, answers the call with
	// DeadlineExceeded). Default 10s.
	FrameTimeout time.Duration `koanf:"frame-timeout"`
	// BodyMemory bounds the bytes of large (over 16 KiB) request bodies
	// being received at once, across connections; a body that does not
	// fit waits on its own connection, at most FrameTimeout. The dubbo
	// server's. Default 64 MiB, never below Payload.
	BodyMemory int `koanf:"body-memory"`
	// RegistryHost is the address registered for consumers to dial, when
	// it differs from Host (behind NAT, in a container). The environment
	// variable DUBBO_IP_TO_REGISTRY wins over it. Default: the bound one.
	RegistryHost string `koanf:"registry-host"`
	// RegistryPort is the port registered, when it differs from Port (a
	// mapped port). DUBBO_PORT_TO_REGISTRY wins over it. Default: the
	// bound one.
	RegistryPort int `koanf:"registry-port"`
	// Dispatcher is all, direct, message, execution or connection. Default all.
	Dispatcher string `koanf:"dispatcher"`
	// ThreadPool is fixed, cached, limited or eager. Default fixed.
	ThreadPool string `koanf:"threadpool"`
	// Serialization is the serialization consumers must use; only
	// hessian2 is implemented (over tri, inside the wrapper of
	// Java-interface services). Default hessian2.
	Serialization string `koanf:"serialization"`
	// Threads is the business pool size. Default 200.
	Threads int `koanf:"threads"`
	// Queues is how many calls may wait for a worker. Default 0: none, a
	// call that finds every worker busy is refused with status 100 (over
	// tri, ResourceExhausted).
	Queues int `koanf:"queues"`
	// Heartbeat is Dubbo's heartbeat; connections silent for three of them
	// are closed (over tri, those without a call in progress). Default 60s.
	Heartbeat time.Duration `koanf:"heartbeat"`
	// PoolOnly sends every request to the pool, as Java's dispatchers do.
	// Default false: when nothing else of its connection runs, the
	// connection's reader runs a request itself (counted by the pool as a
	// busy worker), which saves waking a worker; another goroutine reads on
	// once such a request has run 2ms. The dubbo server's.
	PoolOnly bool `koanf:"pool-only"`
}

// name is the protocol's name, dubbo when unset.
func (pc ProtocolConfig) name() string { return cmp.Or(pc.Name, ProtocolDubbo) }

// Protocols are the protocols a provider serves besides [protocol]'s, in
// dubbo.toml [protocols.dubbo] and [protocols.tri] (Dubbo's
// dubbo.protocols.*). The one [protocol] names is configured there, not
// here. Default none.
type Protocols struct {
	Dubbo *ProtocolServer `koanf:"dubbo"`
	Tri   *ProtocolServer `koanf:"tri"`
}

// ProtocolServer is one more protocol's server: where it listens, what it
// registers and its limits. The rest ([protocol]'s pool, dispatcher,
// serialization, body-memory) is [protocol]'s.
type ProtocolServer struct {
	// Host is the address to bind and register. Default: protocol.host.
	Host string `koanf:"host"`
	// Port to listen on. Default 20880 for dubbo, 50051 for tri; -1 picks
	// a free port.
	Port int `koanf:"port"`
	// RegistryHost is the address registered, when it differs from the
	// bound one. Default: protocol.registry-host, else the bound address.
	RegistryHost string `koanf:"registry-host"`
	// RegistryPort is the port registered, when it differs from the bound
	// one. Default: the bound port.
	RegistryPort int `koanf:"registry-port"`
	// Payload, Accepts, FrameTimeout and Heartbeat mean what [protocol]'s
	// do, for this protocol's server. Default: [protocol]'s.
	Payload      int           `koanf:"payload"`
	Accepts      int           `koanf:"accepts"`
	FrameTimeout time.Duration `koanf:"frame-timeout"`
	Heartbeat    time.Duration `koanf:"heartbeat"`
}

// table is the [protocols.<name>] table of a protocol, nil when absent.
func (ps Protocols) table(name string) *ProtocolServer {
	switch name {
	case ProtocolDubbo:
		return ps.Dubbo
	case ProtocolTriple:
		return ps.Tri
	}
	return nil
}

// served lists the protocols c serves, [protocol]'s first, each as a
// ProtocolConfig: a [protocols.<name>] table's own settings, [protocol]'s
// for the rest. Ports are as configured (0: the protocol's default).
func (c Config) served() []ProtocolConfig {
	main := c.Protocol
	main.Name = main.name()
	out := []ProtocolConfig{main}
	for _, name := range protocolNames {
		t := c.Protocols.table(name)
		if t == nil || name == main.Name {
			continue
		}
		pc := main
		pc.Name = name
		pc.Host = cmp.Or(t.Host, main.Host)
		pc.Port = t.Port
		pc.RegistryHost = cmp.Or(t.RegistryHost, main.RegistryHost)
		pc.RegistryPort = t.RegistryPort
		pc.Payload = cmp.Or(t.Payload, main.Payload)
		pc.Accepts = cmp.Or(t.Accepts, main.Accepts)
		pc.FrameTimeout = cmp.Or(t.FrameTimeout, main.FrameTimeout)
		pc.Heartbeat = cmp.Or(t.Heartbeat, main.Heartbeat)
		out = append(out, pc)
	}
	return out
}

// key is the config key of a served protocol's table: "protocol" for the
// main one, "protocols.<name>" for another.
func (c Config) key(pc ProtocolConfig) string {
	if pc.Name == c.Protocol.name() {
		return "protocol"
	}
	return "protocols." + pc.Name
}

// validateProtocols checks [protocol] and the [protocols.<name>] tables.
func (c Config) validateProtocols() error {
	if err := checkProtocol(c.Protocol.Name); err != nil {
		return fmt.Errorf("protocol.name: %w", err)
	}
	if t := c.Protocols.table(c.Protocol.name()); t != nil {
		return fmt.Errorf("protocols.%s: %s is the main protocol (protocol.name); its settings go in [protocol]", c.Protocol.name(), c.Protocol.name())
	}
	if err := c.Protocol.validate("protocol"); err != nil {
		return err
	}
	ports := map[int]string{}
	for _, pc := range c.served() {
		key := c.key(pc)
		if err := pc.validate(key); err != nil {
			return err
		}
		port := cmp.Or(pc.Port, defaultPort(pc.Name))
		if other, dup := ports[port]; dup && port > 0 {
			if pc.Port == 0 {
				return fmt.Errorf("%s: its port, by default %d, is %s.port already; set %s.port", key, port, other, key)
			}
			return fmt.Errorf("%s.port: %d is %s.port already; give each protocol a port of its own", key, port, other)
		}
		ports[port] = key
	}
	return nil
}

// checkProtocol accepts the name of a protocol a provider can serve ("" is
// dubbo).
func checkProtocol(name string) error {
	for _, n := range protocolNames {
		if name == n || name == "" {
			return nil
		}
	}
	return fmt.Errorf("%q: a provider serves %s", name, strings.Join(protocolNames, " or "))
}

// validate checks one protocol's settings; key is its table's config key.
func (pc ProtocolConfig) validate(key string) error {
	if err := dispatch.CheckDispatcher(pc.Dispatcher); err != nil {
		return fmt.Errorf("%s.dispatcher: %w", key, err)
	}
	if err := dispatch.CheckPool(pc.ThreadPool); err != nil {
		return fmt.Errorf("%s.threadpool: %w", key, err)
	}
	if err := protocol.CheckSerialization(pc.Serialization); err != nil {
		return fmt.Errorf("%s.serialization: %w", key, err)
	}
	if pc.Port < -1 || pc.Port > 65535 {
		return fmt.Errorf("%s.port: %d is not a port (-1 picks a free one)", key, pc.Port)
	}
	if pc.RegistryPort < 0 || pc.RegistryPort > 65535 {
		return fmt.Errorf("%s.registry-port: %d is not a port", key, pc.RegistryPort)
	}
	if h := pc.RegistryHost; h != "" && (h == "0.0.0.0" || h == "::" || strings.ContainsAny(h, "/:?& ") && net.ParseIP(h) == nil) {
		return fmt.Errorf("%s.registry-host: %q is not an address consumers can dial", key, h)
	}
	for _, n := range []struct {
		key string
		n   int
	}{{"threads", pc.Threads}, {"accepts", pc.Accepts}, {"payload", pc.Payload}} {
		if n.n < 0 {
			return fmt.Errorf("%s.%s: %d is negative", key, n.key, n.n)
		}
	}
	for _, d := range []struct {
		key string
		d   time.Duration
	}{{"frame-timeout", pc.FrameTimeout}, {"heartbeat", pc.Heartbeat}} {
		if d.d < 0 {
			return fmt.Errorf("%s.%s: %s is negative", key, d.key, d.d)
		}
	}
	return nil
}

// Endpoint is one protocol a running provider serves.
type Endpoint struct {
	Protocol string // dubbo or tri
	// Addr is the registered host:port, the one consumers dial.
	Addr string
	// Bound is the address the server listens on.
	Bound net.Addr
}

// URL is the endpoint as a URL without a path: dubbo://host:port.
func (e Endpoint) URL() string { return e.Protocol + "://" + e.Addr }

// Replica is the config of the i-th (from 0) of several providers on one
// host (dubbo up's replicas): every protocol's port, and its registry
// port when set, i above the configured one (an unset port is the
// protocol's default; -1, any free port, stays).
func (c Config) Replica(i int) Config {
	shift := func(port, def int) int {
		if port == -1 {
			return -1
		}
		return cmp.Or(port, def) + i
	}
	c.Protocol.Port = shift(c.Protocol.Port, defaultPort(c.Protocol.name()))
	if c.Protocol.RegistryPort > 0 {
		c.Protocol.RegistryPort += i // each replica's port is mapped as the first one's
	}
	for _, t := range []struct {
		name  string
		table **ProtocolServer
	}{{ProtocolDubbo, &c.Protocols.Dubbo}, {ProtocolTriple, &c.Protocols.Tri}} {
		if *t.table == nil {
			continue
		}
		s := **t.table
		s.Port = shift(s.Port, defaultPort(t.name))
		if s.RegistryPort > 0 {
			s.RegistryPort += i
		}
		*t.table = &s
	}
	return c
}
