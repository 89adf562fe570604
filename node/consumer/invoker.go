package consumer

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/report"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats"
	"github.com/dubbo-lab/dubbo/node/transport"
	"github.com/dubbo-lab/dubbo/node/url"
)

// clientPool shares one transport.Client per provider address among the
// references, as Dubbo shares connections, counting its users.
type clientPool struct {
	log *slog.Logger

	mu      sync.Mutex
	clients map[string]*pooledClient
}

type pooledClient struct {
	client *transport.Client
	refs   int
}

func newClientPool(log *slog.Logger) *clientPool {
	return &clientPool{log: log, clients: make(map[string]*pooledClient)}
}

// acquire returns the client of addr, connecting in the background when
// it is new.
func (p *clientPool) acquire(addr string, connections int, heartbeat time.Duration) *transport.Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc := p.clients[addr]
	if pc == nil {
		pc = &pooledClient{client: transport.NewClient(addr, transport.ClientConfig{
			Connections: connections,
			Heartbeat:   heartbeat,
			Logger:      p.log,
		})}
		p.clients[addr] = pc
	}
	pc.refs++
	return pc.client
}

// release closes the client of addr when its last user is gone.
func (p *clientPool) release(addr string) {
	p.mu.Lock()
	pc := p.clients[addr]
	if pc == nil {
		p.mu.Unlock()
		return
	}
	pc.refs--
	if pc.refs > 0 {
		p.mu.Unlock()
		return
	}
	delete(p.clients, addr)
	p.mu.Unlock()
	pc.client.Close()
}

func (p *clientPool) closeAll() {
	p.mu.Lock()
	all := p.clients
	p.clients = make(map[string]*pooledClient)
	p.mu.Unlock()
	for _, pc := range all {
		pc.client.Close()
	}
}

// providerInvoker is one provider of one reference: its URL and the shared
// client of its address. It implements cluster.ProviderInvoker.
type providerInvoker struct {
	url    *url.URL
	addr   string // url's host:port, the statistics' peer
	client *transport.Client
	rec    *stats.Recorder // nil: not counted
}

func (c *Consumer) newProviderInvoker(u *url.URL, client *transport.Client) *providerInvoker {
	return &providerInvoker{url: u, addr: u.Address(), client: client, rec: c.rec}
}

func (p *providerInvoker) URL() *url.URL { return p.url }

// Available is the client's: false as soon as its connections are down or
// the provider announced read-only.
func (p *providerInvoker) Available() bool { return p.client.Available() }

// Invoke sends inv to the provider, adding the token its URL publishes, as
// Java's consumer does. inv is shared by the cluster's attempts, so the
// token goes into a copy.
func (p *providerInvoker) Invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	if token := p.url.Param("token"); token != "" {
		cp := *inv
		cp.Attachments = maps.Clone(inv.Attachments)
		cp.SetAttachment("token", token)
		inv = &cp
	}
	if p.rec == nil || isMonitor(inv.Service) {
		res, err := p.client.Invoke(ctx, inv)
		if res != nil {
			res.Provider = p.addr
		}
		return res, err
	}
	// Counted as Dubbo's MonitorFilter counts a consumer's calls: each
	// attempt on one provider, network included, under the method called
	// (the real one of a generic call).
	c := p.rec.Counter(stats.Key{Interface: inv.Service, Group: inv.Group, Version: inv.Version,
		Method: cluster.MethodName(inv), Peer: p.addr})
	start := c.Begin()
	res, err := p.client.Invoke(ctx, inv)
	o, in, out := stats.OutcomeOf(err), 0, 0
	if res != nil {
		res.Provider = p.addr
		in, out = res.RequestBytes, res.ResponseBytes
		if res.Exception != nil {
			o = stats.BusinessFailed
		}
	}
	c.End(start, o, in, out)
	return res, err
}

// isMonitor reports whether service is Dubbo's MonitorService, whose calls
// (the statistics themselves) are not counted, as in Dubbo.
func isMonitor(service string) bool {
	return service == report.MonitorService || service == legacyMonitorService
}

// legacyMonitorService is Dubbo 2.6's name of the monitor service.
const legacyMonitorService = "com.alibaba.dubbo.monitor.MonitorService"

var _ cluster.ProviderInvoker = (*providerInvoker)(nil)
