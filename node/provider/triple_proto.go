package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/dubbo-lab/dubbo/node/idl"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/triple"
)

// ProtoService is what makes a Service a protobuf (IDL) one: its
// descriptor, and the way to its handlers, which live elsewhere (a
// plugin). The provider never decodes its messages, except to translate
// JSON.
type ProtoService struct {
	// Desc is the service's descriptor. Required.
	Desc protoreflect.ServiceDescriptor
	// Files hold Desc's file and every file it imports, for gRPC server
	// reflection. Default: Desc's file alone.
	Files *protoregistry.Files
	// Invoker runs the calls. Required.
	Invoker ProtoInvoker
}

// ProtoInvoker runs the calls of a protobuf service, the messages as
// their senders encoded them. A plugin's supervisor, adapted, is one.
type ProtoInvoker interface {
	// CallProto starts a unary call and returns; done gets the outcome
	// exactly once, from any goroutine, and must not block: the response
	// (st nil) or the status the call failed with, and the handler's
	// trailer. ctx's deadline reaches the handler; when ctx ends first,
	// the handler's context ends too.
	CallProto(ctx context.Context, c ProtoCall, req []byte, done func(resp []byte, trailer rpc.Metadata, st *triple.Status))
	// OpenStream opens a call of a streaming method; it ends with ctx.
	// The error is a *triple.Status.
	OpenStream(ctx context.Context, c ProtoCall) (ProtoStream, error)
}

// ProtoCall names the method a call is for, with the caller's metadata.
type ProtoCall struct {
	Service, Version, Group string
	Method                  string
	Metadata                rpc.Metadata
}

// ProtoStream is an open streaming call to a handler. Send and CloseSend
// may run on one goroutine while Header and Recv run on another.
type ProtoStream interface {
	// Send sends a request message; io.EOF once the handler ended the
	// call (Recv then says how).
	Send(msg []byte) error
	// CloseSend says no more requests follow.
	CloseSend() error
	// Header waits for the handler's response header.
	Header() (rpc.Metadata, error)
	// Recv returns the next response message; io.EOF once the call ended
	// OK, else the *triple.Status it ended with.
	Recv() ([]byte, error)
	// Trailer is the handler's trailer, once Recv returned an error.
	Trailer() rpc.Metadata
}

// protoMethod is one rpc of an exported protobuf service, as the tri
// server serves it: bytes in and out. asJSON serves the same rpc to a
// client that sends protobuf JSON.
type protoMethod struct {
	p      *Provider
	e      *exporter
	ep     *endpoint // e on the tri server
	name   string
	kind   rpc.MethodKind
	idl    *idl.Method
	asJSON *protoJSON
}

// protoJSON is a protoMethod for a client that speaks protobuf JSON
// (application/grpc+json; application/json over HTTP/1.1).
type protoJSON struct{ m *protoMethod }

// protoMethods makes the rpcs of e, a protobuf service served on its
// endpoint ep.
func protoMethods(p *Provider, e *exporter, ep *endpoint) (map[string]*protoMethod, error) {
	desc := e.svc.Proto.Desc
	if desc == nil || e.svc.Proto.Invoker == nil {
		return nil, errors.New("a protobuf service needs its descriptor and an invoker")
	}
	if string(desc.FullName()) != e.svc.Interface {
		return nil, fmt.Errorf("its descriptor is of %s", desc.FullName())
	}
	out := make(map[string]*protoMethod, desc.Methods().Len())
	for i := range desc.Methods().Len() {
		md := desc.Methods().Get(i)
		im, err := idl.MethodOf(desc, string(md.Name()))
		if err != nil {
			return nil, err
		}
		m := &protoMethod{p: p, e: e, ep: ep, name: string(md.Name()), kind: im.Kind(), idl: im}
		m.asJSON = &protoJSON{m}
		out[m.name] = m
	}
	return out, nil
}

// protoRoute picks the rpc a call names, in the encoding it speaks.
func (e *exporter) protoRoute(c *triple.Call) (triple.Method, *triple.Status) {
	m := e.rpcs[c.Method]
	if m == nil {
		names := make([]string, 0, len(e.rpcs))
		for n := range e.rpcs {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, triple.Errorf(triple.Unimplemented, "service %s has no method %s; it has %s", e.key, c.Method, strings.Join(names, ", "))
	}
	switch c.Codec {
	case "proto":
		return m, nil
	case "json":
		return m.asJSON, nil
	}
	return nil, triple.Errorf(triple.InvalidArgument, "%s is a protobuf service: send its messages as application/grpc (or +proto, or +json), not +%s", e.key, c.Codec)
}

// call is what the handler gets for c.
func (m *protoMethod) call(c *triple.Call) ProtoCall {
	s := m.e.svc
	return ProtoCall{Service: s.Interface, Version: s.Version, Group: s.Group, Method: m.name, Metadata: c.Header}
}

func (m *protoMethod) Kind() rpc.MethodKind { return m.kind }
func (j *protoJSON) Kind() rpc.MethodKind   { return j.m.kind }

// Unary implements triple.UnaryMethod: the request goes to the handler as
// it came.
func (m *protoMethod) Unary(ctx context.Context, c *triple.Call, req []byte, reply func([]byte, rpc.Metadata, *triple.Status)) {
	m.unary(ctx, c, req, false, reply)
}

// Unary implements triple.UnaryMethod for a JSON client.
func (j *protoJSON) Unary(ctx context.Context, c *triple.Call, req []byte, reply func([]byte, rpc.Metadata, *triple.Status)) {
	j.m.unary(ctx, c, req, true, reply)
}

// unary starts a unary call on the reader: it holds a pool thread and an
// executes slot until the handler answers, on whatever goroutine that is.
func (m *protoMethod) unary(ctx context.Context, c *triple.Call, req []byte, json bool, reply func([]byte, rpc.Metadata, *triple.Status)) {
	p, e := m.p, m.e
	release, st := p.hold()
	if st != nil {
		reply(nil, nil, st)
		return
	}
	executed, refusal, ok := e.beginExecute(m.ep, m.name)
	count := p.begin(e, m.name, p.peers.ipOf(c.Peer), len(req)+5)
	if !ok {
		release()
		count.endCount(tripleOutcome(executesRefused(refusal)), 0)
		reply(nil, nil, executesRefused(refusal))
		return
	}
	if json {
		msg, err := m.idl.Request(req)
		if err != nil {
			release()
			executed()
			st := triple.Errorf(triple.InvalidArgument, "%v", err)
			count.endCount(tripleOutcome(st), 0)
			reply(nil, nil, st)
			return
		}
		req = msg.Bytes
	}
	e.svc.Proto.Invoker.CallProto(ctx, m.call(c), req, func(resp []byte, trailer rpc.Metadata, st *triple.Status) {
		executed()
		release()
		if st == nil && json {
			resp, st = m.toJSON(resp)
		}
		count.endCount(tripleOutcome(st), len(resp)+5)
		reply(resp, trailer, forClient(c, st))
	})
}

// forClient is st as the client of c expects a business exception:
// dubbo-go's Triple client gets dubbo-go's BizError for a handler's error
// (status Unknown), as dubbo-go's own servers answer it, so that its
// failover does not retry the call; every other client gets st.
func forClient(c *triple.Call, st *triple.Status) *triple.Status {
	if st == nil || st.Code != triple.Unknown || !triple.DubboGoClient(c.Header) {
		return st
	}
	biz := *st
	biz.Code = triple.BizError
	return &biz
}

// toJSON is a response message in protobuf JSON.
func (m *protoMethod) toJSON(resp []byte) ([]byte, *triple.Status) {
	js, err := m.idl.Response(rpc.Message{Bytes: resp})
	if err != nil {
		return nil, triple.Errorf(triple.Internal, "%v", err)
	}
	return js, nil
}

// Serve implements triple.StreamMethod: the messages go to the handler as
// they came.
func (m *protoMethod) Serve(ctx context.Context, c *triple.Call, s triple.Stream) *triple.Status {
	return m.serve(ctx, c, s, false)
}

// Serve implements triple.StreamMethod for a JSON client.
func (j *protoJSON) Serve(ctx context.Context, c *triple.Call, s triple.Stream) *triple.Status {
	return j.m.serve(ctx, c, s, true)
}

// serve relays a streaming call between the client and the handler: the
// requests on a goroutine of their own, which the call's end stops (its
// Recv fails then), the responses here. The call holds an executes slot
// until it ends, but no pool thread: a stream waits on its client and on
// the plugin, for as long as they keep it open, and streams that hold
// threads while idle refused every other call of the provider (a client
// opening 200 of them took a pool of 200). As in Java's Triple, a stream
// costs a thread only while work runs (in the plugin); what streams can
// hold is bounded per connection (node/triple's MaxConcurrentStreams and
// windows) and across connections by protocols.tri.accepts.
func (m *protoMethod) serve(ctx context.Context, c *triple.Call, s triple.Stream, json bool) (st *triple.Status) {
	p, e := m.p, m.e
	executed, refusal, ok := e.beginExecute(m.ep, m.name)
	count := p.begin(e, m.name, p.peers.ipOf(c.Peer), 0)
	var out int
	defer func() { count.endCount(tripleOutcome(st), out) }()
	if !ok {
		return executesRefused(refusal)
	}
	defer executed()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ps, err := e.svc.Proto.Invoker.OpenStream(ctx, m.call(c))
	if err != nil {
		return statusOf(err)
	}
	var pumpFail struct {
		sync.Mutex
		st *triple.Status
	}
	go func() {
		for {
			msg, err := s.Recv()
			if err == io.EOF {
				_ = ps.CloseSend()
				return
			}
			if err != nil {
				return // the call ended; so does ctx, and the handler's stream
			}
			if json {
				rm, err := m.idl.Request(msg)
				if err != nil {
					pumpFail.Lock()
					pumpFail.st = triple.Errorf(triple.InvalidArgument, "%v", err)
					pumpFail.Unlock()
					cancel()
					return
				}
				msg = rm.Bytes
			}
			if err := ps.Send(msg); err != nil {
				return // the handler ended the call: Recv says how
			}
		}
	}()
	if md, err := ps.Header(); err == nil && len(md) > 0 {
		_ = s.SetHeader(md)
	}
	for {
		msg, err := ps.Recv()
		if err != nil {
			s.SetTrailer(ps.Trailer())
			pumpFail.Lock()
			defer pumpFail.Unlock()
			switch {
			case pumpFail.st != nil:
				return pumpFail.st
			case err == io.EOF:
				return nil
			}
			return statusOf(err)
		}
		if json {
			var st *triple.Status
			if msg, st = m.toJSON(msg); st != nil {
				return st
			}
		}
		out += len(msg) + 5
		if err := s.Send(msg); err != nil {
			return statusOf(err)
		}
	}
}

// executesRefused is the status of a call over its method's executes.
func executesRefused(refusal string) *triple.Status {
	return &triple.Status{Code: triple.ResourceExhausted, Message: refusal}
}

// statusOf is the status an error from a handler's stream stands for.
func statusOf(err error) *triple.Status {
	var st *triple.Status
	if errors.As(err, &st) {
		return st
	}
	return triple.Errorf(triple.Unknown, "%v", err)
}
