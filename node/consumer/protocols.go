package consumer

import (
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/transport"
	tripleclient "github.com/dubbo-lab/dubbo/node/triple/client"
	"github.com/dubbo-lab/dubbo/node/url"
)

// The protocols the consumer calls, by the name provider URLs carry.
const (
	ProtocolDubbo  = "dubbo"
	ProtocolTriple = "tri"
)

// client is the connections to one provider address over one protocol:
// transport.Client for dubbo://, the Triple client for tri://.
type client interface {
	rpc.Invoker
	// Available reports whether a call can be sent now.
	Available() bool
	Close() error
}

// clientOptions are the settings of a new client.
type clientOptions struct {
	connections int
	heartbeat   time.Duration // dubbo only: gRPC has its own keepalive
	log         *slog.Logger
}

// protocols is the one table of the protocols a reference can call: the
// name in provider URLs → the client of one provider address.
var protocols = map[string]func(addr string, o clientOptions) client{
	ProtocolDubbo: func(addr string, o clientOptions) client {
		return transport.NewClient(addr, transport.ClientConfig{Connections: o.connections, Heartbeat: o.heartbeat, Logger: o.log})
	},
	ProtocolTriple: func(addr string, o clientOptions) client {
		return tripleclient.New(addr, tripleclient.Config{Connections: o.connections, Logger: o.log})
	},
}

// Protocols lists the protocols a reference can call, sorted.
func Protocols() []string { return slices.Sorted(maps.Keys(protocols)) }

// callable reports whether the reference calls provider u: one of a
// protocol the consumer speaks and, when the reference names a protocol,
// of that one, as Dubbo's reference protocol filter.
func (rc ReferenceConfig) callable(u *url.URL) bool {
	return callableProtocol(rc.Protocol, u.Protocol())
}

func callableProtocol(want, p string) bool {
	if _, ok := protocols[p]; !ok {
		return false
	}
	return want == "" || want == p
}
