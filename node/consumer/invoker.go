package consumer

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/report"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats"
	"github.com/dubbo-lab/dubbo/node/url"
)

// clientPool shares one client per provider address and protocol among
// the references, as Dubbo shares connections, counting its users.
type clientPool struct {
	log *slog.Logger

	mu      sync.Mutex
	clients map[string]*pooledClient // by protocol://host:port
}

type pooledClient struct {
	client client
	refs   int
}

func newClientPool(log *slog.Logger) *clientPool {
	return &clientPool{log: log, clients: make(map[string]*pooledClient)}
}

func poolKey(protocol, addr string) string { return protocol + "://" + addr }

// acquire returns the client of addr over protocol (one of protocols),
// connecting in the background when it is new.
func (p *clientPool) acquire(protocol, addr string, o clientOptions) client {
	key := poolKey(protocol, addr)
	p.mu.Lock()
	defer p.mu.Unlock()
	pc := p.clients[key]
	if pc == nil {
		o.log = p.log
		pc = &pooledClient{client: protocols[protocol](addr, o)}
		p.clients[key] = pc
	}
	pc.refs++
	return pc.client
}

// release closes the client of addr over protocol when its last user is
// gone.
func (p *clientPool) release(protocol, addr string) {
	key := poolKey(protocol, addr)
	p.mu.Lock()
	pc := p.clients[key]
	if pc == nil {
		p.mu.Unlock()
		return
	}
	pc.refs--
	if pc.refs > 0 {
		p.mu.Unlock()
		return
	}
	delete(p.clients, key)
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
// client of its address and protocol. It implements
// cluster.ProviderInvoker, and rpc.Streamer (only a tri:// provider
// streams).
type providerInvoker struct {
	url    *url.URL
	addr   string // url's host:port, the statistics' peer
	client client
	rec    *stats.Recorder // nil: not counted
}

func (c *Consumer) newProviderInvoker(u *url.URL, client client) *providerInvoker {
	return &providerInvoker{url: u, addr: u.Address(), client: client, rec: c.rec}
}

func (p *providerInvoker) URL() *url.URL { return p.url }

// Available is the client's: false as soon as its connections are down or
// the provider announced read-only.
func (p *providerInvoker) Available() bool { return p.client.Available() }

// Invoke sends inv to the provider, with the token its URL publishes.
func (p *providerInvoker) Invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	inv = p.withToken(inv)
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

// Stream opens a stream on the provider (a Triple one), with the token its
// URL publishes. The statistics count the stream as one call of the
// method, from its opening until it ends.
func (p *providerInvoker) Stream(ctx context.Context, inv *rpc.Invocation) (rpc.Stream, error) {
	s, ok := p.client.(rpc.Streamer)
	if !ok {
		return nil, &rpc.CallError{Kind: rpc.ErrBadRequest, Service: inv.Service, Method: inv.Method, Address: p.addr,
			Detail: "streams need a tri:// provider; this one is " + p.url.Protocol() + ":// (limit the reference to protocol = \"tri\")"}
	}
	inv = p.withToken(inv)
	if p.rec == nil {
		return s.Stream(ctx, inv)
	}
	c := p.rec.Counter(stats.Key{Interface: inv.Service, Group: inv.Group, Version: inv.Version,
		Method: inv.Method, Peer: p.addr})
	start := c.Begin()
	st, err := s.Stream(ctx, inv)
	if err != nil {
		c.End(start, stats.OutcomeOf(err), 0, 0)
		return nil, err
	}
	return watchStream(ctx, st, func(err error, sent, received int64) {
		c.End(start, stats.OutcomeOf(err), int(sent), int(received))
	}), nil
}

// watchedStream calls end once, when the stream is over: when Recv
// reports its end (err nil at a clean end) or its context is done (the
// context's error), with the bytes of the messages sent and received.
type watchedStream struct {
	rpc.Stream
	end  func(err error, sent, received int64)
	once sync.Once
	stop func() bool
	// Send and Recv may run on two goroutines.
	sent, received atomic.Int64
}

func watchStream(ctx context.Context, s rpc.Stream, end func(err error, sent, received int64)) rpc.Stream {
	w := &watchedStream{Stream: s, end: end}
	// A stream abandoned by cancelling its context ends there.
	w.stop = context.AfterFunc(ctx, func() { w.over(ctx.Err()) })
	return w
}

func (w *watchedStream) Send(m rpc.Message) error {
	err := w.Stream.Send(m)
	if err == nil {
		w.sent.Add(int64(len(m.Bytes)))
	}
	return err
}

func (w *watchedStream) Recv() (rpc.Message, error) {
	m, err := w.Stream.Recv()
	if err == nil {
		w.received.Add(int64(len(m.Bytes)))
		return m, nil
	}
	w.stop()
	if errors.Is(err, io.EOF) {
		w.over(nil)
	} else {
		w.over(err)
	}
	return m, err
}

func (w *watchedStream) over(err error) {
	w.once.Do(func() { w.end(err, w.sent.Load(), w.received.Load()) })
}

// withToken is inv with the token the provider's URL publishes, as Java's
// consumer sends it. inv is shared by the cluster's attempts, so the token
// goes into a copy.
func (p *providerInvoker) withToken(inv *rpc.Invocation) *rpc.Invocation {
	token := p.url.Param("token")
	if token == "" {
		return inv
	}
	cp := *inv
	cp.Attachments = maps.Clone(inv.Attachments)
	cp.SetAttachment("token", token)
	return &cp
}

// isMonitor reports whether service is Dubbo's MonitorService, whose calls
// (the statistics themselves) are not counted, as in Dubbo.
func isMonitor(service string) bool {
	return service == report.MonitorService || service == legacyMonitorService
}

// legacyMonitorService is Dubbo 2.6's name of the monitor service.
const legacyMonitorService = "com.alibaba.dubbo.monitor.MonitorService"

var _ cluster.ProviderInvoker = (*providerInvoker)(nil)
