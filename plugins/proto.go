package plugins

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"

	"github.com/dubbo-lab/dubbo/node/url"
	"github.com/dubbo-lab/dubbo/plugins/internal/wire"
)

// Metadata is gRPC's custom metadata, as a protobuf call carries it to a
// plugin and back: keys in order (a key may repeat), lower-case; keys
// ending in "-bin" carry binary values as they are, not base64. At most
// 1024 entries and 256 KiB.
type Metadata = wire.Metadata

// MetadataField is one entry of Metadata.
type MetadataField = wire.Field

// Status is the outcome of a protobuf call or stream that failed: a gRPC
// code, a message, and optionally details (a serialized
// google.rpc.Status, for grpc-status-details-bin). It is an error.
//
// A handler's status reaches the caller as the handler gave it; the node
// makes the others: Unimplemented for a service or method the plugin did
// not describe, DeadlineExceeded and Canceled when the caller's context
// ends, Unavailable when the plugin is down or dies, ResourceExhausted for
// a message or metadata larger than the link carries, Internal for a
// reply that cannot be read.
type Status = wire.Status

// ProtoCall names the method of a protobuf service that a call or stream
// is for, with the caller's metadata.
type ProtoCall struct {
	// Service is the service's full name (greet.GreetService), Version and
	// Group as the plugin described it ("" for none).
	Service, Version, Group string
	// Method is the method's name as the descriptor spells it (Greet).
	Method   string
	Metadata Metadata
}

func (c *ProtoCall) String() string {
	return "/" + url.ServiceKey(c.Service, c.Version, c.Group) + "/" + c.Method
}

// protoMethod is a protobuf method the plugin described: the indices that
// name it on the link, and its kind.
type protoMethod struct {
	ref  wire.MethodRef
	kind MethodKind
}

// CallProto calls a unary protobuf method of the plugin with the request
// message req, as the caller encoded it: the node never decodes it. It
// sends the call and returns (req may be reused then); done gets the
// outcome exactly once: the response message and trailer when the call
// succeeded (st nil), or the status it failed with (and the handler's
// trailer, if it got that far). done runs on the goroutine that learnt the
// outcome, for a reply the link's reader, so it must not block; resp is
// done's to keep. ctx's deadline travels to the handler; when ctx ends
// first the handler's context ends too.
func (p *Plugin) CallProto(ctx context.Context, c ProtoCall, req []byte, done func(resp []byte, trailer Metadata, st *Status)) {
	m, st := p.protoLookup(&c, Unary)
	if st != nil {
		done(nil, nil, st)
		return
	}
	buf, _ := p.calls.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	head, err := wire.AppendProtoCall((*buf)[:0], m.ref, c.Metadata)
	if err != nil {
		done(nil, nil, &Status{Code: codes.ResourceExhausted, Message: c.String() + ": " + err.Error()})
		return
	}
	defer func() {
		if cap(head) <= maxPooledCall {
			*buf = head
			p.calls.Put(buf)
		}
	}()
	p.link.CallProtoAsync(ctx, head, req, func(reply []byte, err error) {
		switch {
		case err != nil && ctx.Err() == nil && !errors.Is(err, wire.ErrTooBig):
			// The link broke: wait for the exit watcher's reason elsewhere
			// than on the link's goroutine.
			go func() { done(nil, nil, p.linkStatus(ctx, err)) }()
		case err != nil:
			done(nil, nil, p.linkStatus(ctx, err))
		case late(ctx):
			done(nil, nil, &Status{Code: codes.DeadlineExceeded, Message: "plugin " + p.cfg.Name + " did not answer in time"})
		default:
			resp, trailer, st, err := wire.ParseProtoReply(reply)
			if err != nil {
				p.log.Warn("plugin sent a reply that cannot be decoded", "method", c.String(), "err", err)
				st = &Status{Code: codes.Internal, Message: "plugin " + p.cfg.Name + " sent a reply that cannot be decoded: " + err.Error()}
			}
			done(resp, trailer, st)
		}
	})
}

// protoLookup finds the protobuf method c names, of kind; calls to one the
// plugin did not describe are refused before they reach it.
func (p *Plugin) protoLookup(c *ProtoCall, kind MethodKind) (protoMethod, *Status) {
	select {
	case <-p.done:
		return protoMethod{}, &Status{Code: codes.Unavailable, Message: "plugin " + p.cfg.Name + " is down: " + p.exitErr.Error()}
	default:
	}
	id := wire.IDOf(c.Service, c.Version, c.Group)
	m, ok := p.protoMethods[methodID{id, c.Method}]
	switch {
	case ok && m.kind == kind:
		return m, nil
	case ok && kind == Unary:
		return m, &Status{Code: codes.Internal, Message: c.String() + " is a " + m.kind.String() + " method: open a stream to call it"}
	case ok:
		return m, &Status{Code: codes.Internal, Message: c.String() + " is a unary method: call it with CallProto"}
	}
	key := url.ServiceKey(c.Service, c.Version, c.Group)
	i, served := p.serves[id]
	switch {
	case !served:
		return m, &Status{Code: codes.Unimplemented, Message: p.notServed(key)}
	case p.services[i].Proto == nil:
		return m, &Status{Code: codes.Unimplemented, Message: key + " is a Dubbo service, not a protobuf one"}
	}
	return m, &Status{Code: codes.Unimplemented, Message: key + " has no method " + c.Method}
}

// linkStatus is the status of a call or stream whose link failed with err.
func (p *Plugin) linkStatus(ctx context.Context, err error) *Status {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &Status{Code: codes.DeadlineExceeded, Message: "plugin " + p.cfg.Name + " did not answer in time"}
	case ctx.Err() != nil:
		return &Status{Code: codes.Canceled, Message: ctx.Err().Error()}
	case errors.Is(err, wire.ErrTooBig):
		return &Status{Code: codes.ResourceExhausted, Message: "plugin " + p.cfg.Name + ": " + err.Error()}
	}
	return &Status{Code: codes.Unavailable, Message: p.linkBroke(err, "call")}
}
