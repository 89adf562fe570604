package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/idl"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Protobuf descriptors of referenced services, for calls given in JSON
// (package jsoncall): asked of a tri:// provider with gRPC server
// reflection (package idl) and kept by the reference.

// Timing of descriptor look-ups.
const (
	// describeTimeout bounds one reflection call.
	describeTimeout = 3 * time.Second
	// notDescribedFor is how long a reference believes a provider that
	// said it describes no such service (a Java-interface service over
	// Triple) before asking again, so that JSON calls of it do not ask
	// each time.
	notDescribedFor = time.Minute
)

// protoSchema is what a reference learnt of its service's descriptor.
type protoSchema struct {
	svc atomic.Pointer[protoreflect.ServiceDescriptor] // once found, read without the lock

	mu         sync.Mutex // held while asking: one look-up at a time
	notFound   error      // the last ErrNoDescriptor answer, and when it came
	notFoundAt time.Time
}

// reflector is a client that can make calls outside the rpc model: the
// Triple client, for reflection.
type reflector interface {
	Conn() (grpc.ClientConnInterface, error)
}

// ProtoService returns the protobuf descriptor of iface (of version and
// group) as its tri:// providers describe it with gRPC server reflection,
// through its reference (one on demand when there is none), which keeps
// it. The error wraps idl.ErrNoDescriptor when the service is not a
// protobuf one: no tri:// provider, or one that does not describe it.
func (c *Consumer) ProtoService(ctx context.Context, iface, version, group string) (protoreflect.ServiceDescriptor, error) {
	r, od, err := c.referenceOf(ctx, &rpc.Invocation{Service: iface, Version: version, Group: group})
	if err != nil {
		return nil, err
	}
	if od != nil {
		defer od.done()
	}
	return r.ProtoService(ctx)
}

// ProtoService is Consumer.ProtoService for this reference's service. A
// service without tri:// providers costs no lock and no wait, so calls of
// dubbo:// services given in JSON pay next to nothing for the question.
func (r *Reference) ProtoService(ctx context.Context) (protoreflect.ServiceDescriptor, error) {
	s := &r.schema
	if svc := s.svc.Load(); svc != nil {
		return *svc, nil
	}
	// Providers listed but still connecting (a reference just made) get
	// the time a dial takes; a reference without providers waits not.
	r.WaitAvailable(ctx, 0)
	conn := r.reflectionConn()
	if conn == nil {
		return nil, fmt.Errorf("%s: %w: no tri:// provider is available to ask", r.key, idl.ErrNoDescriptor)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if svc := s.svc.Load(); svc != nil {
		return *svc, nil
	}
	if s.notFound != nil && time.Since(s.notFoundAt) < notDescribedFor {
		return nil, s.notFound
	}
	ctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	svc, err := idl.Resolve(ctx, conn, r.rc.Interface)
	switch {
	case err == nil:
		s.svc.Store(&svc)
	case errors.Is(err, idl.ErrNoDescriptor):
		s.notFound, s.notFoundAt = err, time.Now()
	}
	return svc, err
}

// reflectionConn is a connection to one of the available tri:// providers;
// nil when there is none.
func (r *Reference) reflectionConn() grpc.ClientConnInterface {
	for _, p := range r.Providers() {
		if rf, ok := providerOf(p).client.(reflector); ok {
			if cc, err := rf.Conn(); err == nil {
				return cc
			}
		}
	}
	return nil
}

// providerOf is the consumer's own invoker of a provider the directory
// hands out (a view of it, with its effective URL).
func providerOf(p cluster.ProviderInvoker) *providerInvoker {
	for {
		if pi, ok := p.(*providerInvoker); ok {
			return pi
		}
		u, ok := p.(unwrapper)
		if !ok {
			panic(fmt.Sprintf("consumer: provider invoker %T is not the consumer's", p))
		}
		p = u.Unwrap()
	}
}
