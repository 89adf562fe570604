package plugins

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc/codes"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
	"github.com/dubbo-lab/dubbo/plugins/internal/wire"
)

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
	Method string
	// Metadata goes to the plugin as it is: -bin values not base64. At
	// most 1024 entries and 256 KiB.
	Metadata rpc.Metadata
}

func (c ProtoCall) String() string {
	return "/" + url.ServiceKey(c.Service, c.Version, c.Group) + "/" + c.Method
}

// protoMethod is a protobuf method the plugin described: the indices that
// name it on the link, and its kind.
type protoMethod struct {
	ref  wire.MethodRef
	kind rpc.MethodKind
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
func (p *Plugin) CallProto(ctx context.Context, c ProtoCall, req []byte, done func(resp []byte, trailer rpc.Metadata, st *Status)) {
	m, st := p.protoLookup(c, rpc.Unary)
	if st != nil {
		if next := p.next.Load(); next != nil {
			next.CallProto(ctx, c, req, done) // swapped out: next serves it
			return
		}
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
	svc, method := c.Service, c.Method // for the log: the closure keeps these only
	err = p.link.CallProtoAsync(ctx, head, req, func(reply []byte, err error) {
		switch {
		case err != nil && ctx.Err() == nil && !errors.Is(err, wire.ErrTooBig):
			// The link broke: wait for the exit watcher's reason elsewhere
			// than on the link's goroutine.
			go func() { done(nil, nil, p.linkStatus(ctx, err, "call")) }()
		case err != nil:
			done(nil, nil, p.linkStatus(ctx, err, "call"))
		case late(ctx):
			done(nil, nil, &Status{Code: codes.DeadlineExceeded, Message: "plugin " + p.cfg.Name + " did not answer in time"})
		default:
			resp, trailer, st, err := wire.ParseProtoReply(reply)
			if err != nil {
				p.log.Warn("plugin sent a reply that cannot be decoded", "service", svc, "method", method, "err", err)
				st = &Status{Code: codes.Internal, Message: "plugin " + p.cfg.Name + " sent a reply that cannot be decoded: " + err.Error()}
			}
			done(resp, trailer, st)
		}
	})
	if err != nil { // retired: the call raced the switch to next
		p.next.Load().CallProto(ctx, c, req, done)
	}
}

// streaming asks protoLookup for any of the streaming kinds.
const streaming rpc.MethodKind = 255

// protoLookup finds the protobuf method c names, of kind (or streaming);
// calls to one the plugin did not describe are refused before they reach
// it.
func (p *Plugin) protoLookup(c ProtoCall, kind rpc.MethodKind) (protoMethod, *Status) {
	select {
	case <-p.done:
		return protoMethod{}, &Status{Code: codes.Unavailable, Message: "plugin " + p.cfg.Name + " is down: " + p.exitErr.Error()}
	default:
	}
	id := wire.IDOf(c.Service, c.Version, c.Group)
	m, ok := p.protoMethods[methodID{id, c.Method}]
	switch {
	case ok && (m.kind == kind || kind == streaming && m.kind != rpc.Unary):
		return m, nil
	case ok && kind == rpc.Unary:
		return m, &Status{Code: codes.Internal, Message: c.String() + " is a " + m.kind.String() + " method: open a stream (OpenStream) to call it"}
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

// linkStatus is the status of a call or stream (what) that failed with
// err.
func (p *Plugin) linkStatus(ctx context.Context, err error, what string) *Status {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &Status{Code: codes.DeadlineExceeded, Message: "plugin " + p.cfg.Name + " did not answer in time"}
	case ctx.Err() != nil:
		return &Status{Code: codes.Canceled, Message: ctx.Err().Error()}
	case errors.Is(err, wire.ErrTooBig):
		return &Status{Code: codes.ResourceExhausted, Message: "plugin " + p.cfg.Name + ": " + err.Error()}
	case errors.Is(err, wire.ErrSendClosed):
		return &Status{Code: codes.FailedPrecondition, Message: err.Error()}
	}
	return &Status{Code: codes.Unavailable, Message: p.linkBroke(err, what)}
}

// Stream is a protobuf stream to a plugin's streaming method (OpenStream),
// the messages as their senders encoded them. Send and CloseSend may run
// on one goroutine while Recv (after Header) runs on another.
type Stream struct {
	p    *Plugin
	ctx  context.Context
	s    *wire.Stream
	call string // the method, for messages
}

// OpenStream opens a stream to a server-, client- or bidi-streaming method
// of the plugin. ctx's deadline travels to the handler; when ctx ends, the
// stream ends on both sides, so cancel it once done with a stream not read
// to its end. A method the plugin did not describe is refused before it
// reaches the plugin; the error is a *Status.
func (p *Plugin) OpenStream(ctx context.Context, c ProtoCall) (*Stream, error) {
	m, st := p.protoLookup(c, streaming)
	if st != nil {
		if next := p.next.Load(); next != nil {
			return next.OpenStream(ctx, c) // swapped out: next serves it
		}
		return nil, st
	}
	head, err := wire.AppendProtoCall(nil, m.ref, c.Metadata)
	if err != nil {
		return nil, &Status{Code: codes.ResourceExhausted, Message: c.String() + ": " + err.Error()}
	}
	ws, err := p.link.OpenStream(ctx, head)
	if errors.Is(err, wire.ErrRetired) {
		return p.next.Load().OpenStream(ctx, c)
	}
	if err != nil {
		return nil, p.streamStatus(ctx, err)
	}
	return &Stream{p: p, ctx: ctx, s: ws, call: c.String()}, nil
}

// Send sends one request message, waiting while the plugin is behind on
// reading. It returns io.EOF once the plugin ended the stream (Recv then
// says how), or the *Status the stream failed with.
func (s *Stream) Send(msg []byte) error {
	err := s.s.Send(msg)
	if err == nil || err == io.EOF {
		return err
	}
	return s.p.streamStatus(s.ctx, err)
}

// CloseSend tells the plugin that no more requests come.
func (s *Stream) CloseSend() error {
	if err := s.s.CloseSend(); err != nil {
		return s.p.streamStatus(s.ctx, err)
	}
	return nil
}

// Header waits for the plugin's response header: until it, a first
// response or the end arrives. The error is a *Status.
func (s *Stream) Header() (rpc.Metadata, error) {
	md, err := s.s.Header()
	if err != nil {
		return nil, s.p.streamStatus(s.ctx, err)
	}
	return md, nil
}

// Recv returns the next response message, the caller's to keep; io.EOF
// once the stream ended OK; or the *Status it ended with.
func (s *Stream) Recv() ([]byte, error) {
	msg, err := s.s.Recv()
	switch {
	case err == nil:
		return msg, nil
	case err != io.EOF:
		return nil, s.p.streamStatus(s.ctx, err)
	}
	if st, _ := s.s.End(); st != nil {
		return nil, st
	}
	return nil, io.EOF
}

// Trailer is the trailer the handler ended the stream with, once Recv
// returned an error; nil before, or when the stream failed without an
// end (canceled, timed out, the plugin died).
func (s *Stream) Trailer() rpc.Metadata {
	_, trailer := s.s.End()
	return trailer
}

// streamStatus is the status of a stream that failed with err.
func (p *Plugin) streamStatus(ctx context.Context, err error) *Status {
	return p.linkStatus(ctx, err, "stream")
}
