package provider

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/dubbo-lab/dubbo/node/dispatch"
	"github.com/dubbo-lab/dubbo/node/stats"
	"github.com/dubbo-lab/dubbo/node/triple"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Serving Triple (tri://): the provider is the triple.Handler of its tri
// server. Route finds the service by the :path's service and the
// tri-service-version and tri-service-group headers, checks the token, and
// picks the method:
//
//   - a protobuf service's rpc (triple_proto.go): the messages go to the
//     service's ProtoInvoker (a plugin) as the client encoded them, or
//     translated from and to protobuf JSON (application/grpc+json, and
//     application/json over HTTP/1.1) with the service's descriptor;
//   - a Java-interface service's method in Dubbo's wrapper mode
//     (triple_wrapper.go), or with JSON over HTTP/1.1 as Java Dubbo 3.3
//     serves it (triple_json.go), called as a dubbo call would be;
//   - grpc.health.v1.Health and gRPC server reflection (triple_grpc.go).
//
// Every call is counted as a dubbo call is (node/stats), holds one of the
// business pool's threads while it runs (none free: ResourceExhausted)
// and counts against its method's executes; the caller's deadline
// (grpc-timeout) bounds the call, in the plugin too.

// Triple's request headers that select a service (PROTOCOLS.md D.1).
const (
	headerVersion = "tri-service-version"
	headerGroup   = "tri-service-group"
	// headerExceptionCode is Java's response header saying the answer is
	// an exception; its value for a business exception is Java's
	// RpcException.BIZ_EXCEPTION.
	headerExceptionCode = "tri-exception-code"
	bizException        = "3"
)

// tripleRoutes are the services the tri server routes to, by interface
// (the :path's service), each list sorted by service key. A new one is
// made on every export and unexport, so Route reads it without a lock.
type tripleRoutes struct {
	byName map[string][]*exporter
}

// reroute rebuilds the routes from the exporters. p.mu is held.
func (p *Provider) reroute() {
	tri := p.serverOf(ProtocolTriple)
	if tri == nil {
		return
	}
	r := &tripleRoutes{byName: map[string][]*exporter{}}
	for _, e := range append(mapValues(p.exporters), p.metadata.exporter) {
		if e.endpoint(tri) != nil {
			r.byName[e.svc.Interface] = append(r.byName[e.svc.Interface], e)
		}
	}
	for _, es := range r.byName {
		slices.SortFunc(es, func(a, b *exporter) int { return strings.Compare(a.key, b.key) })
	}
	p.routes.Store(r)
}

func mapValues(m map[string]*exporter) []*exporter {
	out := make([]*exporter, 0, len(m)+1)
	for _, e := range m {
		out = append(out, e)
	}
	return out
}

// tripleHandler serves the calls of the provider's tri server s.
type tripleHandler struct {
	p *Provider
	s *server
}

// Route implements triple.Handler. It runs on the connection's reader:
// map lookups only.
func (h *tripleHandler) Route(c *triple.Call) (triple.Method, *triple.Status) {
	if m, st, ok := h.p.grpcService(c); ok {
		return m, st
	}
	e, st := h.p.tripleLookup(c)
	if st != nil {
		return nil, st
	}
	if e.token != "" && c.Header.Get("token") != e.token {
		// Java's TokenFilter refuses it; the token is published in the
		// provider URL.
		return nil, triple.Errorf(triple.PermissionDenied, "Invalid token! Forbid invoke remote service %s method %s() from consumer %s to provider %s: "+
			"the consumer must send the token published in the provider URL (subscribe through the registry, or set it) as the token header",
			e.svc.Interface, c.Method, c.Peer, h.s.addr())
	}
	if e.rpcs != nil {
		return e.protoRoute(c)
	}
	return e.wrapperRoute(c)
}

// tripleLookup finds the service a call names. A client that sends
// neither tri-service-version nor tri-service-group (a plain gRPC client)
// gets the version and group without either, or the only one there is;
// when there are several it is told which and how to choose.
func (p *Provider) tripleLookup(c *triple.Call) (*exporter, *triple.Status) {
	es := p.routes.Load().byName[c.Service]
	version, group := url.NormalVersion(c.Header.Get(headerVersion)), c.Header.Get(headerGroup)
	for _, e := range es {
		if url.NormalVersion(e.svc.Version) == version && e.svc.Group == group {
			return e, nil
		}
	}
	asked := version != "" || group != ""
	switch {
	case len(es) == 1 && !asked:
		return es[0], nil
	case len(es) == 0 || asked:
		return nil, triple.Errorf(triple.Unimplemented, "Not found exported service: %s in %v, may be version or group mismatch; "+
			"check the service, version (%s) and group (%s) of the call (consumer %s)",
			url.ServiceKey(c.Service, version, group), p.keysOn(p.serverOf(ProtocolTriple)), headerVersion, headerGroup, c.Peer)
	}
	served := make([]string, len(es))
	for i, e := range es {
		served[i] = fmt.Sprintf("version %q group %q", e.svc.Version, e.svc.Group)
	}
	return nil, triple.Errorf(triple.InvalidArgument, "%s is served here in %d versions and groups (%s): send the headers %s and %s to choose one",
		c.Service, len(es), strings.Join(served, "; "), headerVersion, headerGroup)
}

// hold takes one of the business pool's threads for a call that runs
// elsewhere (a plugin), as the dubbo server does; a dispatcher that runs
// requests on the IO goroutine takes none.
func (p *Provider) hold() (release func(), st *triple.Status) {
	if release, ok := p.disp.Hold(); ok {
		return release, nil
	}
	return nil, p.exhausted(nil)
}

// exhausted is the status of a call the business pool refused (err, when
// the pool said why).
func (p *Provider) exhausted(err error) *triple.Status {
	if err == nil {
		st := p.pool.Stats()
		err = fmt.Errorf("all %d threads are busy", st.Max)
	}
	return triple.Errorf(triple.ResourceExhausted, "Server side(%s) thread pool is exhausted, detail msg:%v", p.Addr(), err)
}

// dispatch runs task in the business pool, as the dispatcher sends
// requests; a refused task is answered with the pool's status.
func (p *Provider) dispatch(task func()) *triple.Status {
	if err := p.disp.Dispatch(dispatch.Request, task); err != nil {
		return p.exhausted(err)
	}
	return nil
}

// ipOf is the IP of a Triple client, as statistics key consumers.
func (c *peerIPs) ipOf(ap netip.AddrPort) string {
	if !ap.IsValid() {
		return ""
	}
	c.mu.RLock()
	s, ok := c.tri[ap]
	c.mu.RUnlock()
	if ok {
		return s
	}
	s = ap.Addr().Unmap().String()
	c.mu.Lock()
	if c.tri == nil || len(c.tri) >= maxPeerIPs {
		c.tri = make(map[netip.AddrPort]string)
	}
	c.tri[ap] = s
	c.mu.Unlock()
	return s
}

// tripleOutcomes are how calls that end with these codes count; any other
// status is the handler's, a failure of its business.
var tripleOutcomes = map[triple.Code]stats.Outcome{
	triple.OK:                stats.Success,
	triple.DeadlineExceeded:  stats.Timeout,
	triple.ResourceExhausted: stats.Limit,
	triple.Unavailable:       stats.ServiceUnavailable,
	triple.Canceled:          stats.Network,
}

// tripleOutcome is how a call that ended with st counts.
func tripleOutcome(st *triple.Status) stats.Outcome {
	if st == nil {
		return stats.Success
	}
	if o, ok := tripleOutcomes[st.Code]; ok {
		return o
	}
	return stats.BusinessFailed
}

// endCount counts a Triple call out: its outcome and its response's size.
func (k counting) endCount(o stats.Outcome, output int) {
	if k.c != nil {
		k.c.End(k.start, o, k.input, output)
	}
}

// deadlineStatus is the status of a call whose context ended.
func deadlineStatus(ctx context.Context, what string) *triple.Status {
	if ctx.Err() == context.DeadlineExceeded {
		return triple.Errorf(triple.DeadlineExceeded, "%s did not finish within the caller's deadline", what)
	}
	return triple.Errorf(triple.Canceled, "%s: %v", what, ctx.Err())
}
