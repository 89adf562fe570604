//lint:file-ignore SA1019 v1alpha is deprecated, and still what dubbo-go v3.3.0 and older gRPC tools ask for.
package provider

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/triple"
)

// The gRPC services every gRPC tool expects on the Triple port (PROTOCOLS.md
// D.1):
//
//   - grpc.health.v1.Health: Check and Watch. "" is the whole server:
//     SERVING while the provider is ready (Options.Ready, the node's QoS
//     ready probe), NOT_SERVING once it shuts down. A service name is
//     SERVING while one of its versions and groups is exported on tri and
//     registered, NOT_SERVING while they are all offline or withdrawn by a
//     rule, or the provider shuts down; any other name (a service waiting
//     for its delay too) is NOT_FOUND (Check) or SERVICE_UNKNOWN (Watch).
//   - gRPC server reflection, grpc.reflection.v1 and v1alpha (grpc-go's
//     servers of both, over this port's protobuf services' descriptors),
//     which lists those services and these three.
const (
	healthService       = "grpc.health.v1.Health"
	reflectionV1        = "grpc.reflection.v1.ServerReflection"
	reflectionV1Alpha   = "grpc.reflection.v1alpha.ServerReflection"
	reflectionMethod    = "ServerReflectionInfo"
	healthWatchInterval = time.Second // Watch also looks again this often: the node's readiness does not say when it changes
)

// grpcService routes a call of one of those services; ok false for any
// other service.
func (p *Provider) grpcService(c *triple.Call) (m triple.Method, st *triple.Status, ok bool) {
	switch c.Service {
	case healthService:
		switch c.Method {
		case "Check":
			return healthCheck{p}, nil, true
		case "Watch":
			return healthWatch{p}, nil, true
		}
	case reflectionV1:
		if c.Method == reflectionMethod {
			return p.reflection.v1, nil, true
		}
	case reflectionV1Alpha:
		if c.Method == reflectionMethod {
			return p.reflection.v1alpha, nil, true
		}
	default:
		return nil, nil, false
	}
	return nil, triple.Errorf(triple.Unimplemented, "unknown method %s for service %s", c.Method, c.Service), true
}

// health is what the health service reports from: the node's readiness,
// and a signal of the provider's changes for Watch.
type health struct {
	ready func() bool // nil: ready once started

	mu   sync.Mutex
	wake chan struct{} // closed on a change, then replaced
}

func newHealth(ready func() bool) *health { return &health{ready: ready, wake: make(chan struct{})} }

// changed wakes the watchers: an export, an unexport, a rule, offline,
// the shutdown.
func (h *health) changed() {
	h.mu.Lock()
	close(h.wake)
	h.wake = make(chan struct{})
	h.mu.Unlock()
}

func (h *health) changes() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.wake
}

// healthOf is the status of service on the tri server; known false for a
// service it does not serve.
func (p *Provider) healthOf(service string) (st healthpb.HealthCheckResponse_ServingStatus, known bool) {
	serving := healthpb.HealthCheckResponse_SERVING
	if p.isShutdown() {
		serving = healthpb.HealthCheckResponse_NOT_SERVING
	}
	switch service {
	case "":
		// Not asked while shutting down: the node's readiness may wait for
		// the registry work of the shutdown.
		if h := p.health.ready; serving == healthpb.HealthCheckResponse_SERVING && h != nil && !h() {
			return healthpb.HealthCheckResponse_NOT_SERVING, true
		}
		return serving, true
	case healthService, reflectionV1, reflectionV1Alpha:
		return serving, true
	}
	es := p.routes.Load().byName[service]
	if len(es) == 0 {
		return healthpb.HealthCheckResponse_SERVICE_UNKNOWN, false
	}
	tri := p.serverOf(ProtocolTriple)
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, e := range es {
		if ep := e.endpoint(tri); ep != nil && (ep.published != nil || e == p.metadata.exporter) {
			return serving, true
		}
	}
	return healthpb.HealthCheckResponse_NOT_SERVING, true
}

func (p *Provider) isShutdown() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.shutdown
}

// healthCheck is grpc.health.v1.Health/Check.
type healthCheck struct{ p *Provider }

func (healthCheck) Kind() rpc.MethodKind { return rpc.Unary }

// Unary answers on a goroutine of its own: the node's readiness may wait
// for a lock, which the connection's reader must not.
func (h healthCheck) Unary(_ context.Context, c *triple.Call, req []byte, reply func([]byte, rpc.Metadata, *triple.Status)) {
	codec := c.Codec
	go h.check(codec, req, reply)
}

func (h healthCheck) check(codec string, req []byte, reply func([]byte, rpc.Metadata, *triple.Status)) {
	var in healthpb.HealthCheckRequest
	if err := unmarshal(codec, req, &in); err != nil {
		reply(nil, nil, triple.Errorf(triple.InvalidArgument, "grpc.health.v1.HealthCheckRequest: %v", err))
		return
	}
	st, known := h.p.healthOf(in.Service)
	if !known {
		reply(nil, nil, triple.Errorf(triple.NotFound, "unknown service %q", in.Service))
		return
	}
	b, err := marshal(codec, &healthpb.HealthCheckResponse{Status: st})
	if err != nil {
		reply(nil, nil, triple.Errorf(triple.Internal, "%v", err))
		return
	}
	reply(b, nil, nil)
}

// healthWatch is grpc.health.v1.Health/Watch: the status now, then each
// change, until the client goes.
type healthWatch struct{ p *Provider }

func (healthWatch) Kind() rpc.MethodKind { return rpc.ServerStream }

func (h healthWatch) Serve(ctx context.Context, c *triple.Call, s triple.Stream) *triple.Status {
	b, err := s.Recv()
	if err != nil {
		return triple.Errorf(triple.InvalidArgument, "no grpc.health.v1.HealthCheckRequest: %v", err)
	}
	var in healthpb.HealthCheckRequest
	if err := unmarshal(c.Codec, b, &in); err != nil {
		return triple.Errorf(triple.InvalidArgument, "grpc.health.v1.HealthCheckRequest: %v", err)
	}
	tick := time.NewTicker(healthWatchInterval)
	defer tick.Stop()
	last := healthpb.HealthCheckResponse_ServingStatus(-1)
	for {
		changes := h.p.health.changes()
		// Read before the status: a shutdown between the two would end
		// the call before its NOT_SERVING was sent.
		down := h.p.isShutdown()
		if st, _ := h.p.healthOf(in.Service); st != last {
			b, err := marshal(c.Codec, &healthpb.HealthCheckResponse{Status: st})
			if err != nil {
				return triple.Errorf(triple.Internal, "%v", err)
			}
			if err := s.Send(b); err != nil {
				return statusOf(err)
			}
			last = st
		}
		if down {
			// Told NOT_SERVING; the call ends so the drain need not wait.
			return triple.Errorf(triple.Unavailable, "the provider is shutting down")
		}
		select {
		case <-ctx.Done():
			return deadlineStatus(ctx, "Watch")
		case <-changes:
		case <-tick.C:
		}
	}
}

// reflectionServers are grpc-go's reflection servers over the provider's
// descriptors, as tri methods.
type reflectionServers struct {
	v1, v1alpha triple.StreamMethod
}

func (p *Provider) newReflection() reflectionServers {
	opts := reflection.ServerOptions{Services: reflected{p}, DescriptorResolver: reflected{p}, ExtensionResolver: protoregistry.GlobalTypes}
	v1 := reflection.NewServerV1(opts)
	v1alpha := reflection.NewServer(opts)
	return reflectionServers{
		v1: reflectionMethodFunc(func(ctx context.Context, c *triple.Call, s triple.Stream) error {
			return v1.ServerReflectionInfo(&grpcStream[*reflectionv1.ServerReflectionRequest, *reflectionv1.ServerReflectionResponse]{
				ctx: ctx, s: s, codec: c.Codec, newReq: func() *reflectionv1.ServerReflectionRequest { return new(reflectionv1.ServerReflectionRequest) }})
		}),
		v1alpha: reflectionMethodFunc(func(ctx context.Context, c *triple.Call, s triple.Stream) error {
			return v1alpha.ServerReflectionInfo(&grpcStream[*reflectionv1alpha.ServerReflectionRequest, *reflectionv1alpha.ServerReflectionResponse]{
				ctx: ctx, s: s, codec: c.Codec, newReq: func() *reflectionv1alpha.ServerReflectionRequest {
					return new(reflectionv1alpha.ServerReflectionRequest)
				}})
		}),
	}
}

// reflectionMethodFunc serves a reflection stream.
type reflectionMethodFunc func(ctx context.Context, c *triple.Call, s triple.Stream) error

func (reflectionMethodFunc) Kind() rpc.MethodKind { return rpc.BidiStream }

func (f reflectionMethodFunc) Serve(ctx context.Context, c *triple.Call, s triple.Stream) *triple.Status {
	if err := f(ctx, c, s); err != nil && !errors.Is(err, io.EOF) {
		return statusOf(err)
	}
	return nil
}

// reflected is what reflection lists and describes: the protobuf services
// served on tri, then the descriptors linked into this binary (health's,
// reflection's, the well-known types).
type reflected struct{ p *Provider }

// GetServiceInfo lists the services; reflection reads only the names.
func (r reflected) GetServiceInfo() map[string]grpc.ServiceInfo {
	out := map[string]grpc.ServiceInfo{healthService: {}, reflectionV1: {}, reflectionV1Alpha: {}}
	for name, es := range r.p.routes.Load().byName {
		if es[0].rpcs != nil {
			out[name] = grpc.ServiceInfo{}
		}
	}
	return out
}

// files are the file registries of the protobuf services served on tri.
func (r reflected) files() []protodesc.Resolver {
	var out []protodesc.Resolver
	for _, es := range r.p.routes.Load().byName {
		for _, e := range es {
			if ps := e.svc.Proto; ps != nil {
				if ps.Files != nil {
					out = append(out, ps.Files)
				} else {
					f := new(protoregistry.Files)
					if f.RegisterFile(ps.Desc.ParentFile()) == nil {
						out = append(out, f)
					}
				}
			}
		}
	}
	return append(out, protoregistry.GlobalFiles)
}

func (r reflected) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	for _, f := range r.files() {
		if fd, err := f.FindFileByPath(path); err == nil {
			return fd, nil
		}
	}
	return nil, protoregistry.NotFound
}

func (r reflected) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	for _, f := range r.files() {
		if d, err := f.FindDescriptorByName(name); err == nil {
			return d, nil
		}
	}
	return nil, protoregistry.NotFound
}

// grpcStream is a tri stream as grpc-go's generated server code sees one:
// a grpc.ServerStream with typed Send and Recv.
type grpcStream[Req, Res proto.Message] struct {
	ctx    context.Context
	s      triple.Stream
	codec  string
	newReq func() Req
}

func (g *grpcStream[Req, Res]) Send(m Res) error { return g.SendMsg(m) }

func (g *grpcStream[Req, Res]) Recv() (Req, error) {
	m := g.newReq()
	if err := g.RecvMsg(m); err != nil {
		var zero Req
		return zero, err
	}
	return m, nil
}

func (g *grpcStream[Req, Res]) SendMsg(m any) error {
	b, err := marshal(g.codec, m.(proto.Message))
	if err != nil {
		return err
	}
	return g.s.Send(b)
}

func (g *grpcStream[Req, Res]) RecvMsg(m any) error {
	b, err := g.s.Recv()
	if err != nil {
		return err
	}
	return unmarshal(g.codec, b, m.(proto.Message))
}

func (g *grpcStream[Req, Res]) Context() context.Context     { return g.ctx }
func (g *grpcStream[Req, Res]) SetHeader(metadata.MD) error  { return nil }
func (g *grpcStream[Req, Res]) SendHeader(metadata.MD) error { return nil }
func (g *grpcStream[Req, Res]) SetTrailer(metadata.MD)       {}

// marshal and unmarshal encode the messages of these services as the
// client's codec says: protobuf, or protobuf JSON.
func marshal(codec string, m proto.Message) ([]byte, error) {
	if codec == "json" {
		return protojson.Marshal(m)
	}
	return proto.Marshal(m)
}

func unmarshal(codec string, b []byte, m proto.Message) error {
	if codec == "json" {
		return protojson.Unmarshal(b, m)
	}
	return proto.Unmarshal(b, m)
}
