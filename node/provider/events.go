package provider

import (
	"context"
	"net"
	"sort"

	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/transport"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Dubbo's onconnect and ondisconnect service parameters: a service whose
// URL names a method in onconnect (ondisconnect) has it called, without
// arguments, whenever a consumer connects (disconnects), as Java's
// DubboProtocol calls it from its connected and disconnected events. Where
// the call runs is where the dispatcher runs connection events: in the
// pool (all), on the connection's reader before it reads a request
// (direct, message, execution), or one event at a time in order
// (connection). The call goes the way of any other (counted, executes);
// a failure is logged, as Java logs it.

// Parameter keys of the connection events.
const (
	KeyOnConnect    = "onconnect"
	KeyOnDisconnect = "ondisconnect"
)

func (p *Provider) onConnect(remote net.Addr)    { p.connectionEvent(remote, KeyOnConnect) }
func (p *Provider) onDisconnect(remote net.Addr) { p.connectionEvent(remote, KeyOnDisconnect) }

// connectionEvent calls the key method of every service on the dubbo
// server that names one.
func (p *Provider) connectionEvent(remote net.Addr, key string) {
	p.mu.RLock()
	var targets []*exporter
	for _, e := range p.exporters {
		if ep := e.endpoint(p.dubbo); ep != nil && ep.url.Param(key) != "" {
			targets = append(targets, e)
		}
	}
	p.mu.RUnlock()
	sort.Slice(targets, func(i, j int) bool { return targets[i].key < targets[j].key })
	ctx := transport.WithPeer(context.Background(), remote)
	at := arrival{peer: p.peers.ip(remote)}
	for _, e := range targets {
		at.ep = e.endpoint(p.dubbo)
		method := at.ep.url.Param(key)
		att := map[string]any{"path": e.svc.Interface, url.KeyInterface: e.svc.Interface}
		if e.svc.Version != "" {
			att[url.KeyVersion] = e.svc.Version
		}
		if e.svc.Group != "" {
			att[url.KeyGroup] = e.svc.Group
		}
		resp := p.invoke(ctx, &protocol.Response{Status: protocol.StatusOK}, e, at, method, []string{}, nil, att, false, 0, nil)
		switch {
		case resp.Exception != nil:
			p.log.Warn("Failed to invoke event method "+method+"()", "service", e.key, "event", key,
				"consumer", remote.String(), "cause", resp.Exception.Class+": "+resp.Exception.Message)
		case resp.Status != protocol.StatusOK:
			p.log.Warn("Failed to invoke event method "+method+"()", "service", e.key, "event", key,
				"consumer", remote.String(), "cause", resp.ErrorMessage)
		}
	}
}
