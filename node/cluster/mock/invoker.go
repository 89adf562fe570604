package mock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// TypeResolver gives a method's Java return type: the overload whose
// parameter types are paramTypes (any when nil or when there is one), and
// the bean properties of the classes it may contain, for empty values.
// It returns "" when it does not know; values are then typed by the
// natural mapping. consumer.Reference implements it from the service
// definition in the metadata report.
type TypeResolver interface {
	ReturnType(ctx context.Context, method string, paramTypes []string) (returnType string, props func(class string) map[string]string)
}

// Invoker applies the mock setting of each call's method around next, a
// reference's cluster invoker. It is safe for concurrent use.
type Invoker struct {
	next     rpc.Invoker
	settings func() *url.URL
	types    TypeResolver
	log      *slog.Logger

	// seen says, of the settings URL last seen, whether it has a mock
	// setting at all, so that a call without one costs a comparison.
	seen atomic.Pointer[seenURL]

	mu     sync.Mutex
	parsed map[string]parsed // by raw setting, bounded by maxParsed
}

type seenURL struct {
	u    *url.URL
	mock bool
}

type parsed struct {
	m   *Mock
	err error
}

// maxParsed bounds the settings kept parsed; settings come from config
// and rules, so there are few.
const maxParsed = 64

// NewInvoker wraps next. settings returns the URL the setting is read
// from, Java's consumer URL with the consumer-side override rules applied
// ("mock" and "<method>.mock"; the method's wins). types may be nil; log
// receives the warning about a setting that cannot be applied.
func NewInvoker(next rpc.Invoker, settings func() *url.URL, types TypeResolver, log *slog.Logger) *Invoker {
	if log == nil {
		log = slog.Default()
	}
	return &Invoker{next: next, settings: settings, types: types, log: log, parsed: make(map[string]parsed)}
}

// Invoke makes the call, or answers it, as the method's setting says.
func (m *Invoker) Invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	u := m.settings()
	if !m.hasMock(u) {
		return m.next.Invoke(ctx, inv)
	}
	raw := cluster.MethodParam(u, cluster.MethodName(inv), Key)
	if raw == "" {
		return m.next.Invoke(ctx, inv)
	}
	mk, err := m.parse(raw)
	switch {
	case mk == nil && err == nil:
		return m.next.Invoke(ctx, inv)
	case err != nil && isForce(raw):
		return nil, &rpc.CallError{Kind: rpc.ErrBadRequest, Service: inv.Service, Method: cluster.MethodName(inv), Detail: err.Error()}
	case err != nil:
		res, cerr := m.next.Invoke(ctx, inv)
		if cerr != nil && !isBusiness(cerr) {
			cerr = fmt.Errorf("%w (the mock cannot answer: %v)", cerr, err)
		}
		return res, cerr
	case mk.Force:
		return m.answer(ctx, inv, mk, nil)
	}
	res, err := m.next.Invoke(ctx, inv)
	if err == nil || isBusiness(err) || errors.Is(ctx.Err(), context.Canceled) {
		return res, err
	}
	return m.answer(ctx, inv, mk, err)
}

// hasMock reports whether u sets "mock" or "<method>.mock"; the answer is
// kept for the URL, which changes only with the rules.
func (m *Invoker) hasMock(u *url.URL) bool {
	if s := m.seen.Load(); s != nil && s.u == u {
		return s.mock
	}
	s := &seenURL{u: u}
	for k := range u.Params() {
		if k == Key || strings.HasSuffix(k, "."+Key) {
			s.mock = true
			break
		}
	}
	m.seen.Store(s)
	return s.mock
}

// isForce reports whether a setting Parse refused is a forced one, which
// then fails every call rather than letting it through.
func isForce(raw string) bool { return strings.HasPrefix(strings.TrimSpace(raw), "force") }

// isBusiness reports whether err is a business exception, which a mock
// never replaces.
func isBusiness(err error) bool {
	var ex *rpc.Exception
	return errors.As(err, &ex)
}

// answer makes the mock's answer; cause is the failure it replaces, if any.
func (m *Invoker) answer(ctx context.Context, inv *rpc.Invocation, mk *Mock, cause error) (*rpc.Result, error) {
	method := cluster.MethodName(inv)
	fail := func(kind error, detail string) error {
		if cause != nil {
			detail += "; the call failed: " + cause.Error()
		}
		return &rpc.CallError{Kind: kind, Service: inv.Service, Method: method, Detail: detail}
	}
	if mk.Throw {
		if mk.Exception == "" {
			return nil, fail(rpc.ErrProvider, Mocked+" (mock "+mk.Raw+")")
		}
		return &rpc.Result{Exception: &rpc.Exception{Class: mk.Exception, Message: Mocked}, Provider: Provider}, nil
	}
	if _, ok := rpc.MessageArg(inv); ok {
		// A protobuf method answers a message: its default (every field
		// unset) is what empty and null can be; other values would need
		// the message's descriptor.
		if mk.Return != "empty" && mk.Return != "null" {
			return nil, fail(rpc.ErrBadRequest, fmt.Sprintf("mock %q: a protobuf method's mock answer can only be empty (the default response message)", mk.Raw))
		}
		return &rpc.Result{Value: rpc.Message{}, Provider: Provider}, nil
	}
	var ret string
	var props func(string) map[string]string
	if m.types != nil {
		ret, props = m.types.ReturnType(ctx, method, paramTypes(inv))
	}
	v, err := mk.Value(ret, props)
	if err != nil {
		return nil, fail(rpc.ErrBadRequest, fmt.Sprintf("mock %q: %v", mk.Raw, err))
	}
	return &rpc.Result{Value: v, Provider: Provider}, nil
}

// paramTypes are the Java parameter types of the method inv calls: of a
// generic call, its second argument.
func paramTypes(inv *rpc.Invocation) []string {
	if (inv.Method == protocol.MethodInvoke || inv.Method == protocol.MethodInvokeAsync) && len(inv.Args) == 3 {
		if ts, ok := inv.Args[1].([]string); ok {
			return ts
		}
		return nil
	}
	return inv.ParamTypes
}

// parse parses raw once; a setting that cannot be applied is logged once.
func (m *Invoker) parse(raw string) (*Mock, error) {
	m.mu.Lock()
	p, ok := m.parsed[raw]
	m.mu.Unlock()
	if ok {
		return p.m, p.err
	}
	p.m, p.err = Parse(raw)
	if p.err != nil {
		m.log.Warn("mock setting not applied", "err", p.err)
	}
	m.mu.Lock()
	if len(m.parsed) < maxParsed {
		m.parsed[raw] = p
	}
	m.mu.Unlock()
	return p.m, p.err
}
