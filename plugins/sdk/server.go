package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/plugins/internal/wire"
)

// server is the plugin side of the wire: it decodes calls, runs them on the
// Dispatcher and encodes the replies, and runs the start hook when the node
// says so.
type server struct {
	d      *Dispatcher
	protos *protoServices
	desc   *wire.Description // of both
	start  func(context.Context) error
	// ctx is the start hook's; it ends when the node calls Stop or when
	// ServeWith is done serving.
	ctx  context.Context
	stop context.CancelFunc

	caller *Caller // set before the link serves

	// Only Prepare uses these, which runs on the link's reader, one call
	// at a time. calls decodes the calls, whose names and types repeat;
	// last is the method the last call named, found again without a
	// lookup.
	calls wire.CallDecoder
	last  struct {
		inv rpc.Invocation // the names only
		svc *service
		m   *method
	}

	mu       sync.Mutex
	grpc     *grpc.Server  // stopped when the start hook fails
	hookDone chan struct{} // closed when the start hook returned; nil until it runs
	hookErr  error         // written before hookDone is closed
}

func newServer(ctx context.Context, sv *served, start func(context.Context) error) *server {
	ctx, stop := context.WithCancel(ctx)
	return &server{d: sv.d, protos: sv.protos, desc: &sv.desc, start: start, ctx: ctx, stop: stop}
}

func (s *server) newGRPCServer(opts []grpc.ServerOption) *grpc.Server {
	gs := wire.NewGRPCServer(opts)
	s.mu.Lock()
	s.grpc = gs
	s.mu.Unlock()
	return gs
}

// Describe says what this plugin serves.
func (s *server) Describe(context.Context, *emptypb.Empty) (*wrapperspb.BytesValue, error) {
	b, err := json.Marshal(s.desc)
	if err != nil {
		return nil, err
	}
	return wrapperspb.Bytes(b), nil
}

// Start runs the start hook, once, on its own goroutine; ServeWith waits
// for it.
func (s *server) Start(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return nil, fmt.Errorf("the plugin is stopping")
	}
	if s.start == nil || s.hookDone != nil {
		return &emptypb.Empty{}, nil
	}
	s.hookDone = make(chan struct{})
	ctx := context.WithValue(s.ctx, callKey{}, &callInfo{caller: s.caller})
	go s.runStart(ctx)
	return &emptypb.Empty{}, nil
}

func (s *server) runStart(ctx context.Context) {
	defer close(s.hookDone)
	err := callStart(ctx, s.start)
	if err == nil || s.ctx.Err() != nil {
		return // done, or stopped by the node: not a failure
	}
	s.hookErr = err
	slog.Error("the start hook failed; the plugin exits", "err", err)
	// Ending the gRPC server ends plugin.Serve, so ServeWith returns the
	// error. Gracefully first, so that replies on their way (Start's own,
	// when the hook failed at once) reach the node; go-plugin's broker and
	// stdio streams never end by themselves, hence the forced stop after a
	// moment.
	s.mu.Lock()
	gs := s.grpc
	s.mu.Unlock()
	if gs != nil {
		t := time.AfterFunc(500*time.Millisecond, gs.Stop)
		gs.GracefulStop()
		t.Stop()
	}
}

// Stop ends the start hook and waits for it, before the node closes the
// plugin.
func (s *server) Stop(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	s.stop()
	return &emptypb.Empty{}, s.wait(time.Second)
}

func callStart(ctx context.Context, start func(context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			slog.Error("the start hook panicked", "panic", r, "stack", string(debug.Stack()))
			err = errorf("panic in the start hook: %v", r)
		}
	}()
	return start(ctx)
}

// wait returns the start hook's error once it returned, giving it up to d
// after the node stopped the plugin.
func (s *server) wait(d time.Duration) error {
	s.mu.Lock()
	done := s.hookDone
	s.mu.Unlock()
	if done == nil {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return s.hookErr
	case <-t.C:
		return errorf("the start hook did not return within %v of its context ending", d)
	}
}

// Prepare decodes a call from the node; methods that have always been
// quick run on the link's reader (wire.Invoker).
func (s *server) Prepare(b []byte) (wire.Runner, bool) {
	c := &call{s: s}
	c.inv.ParamTypes, c.inv.Args = c.types[:0], c.args[:0]
	attachments, err := s.calls.Decode(b, &c.inv)
	if err != nil {
		reply := wire.ErrorReply(&rpc.CallError{Kind: rpc.ErrBadRequest, Detail: err.Error()})
		return wire.RunFunc(func(context.Context) []byte { return reply }), true
	}
	c.svc, c.m = s.lookup(&c.inv)
	c.info.caller, c.info.raw, c.info.inv, c.info.attachments = s.caller, attachments, &c.inv, c.inv.Attachments
	return c, c.m != nil && c.m.inline.Load()
}

// lookup is Dispatcher.lookup, at once for the method the last call named.
func (s *server) lookup(inv *rpc.Invocation) (*service, *method) {
	l := &s.last
	if l.m == nil || inv.Method != l.inv.Method || inv.Service != l.inv.Service || inv.Version != l.inv.Version || inv.Group != l.inv.Group {
		l.svc, l.m = s.d.lookup(inv)
		l.inv.Service, l.inv.Version, l.inv.Group, l.inv.Method = inv.Service, inv.Version, inv.Group, inv.Method
	}
	return l.svc, l.m
}

// call is one call from the node with all that serving it needs, in one
// allocation: the invocation, the handler's context and the reply were
// allocated apart, and those allocations with the collections they caused
// were a third of the plugin's own work per call.
type call struct {
	// The link's context for the call, set by Run; the handler's context
	// is the call itself, which adds info to it.
	context.Context

	s    *server
	svc  *service
	m    *method
	inv  rpc.Invocation
	info callInfo

	// Storage for inv.ParamTypes and inv.Args and for the reply, large
	// enough for a call with one argument and a short answer (a string of
	// up to 20 bytes): sized so that the whole call is 288 bytes, one of
	// the allocator's size classes.
	types [1]string
	args  [1]any
	reply [24]byte
}

// Value gives the handler its call's info, and the link's values.
func (c *call) Value(key any) any {
	if key == (callKey{}) {
		return &c.info
	}
	return c.Context.Value(key)
}

// Run runs the handler and encodes its reply.
func (c *call) Run(ctx context.Context) []byte {
	c.Context = ctx
	clock := startClock(ctx)
	var reply []byte
	var err error
	if arg, ok := c.m.strArg(&c.inv); ok {
		out, ex := c.m.callStr(c, c.svc.key, arg)
		c.observe(clock)
		if ex == nil {
			return wire.AppendStringReply(c.reply[:0], out)
		}
		reply, err = wire.AppendReply(c.reply[:0], &rpc.Result{Exception: ex}, nil)
	} else {
		res, callErr := c.s.d.invoke(c, &c.inv, c.svc, c.m)
		c.observe(clock)
		reply, err = wire.AppendReply(c.reply[:0], res, callErr)
	}
	if err != nil {
		// The handler returned something hessian cannot write (an
		// unregistered struct, a channel); say so instead of failing the call.
		return wire.ErrorReply(&rpc.CallError{Kind: rpc.ErrProvider, Detail: "the handler's result: " + err.Error()})
	}
	return reply
}

// observe counts the handler's run towards running the method inline.
func (c *call) observe(clock runClock) {
	if c.m == nil {
		return
	}
	c.m.observe(clock.elapsed(), c.info.calledOut.Load())
}
