package jsoncall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/generic"
	"github.com/dubbo-lab/dubbo/node/idl"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// ServiceResolver finds the protobuf descriptor of a service its
// providers serve over Triple (gRPC server reflection); the error wraps
// idl.ErrNoDescriptor when it is not a protobuf service.
// consumer.Consumer implements it.
type ServiceResolver interface {
	ProtoService(ctx context.Context, iface, version, group string) (protoreflect.ServiceDescriptor, error)
}

// Resolvers are where Prepare looks up what a call needs. Both are
// optional.
type Resolvers struct {
	// Services finds protobuf descriptors; nil: every service is called
	// as a Java interface.
	Services ServiceResolver
	// Types finds Java parameter types in the registry's metadata; nil:
	// they are inferred from the JSON.
	Types TypeResolver
}

// Prepared is a call ready to be made, any number of times, concurrently
// too: its invocation and how its answer reads as JSON.
type Prepared struct {
	// Invocation is the call. For a streaming method it names the
	// method and carries the attachments; a server stream's request is
	// its one argument.
	Invocation *rpc.Invocation
	// Types are the arguments' types: their Java types, or the protobuf
	// request message's full name.
	Types []string
	// Proto is the protobuf method called; nil when the service is
	// called as a Java interface.
	Proto *idl.Method

	timeout time.Duration // Call.Timeout, the whole stream's
}

// Prepare resolves c. When c has no Types and r.Services describes the
// service, it is a protobuf service: c names one of its methods, and c's one argument is
// the request message as protobuf JSON (a unary or server-streaming
// method), or there is none (client and bidi streams send theirs with
// Stream). Otherwise the service is called as a Java interface, with
// ParamTypes and Invocation. Mistakes in c match rpc.ErrBadRequest.
func Prepare(ctx context.Context, r Resolvers, c Call, log *slog.Logger) (*Prepared, error) {
	if r.Services != nil && c.Types == nil {
		svc, err := r.Services.ProtoService(ctx, c.Interface, c.Version, c.Group)
		if err == nil {
			return prepareProto(svc, c)
		}
		if !errors.Is(err, idl.ErrNoDescriptor) {
			return nil, err
		}
		log.Debug("no protobuf descriptor; calling the service as a Java interface", "interface", c.Interface, "reason", err)
	}
	types, err := ParamTypes(ctx, r.Types, c, log)
	if err != nil {
		return nil, err
	}
	inv, err := Invocation(c, types)
	if err != nil {
		return nil, err
	}
	return &Prepared{Invocation: inv, Types: types}, nil
}

func prepareProto(svc protoreflect.ServiceDescriptor, c Call) (*Prepared, error) {
	m, err := idl.MethodOf(svc, c.Method)
	if err != nil {
		return nil, err
	}
	p := &Prepared{Proto: m, Types: []string{m.RequestType()}, timeout: c.Timeout,
		Invocation: &rpc.Invocation{Service: c.Interface, Version: c.Version, Group: c.Group, Method: c.Method}}
	bad := func(format string, args ...any) error {
		return &rpc.CallError{Kind: rpc.ErrBadRequest, Service: c.Interface, Method: c.Method, Detail: fmt.Sprintf(format, args...)}
	}
	switch m.Kind() {
	case rpc.Unary, rpc.ServerStream:
		if len(c.Args) != 1 {
			return nil, bad("%s is a %s protobuf method: give one argument, the %s as JSON (e.g. '{}'), not %d",
				c.Method, m.Kind(), m.RequestType(), len(c.Args))
		}
		msg, err := m.Request(c.Args[0])
		if err != nil {
			return nil, err
		}
		p.Invocation.ParamTypes, p.Invocation.Args = p.Types, []any{msg}
	default:
		if len(c.Args) != 0 {
			return nil, bad("%s is a %s protobuf method: its requests are streamed, one JSON %s each; give no argument, not %d",
				c.Method, m.Kind(), m.RequestType(), len(c.Args))
		}
	}
	attach(p.Invocation, c)
	return p, nil
}

// attach sets c's attachments on inv, then its timeout.
func attach(inv *rpc.Invocation, c Call) {
	for k, v := range c.Attachments {
		inv.SetAttachment(k, v)
	}
	if c.Timeout > 0 {
		inv.SetAttachment(cluster.KeyTimeout, strconv.FormatInt(c.Timeout.Milliseconds(), 10))
	}
}

// Streaming reports whether p is a call of a streaming protobuf method,
// to be made with Stream.
func (p *Prepared) Streaming() bool { return p.Proto != nil && p.Proto.Kind() != rpc.Unary }

// Result is the value of a call's result as JSON: the response message as
// protobuf JSON (a json.RawMessage), or the Java value as generic.ToJSON
// renders it.
func (p *Prepared) Result(res *rpc.Result) (any, error) {
	if p.Proto == nil {
		return generic.ToJSON(res.Value), nil
	}
	m, ok := res.Value.(rpc.Message)
	if !ok {
		return nil, fmt.Errorf("%s.%s: the provider answered %T, not a protobuf message", p.Invocation.Service, p.Invocation.Method, res.Value)
	}
	return p.Proto.Response(m)
}

// Stream makes p's streaming call through s (the consumer): a server
// stream sends p's request; client and bidi streams send each message
// next yields, as JSON, until it returns io.EOF, and then half-close. Each
// response goes to each as JSON, in order, as it arrives. The call's
// timeout, when given, bounds the whole stream. A request that does not
// fit ends the call with an *InputError. next is not called again once the call is over; a
// call to it that is blocked then (reading a terminal) is left to return
// on its own.
func (p *Prepared) Stream(ctx context.Context, s rpc.Streamer, next func() (json.RawMessage, error), each func(json.RawMessage) error) error {
	if !p.Streaming() {
		return fmt.Errorf("%s.%s is not a streaming method", p.Invocation.Service, p.Invocation.Method)
	}
	if p.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.timeout)
		defer cancel()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := s.Stream(ctx, p.Invocation)
	if err != nil {
		return err
	}
	sent := make(chan error, 1)
	if p.Proto.Kind() == rpc.ServerStream {
		if err := st.Send(p.Invocation.Args[0].(rpc.Message)); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		st.CloseSend()
	} else {
		go func() {
			err := p.sendAll(st, next)
			sent <- err
			if err != nil {
				cancel() // the call cannot go on without this request
			}
		}()
	}
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			select {
			case serr := <-sent:
				if serr != nil {
					return serr
				}
			default:
			}
			return err
		}
		js, err := p.Proto.Response(m)
		if err != nil {
			return err
		}
		if err := each(js); err != nil {
			return err
		}
	}
}

// InputError is a streamed request that does not fit its message: a
// mistake in what the caller gave, not the provider's answer. It matches
// rpc.ErrBadRequest.
type InputError struct {
	// N counts the requests from 1.
	N   int
	Err error
}

func (e *InputError) Error() string { return fmt.Sprintf("request %d: %v", e.N, e.Err) }

func (e *InputError) Unwrap() error { return e.Err }

// sendAll sends next's messages, then half-closes.
func (p *Prepared) sendAll(st rpc.Stream, next func() (json.RawMessage, error)) error {
	for n := 1; ; n++ {
		js, err := next()
		if errors.Is(err, io.EOF) {
			return st.CloseSend()
		}
		if err != nil {
			return err
		}
		msg, err := p.Proto.Request(js)
		if err != nil {
			return &InputError{N: n, Err: err}
		}
		if err := st.Send(msg); err != nil {
			// io.EOF: the call is over; Recv says how.
			return nil
		}
	}
}
