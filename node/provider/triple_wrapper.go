package provider

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/dubbo-lab/dubbo/node/generic"
	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/triple"
	"github.com/dubbo-lab/dubbo/node/triple/wrapper"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Java-interface services over Triple, in Dubbo's wrapper mode
// (PROTOCOLS.md D.3): the arguments come in a TripleRequestWrapper, each
// serialized with hessian2 on its own ("hessian2" as dubbo-go writes it,
// "hessian4" as Java does), and the call goes the way of a dubbo call
// (invoke: argument conversion, executes, statistics, generic $invoke and
// $echo); the result goes back in a TripleResponseWrapper in the client's
// serializeType.
//
// A business exception reaches each client as it expects, with a status
// within gRPC's 0-16:
//
//   - content-type application/grpc+hessian2 (dubbo-go v3.3.0's non-IDL
//     client, and ours): status Unknown with the exception's message, and
//     Java's tri-exception-code in the trailer; ours reads
//     tri-exception-code and does not fail over. dubbo-go's client
//     (its User-Agent) gets dubbo-go's status 17 instead, as its own
//     servers send it: its failover retries any other status, and 17
//     is not a gRPC code, so no other client gets it (forClient).
//   - application/grpc+proto (Java's documented form): what Java 3.2 and
//     later answer, status OK with tri-exception-code in the response
//     header and the serialized exception in the wrapper, whose type is its
//     class.

// wrapperMethod is one method of a Java-interface service served in
// wrapper mode; java is the same method answering as Java's servers do.
type wrapperMethod struct {
	p    *Provider
	e    *exporter
	ep   *endpoint // e on the tri server
	name string
	java *javaWrapper
}

// javaWrapper answers a wrapper call in Java's form. It is served as a
// server stream of one message, which is a unary call on the wire, to
// send tri-exception-code in the response header.
type javaWrapper struct{ m *wrapperMethod }

// wrapperMethods makes the methods of e served in wrapper mode on ep,
// with $echo and the generic $invoke.
func wrapperMethods(p *Provider, e *exporter, ep *endpoint) map[string]*wrapperMethod {
	out := map[string]*wrapperMethod{}
	names := []string{protocol.MethodEcho, protocol.MethodInvoke, protocol.MethodInvokeAsync}
	for n := range e.methods {
		names = append(names, n)
	}
	for _, n := range names {
		m := &wrapperMethod{p: p, e: e, ep: ep, name: n}
		m.java = &javaWrapper{m}
		out[n] = m
	}
	return out
}

// wrapperRoute picks the method a call names, in the form its client
// reads: wrapper mode, or JSON over HTTP/1.1 (triple_json.go).
func (e *exporter) wrapperRoute(c *triple.Call) (triple.Method, *triple.Status) {
	m := e.wrapped[c.Method]
	if m == nil {
		return nil, triple.Errorf(triple.Unimplemented, "cannot find method [%s] of service [%s]; it has %v", c.Method, e.key, e.methodNames())
	}
	switch c.Codec {
	case wrapper.Hessian2, wrapper.Hessian4:
		return m, nil
	case "proto":
		if c.HTTP1 {
			return m, nil // unary only
		}
		return m.java, nil
	case "json":
		if c.HTTP1 && len(e.methods[c.Method]) > 0 {
			return jsonMethod{m}, nil
		}
		if c.HTTP1 { // $echo, $invoke
			return nil, triple.Errorf(triple.InvalidArgument, "%s: %s is not served as JSON over HTTP/1.1; its methods are: %v",
				e.key, c.Method, e.methodNames())
		}
	}
	return nil, triple.Errorf(triple.InvalidArgument, "%s is a Java-interface service: call it in Triple's wrapper mode "+
		"(a TripleRequestWrapper of hessian2 arguments, as application/grpc+proto or application/grpc+hessian2), "+
		"or over HTTP/1.1 as POST /%s/<method> with application/json and a JSON array of the arguments; not as +%s", e.key, e.svc.Interface, c.Codec)
}

func (m *wrapperMethod) Kind() rpc.MethodKind { return rpc.Unary }
func (j *javaWrapper) Kind() rpc.MethodKind   { return rpc.ServerStream }

// wrapped is the answer to a wrapper call.
type wrapped struct {
	body      []byte
	trailer   rpc.Metadata
	st        *triple.Status
	exception bool // body carries a business exception (Java's form)
}

// Unary implements triple.UnaryMethod.
func (m *wrapperMethod) Unary(ctx context.Context, c *triple.Call, req []byte, reply func([]byte, rpc.Metadata, *triple.Status)) {
	m.call(ctx, c, req, false, func(w wrapped) { reply(w.body, w.trailer, forClient(c, w.st)) })
}

// Serve implements triple.StreamMethod: one request, one answer.
func (j *javaWrapper) Serve(ctx context.Context, c *triple.Call, s triple.Stream) *triple.Status {
	req, err := s.Recv()
	if err == io.EOF {
		return triple.Errorf(triple.InvalidArgument, "no request message")
	}
	if err != nil {
		return statusOf(err)
	}
	done := make(chan wrapped, 1)
	j.m.call(ctx, c, req, true, func(w wrapped) { done <- w })
	var w wrapped
	select {
	case w = <-done:
	case <-ctx.Done():
		return deadlineStatus(ctx, c.Service+"."+c.Method)
	}
	if w.exception {
		_ = s.SetHeader(rpc.Metadata{{Key: headerExceptionCode, Value: bizException}})
	}
	if w.st != nil {
		return w.st
	}
	s.SetTrailer(w.trailer)
	if err := s.Send(w.body); err != nil {
		return statusOf(err)
	}
	return nil
}

// call decodes a wrapper request and runs it as invoke runs a dubbo call:
// a plugin's call started here, holding a pool thread until it is
// answered; an in-process service's in the pool. done gets the answer
// once, from any goroutine.
func (m *wrapperMethod) call(ctx context.Context, c *triple.Call, req []byte, javaForm bool, done func(wrapped)) {
	e := m.e
	w, err := wrapper.ParseRequest(req)
	if err == nil && !wrapper.IsHessian2(w.SerializeType) {
		err = fmt.Errorf("serializeType %q: only hessian2 (Java's hessian4) is supported", w.SerializeType)
	}
	var args []any
	for i := 0; err == nil && i < len(w.Args); i++ {
		var v any
		if v, err = wrapper.DecodeValue(w.Args[i]); err == nil {
			args = append(args, v)
		} else {
			err = fmt.Errorf("argument %d: %w", i+1, err)
		}
	}
	if err != nil {
		done(wrapped{st: triple.Errorf(triple.InvalidArgument, "%s.%s: %v", e.key, m.name, err)})
		return
	}
	serialize := cmp.Or(w.SerializeType, wrapper.Hessian2)
	finish := func(r *protocol.Response) { done(m.answer(r, serialize, javaForm)) }
	resp := &protocol.Response{Status: protocol.StatusOK}
	name, types, isGeneric := m.name, w.ArgTypes, false
	switch m.name {
	case protocol.MethodEcho:
		if len(args) != 1 {
			resp.Exception = &protocol.Exception{Class: "java.lang.IllegalArgumentException",
				Message: fmt.Sprintf("$echo of %s takes one argument, got %d", e.key, len(args))}
		} else {
			resp.Value = args[0]
		}
		finish(resp)
		return
	case protocol.MethodInvoke, protocol.MethodInvokeAsync:
		if name, types, args, err = generic.Unpack(args); err != nil {
			resp.Exception = &protocol.Exception{Class: "java.lang.IllegalArgumentException",
				Message: fmt.Sprintf("generic call of %s: %v", e.key, err)}
			finish(resp)
			return
		}
		isGeneric = true
	}
	if st := m.run(ctx, c, resp, name, types, args, isGeneric, len(req)+5, finish); st != nil {
		done(wrapped{st: st})
	}
}

// run invokes the method with args as a dubbo call runs: a plugin's call
// started here, holding a pool thread until it is answered; an in-process
// service's in the pool. finish gets the response once, from any
// goroutine, unless run returns the status that refused the call.
func (m *wrapperMethod) run(ctx context.Context, c *triple.Call, resp *protocol.Response, name string, types []string, args []any,
	isGeneric bool, size int, finish func(*protocol.Response)) *triple.Status {
	p, e := m.p, m.e
	at := arrival{ep: m.ep, peer: p.peers.ipOf(c.Peer)}
	att := e.attachments(c)
	if _, ok := e.svc.Invoker.(AsyncInvoker); ok {
		if release, held := p.disp.Hold(); held {
			fin := func(r *protocol.Response) { release(); finish(r) }
			if r := p.invoke(ctx, resp, e, at, name, types, args, att, isGeneric, size, fin); r != nil {
				fin(r) // answered without starting anything
			}
			return nil
		}
		// No thread free: the ordinary way, the pool's queue or a refusal.
	}
	return p.dispatch(func() { finish(p.invoke(ctx, resp, e, at, name, types, args, att, isGeneric, size, nil)) })
}

// attachments are the call's metadata as a dubbo call's attachments: text
// values by their lower-case keys, binary ones as []byte without -bin, and
// the service's path, interface, version and group.
func (e *exporter) attachments(c *triple.Call) map[string]any {
	att := make(map[string]any, len(c.Header)+4)
	for _, f := range c.Header {
		if name, ok := strings.CutSuffix(f.Key, "-bin"); ok {
			att[name] = []byte(f.Value)
			continue
		}
		if _, dup := att[f.Key]; !dup {
			att[f.Key] = f.Value
		}
	}
	att["path"], att[url.KeyInterface] = e.svc.Interface, e.svc.Interface
	if e.svc.Version != "" {
		att[url.KeyVersion] = e.svc.Version
	}
	if e.svc.Group != "" {
		att[url.KeyGroup] = e.svc.Group
	}
	return att
}

// answer turns invoke's response into the wrapper call's.
func (m *wrapperMethod) answer(r *protocol.Response, serialize string, javaForm bool) wrapped {
	switch {
	case r.Exception != nil && javaForm:
		data, err := wrapper.EncodeValue(r.Exception.Throwable())
		if err != nil {
			return wrapped{st: triple.Errorf(triple.Internal, "%s.%s threw %v, which cannot be encoded: %v", m.e.key, m.name, r.Exception, err)}
		}
		return wrapped{body: (&wrapper.Response{SerializeType: serialize, Data: data, Type: r.Exception.Class}).Append(nil), exception: true}
	case r.Exception != nil:
		msg := r.Exception.Message
		if r.Exception.Class != "java.lang.RuntimeException" {
			msg = r.Exception.Error()
		}
		return wrapped{st: &triple.Status{Code: triple.Unknown, Message: msg},
			trailer: rpc.Metadata{{Key: headerExceptionCode, Value: bizException}}}
	case r.Status == protocol.StatusOK:
		data, err := wrapper.EncodeValue(r.Value)
		if err != nil {
			return wrapped{st: triple.Errorf(triple.Internal, "%s.%s returned a %T that cannot be encoded: %v", m.e.key, m.name, r.Value, err)}
		}
		return wrapped{body: (&wrapper.Response{SerializeType: serialize, Data: data, Type: m.returnType()}).Append(nil),
			trailer: metadataOf(r.Attachments)}
	case r.Status == protocol.StatusServerTimeout:
		return wrapped{st: &triple.Status{Code: triple.DeadlineExceeded, Message: r.ErrorMessage}}
	case r.Status == protocol.StatusBadRequest:
		return wrapped{st: &triple.Status{Code: triple.InvalidArgument, Message: r.ErrorMessage}}
	case strings.Contains(r.ErrorMessage, executesRefusal):
		return wrapped{st: executesRefused(r.ErrorMessage)}
	}
	return wrapped{st: &triple.Status{Code: triple.Internal, Message: r.ErrorMessage}}
}

// returnType is the Java class the wrapper says the result is of.
func (m *wrapperMethod) returnType() string {
	if ms := m.e.methods[m.name]; len(ms) == 1 && ms[0].ReturnType != "" {
		return ms[0].ReturnType
	}
	return "java.lang.Object"
}

// metadataOf are a result's text attachments as trailer metadata, sorted
// (the server leaves out what HTTP/2 cannot carry).
func metadataOf(att map[string]any) rpc.Metadata {
	var md rpc.Metadata
	for k, v := range att {
		if s, ok := v.(string); ok {
			md = append(md, rpc.MetadataField{Key: strings.ToLower(k), Value: s})
		}
	}
	slices.SortFunc(md, func(a, b rpc.MetadataField) int { return strings.Compare(a.Key, b.Key) })
	return md
}
