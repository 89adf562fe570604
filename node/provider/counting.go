package provider

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/stats"
)

// counting is one call being counted, as Dubbo's MonitorFilter counts a
// provider's calls: the time in the service (not the network), the request's
// size, and the response's size once the transport has encoded it. The zero
// value counts nothing.
type counting struct {
	c     *stats.Counter
	start stats.Start
	input int
}

// begin counts a call of method of e from the consumer with IP peer in,
// when the provider keeps statistics.
func (p *Provider) begin(e *exporter, method string, peer string, input int) counting {
	if p.rec == nil {
		return counting{}
	}
	c := p.rec.Counter(stats.Key{Interface: e.svc.Interface, Group: e.svc.Group, Version: e.svc.Version,
		Method: method, Peer: peer})
	return counting{c: c, start: c.Begin(), input: input}
}

// end counts the call out with its outcome; the response's size reaches the
// counter when the transport encodes resp.
func (k counting) end(o stats.Outcome, resp *protocol.Response) {
	if k.c == nil {
		return
	}
	k.c.End(k.start, o, k.input, 0)
	resp.Output = k.c
}

// peerIPs caches the IP text of consumer connections' addresses: a
// connection's address is one value for all its calls, so a call finds its
// text without formatting (and allocating) it. The cache is emptied when it
// grows past maxPeerIPs, so connections that came and went do not pile up.
type peerIPs struct {
	m sync.Map // net.Addr -> string
	n atomic.Int32

	// Triple's peers come as netip.AddrPort values, which a sync.Map key
	// would move to the heap on every lookup.
	mu  sync.RWMutex
	tri map[netip.AddrPort]string
}

const maxPeerIPs = 4096

func (c *peerIPs) ip(a net.Addr) string {
	if a == nil {
		return ""
	}
	if v, ok := c.m.Load(a); ok {
		return v.(string)
	}
	var s string
	if t, ok := a.(*net.TCPAddr); ok {
		s = t.IP.String() // Dubbo records a consumer by IP, without the port
	} else if host, _, err := net.SplitHostPort(a.String()); err == nil {
		s = host
	} else {
		s = a.String()
	}
	if c.n.Add(1) > maxPeerIPs {
		c.m.Clear()
		c.n.Store(1)
	}
	c.m.Store(a, s)
	return s
}
