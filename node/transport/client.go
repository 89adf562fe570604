package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/internal/fastpath"
	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Client defaults, Dubbo's where Dubbo has one.
const (
	DefaultTimeout        = time.Second
	DefaultConnectTimeout = 3 * time.Second
	DefaultReconnectMin   = 100 * time.Millisecond
	DefaultReconnectMax   = 2 * time.Second // Java retries every 2s
	DefaultLiveness       = 200 * time.Millisecond
)

// ClientConfig configures a Client. The zero value uses the defaults.
type ClientConfig struct {
	// Connections is the number of long connections to the provider
	// (Dubbo's connections). Default 1.
	Connections int
	// Timeout bounds a call whose ctx has no deadline and whose invocation
	// has no timeout attachment. Default 1s.
	Timeout time.Duration
	// Heartbeat: a heartbeat is sent when nothing was read or written for
	// this long. Default 60s.
	Heartbeat time.Duration
	// HeartbeatTimeout: a connection from which nothing was read for this
	// long is dropped and redialled. Default 3 × Heartbeat.
	HeartbeatTimeout time.Duration
	// Liveness: when a call has been outstanding this long and nothing was
	// read since it was sent, or a call timed out that way, the client sends
	// a heartbeat at once; if that stays unanswered for half of Liveness the
	// connection counts as frozen, and the client reports itself not
	// Available until any frame arrives. Default 200ms; negative turns the
	// watch off (timed-out calls still probe). A stopped (SIGSTOP) provider
	// keeps accepting bytes, so only silence can tell it from a slow one.
	Liveness time.Duration
	// ConnectTimeout bounds one dial. Default 3s.
	ConnectTimeout time.Duration
	// ReconnectMin and ReconnectMax bound the exponential backoff between
	// failed dials. Defaults 100ms and 2s.
	ReconnectMin, ReconnectMax time.Duration
	// Payload is the largest response body accepted. Default 8 MiB.
	Payload int
	// OnStateChange is called when the client becomes available or
	// unavailable: a connection opened or broke, or the provider announced
	// read-only. Calls are serialised; it must not block or call Close.
	OnStateChange func(available bool)
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Client is a consumer's set of long connections to one provider. It is an
// rpc.Invoker; safe for concurrent use.
type Client struct {
	addr     string
	cfg      ClientConfig
	log      *slog.Logger
	encoders *encoders
	slots    []*slot
	nextID   atomic.Int64
	rr       atomic.Uint32
	calls    sync.Pool

	cancel context.CancelFunc
	wg     sync.WaitGroup

	stateMu   sync.Mutex
	available bool
}

// NewClient starts connecting to addr in the background and keeps
// reconnecting until Close. Calls fail with rpc.ErrConnection while no
// connection is up.
func NewClient(addr string, cfg ClientConfig) *Client {
	if cfg.Connections <= 0 {
		cfg.Connections = 1
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.HeartbeatTimeout <= 0 {
		cfg.HeartbeatTimeout = 3 * cfg.Heartbeat
	}
	if cfg.Liveness == 0 {
		cfg.Liveness = DefaultLiveness
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.ReconnectMin <= 0 {
		cfg.ReconnectMin = DefaultReconnectMin
	}
	if cfg.ReconnectMax < cfg.ReconnectMin {
		cfg.ReconnectMax = max(DefaultReconnectMax, cfg.ReconnectMin)
	}
	if cfg.Payload <= 0 {
		cfg.Payload = protocol.DefaultPayload
	}
	c := &Client{addr: addr, cfg: cfg, encoders: newEncoders(cfg.Payload)}
	c.log = cfg.Logger
	if c.log == nil {
		c.log = slog.Default()
	}
	c.log = c.log.With("provider", addr)
	c.calls.New = func() any { return &call{done: make(chan struct{}, 1)} }
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.slots = make([]*slot, cfg.Connections)
	for i := range c.slots {
		c.slots[i] = &slot{c: c}
		c.wg.Add(1)
		go c.slots[i].supervise(ctx)
	}
	return c
}

// Dial is NewClient that waits until the client is available, or ctx is
// done, in which case the client is closed and the dial error returned.
func Dial(ctx context.Context, addr string, cfg ClientConfig) (*Client, error) {
	ready := make(chan struct{})
	var once sync.Once
	user := cfg.OnStateChange
	cfg.OnStateChange = func(up bool) {
		if up {
			once.Do(func() { close(ready) })
		}
		if user != nil {
			user(up)
		}
	}
	c := NewClient(addr, cfg)
	select {
	case <-ready:
		return c, nil
	case <-ctx.Done():
		err := c.slots[0].lastErr()
		c.Close()
		if err == nil {
			err = ctx.Err()
		}
		return nil, &rpc.CallError{Kind: rpc.ErrConnection, Address: addr, Detail: "dial: " + err.Error()}
	}
}

// Address is the provider's host:port.
func (c *Client) Address() string { return c.addr }

// Available reports whether a new call can be sent: some connection is up,
// the provider has not announced read-only on it and it is not frozen
// (see ClientConfig.Liveness).
func (c *Client) Available() bool {
	for _, s := range c.slots {
		if cc := s.cur.Load(); cc != nil && cc.usable() {
			return true
		}
	}
	return false
}

// stateChanged recomputes availability and reports a change.
func (c *Client) stateChanged() {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	now := c.Available()
	if now == c.available {
		return
	}
	c.available = now
	if fn := c.cfg.OnStateChange; fn != nil {
		fn(now)
	}
}

// Close stops reconnecting, closes every connection and fails in-flight
// calls with rpc.ErrConnection.
func (c *Client) Close() error {
	c.cancel()
	c.wg.Wait()
	return nil
}

// ClientStats is a snapshot for the stats collector.
type ClientStats struct {
	Connections int // up now
	InFlight    int // calls waiting for a response
}

// Stats returns a snapshot of the client.
func (c *Client) Stats() ClientStats {
	var st ClientStats
	for _, s := range c.slots {
		if cc := s.cur.Load(); cc != nil {
			st.Connections++
			st.InFlight += cc.pendingCount()
		}
	}
	return st
}

// pick chooses a writable connection, round robin, preferring one that is
// not frozen. A frozen one is still used when it is all there is: it may be
// merely slow, and the caller asked this provider.
func (c *Client) pick() (*clientConn, error) {
	n := uint32(len(c.slots))
	start := c.rr.Add(1)
	readOnly := false
	var frozen *clientConn
	for i := uint32(0); i < n; i++ {
		cc := c.slots[(start+i)%n].cur.Load()
		if cc == nil {
			continue
		}
		if cc.readOnly.Load() {
			readOnly = true
			continue
		}
		if cc.frozen.Load() {
			frozen = cc
			continue
		}
		return cc, nil
	}
	if frozen != nil {
		return frozen, nil
	}
	if readOnly {
		return nil, errors.New("provider is shutting down (read-only)")
	}
	err := c.slots[start%n].lastErr()
	if err == nil {
		return nil, errors.New("not connected")
	}
	return nil, fmt.Errorf("not connected: %w", err)
}

// Invoke sends inv and waits for its result, at most until ctx's deadline,
// else the invocation's timeout attachment, else ClientConfig.Timeout. A
// oneway invocation (attachment return=false) returns once queued.
func (c *Client) Invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	timeout := timeoutOf(inv)
	if timeout == 0 {
		timeout = c.cfg.Timeout
	}
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	req, err := requestFor(inv, timeout)
	if err != nil {
		return nil, &rpc.CallError{Kind: rpc.ErrBadRequest, Service: inv.Service, Method: inv.Method, Address: c.addr, Detail: err.Error()}
	}
	resp, err := c.Send(ctx, req, timeout)
	if err != nil {
		return nil, err
	}
	if resp == nil { // oneway
		return &rpc.Result{RequestBytes: req.Size}, nil
	}
	res, err := resultOf(resp, inv, c.addr)
	if res != nil {
		res.RequestBytes, res.ResponseBytes = req.Size, resp.Size
	}
	return res, err
}

// Send writes req (its ID is assigned here) and, for a two-way request,
// waits up to timeout (or ctx) for the response. Failures are *rpc.CallError
// values of the rpc categories.
func (c *Client) Send(ctx context.Context, req *protocol.Request, timeout time.Duration) (*protocol.Response, error) {
	fail := func(kind error, detail string) error {
		return &rpc.CallError{Kind: kind, Service: req.Path, Method: req.Method, Address: c.addr, Detail: detail}
	}
	if timeout <= 0 {
		return nil, fail(rpc.ErrTimeout, "no time left before sending")
	}
	cc, err := c.pick()
	if err != nil {
		return nil, fail(rpc.ErrConnection, err.Error())
	}
	req.ID = c.nextID.Add(1)
	enc := c.encoders.get()
	enc.buf, err = enc.AppendRequest(enc.buf[:0], req)
	if err != nil {
		c.encoders.put(enc)
		return nil, fail(rpc.ErrBadRequest, err.Error())
	}
	req.Size = len(enc.buf)
	if !req.TwoWay {
		err = cc.w.Write(fastpath.Flush, enc.buf)
		c.encoders.put(enc)
		if err != nil {
			return nil, fail(rpc.ErrConnection, err.Error())
		}
		return nil, nil
	}
	cl := c.calls.Get().(*call)
	if err := cc.register(req.ID, cl); err != nil {
		c.encoders.put(enc)
		c.calls.Put(cl)
		return nil, fail(rpc.ErrConnection, err.Error())
	}
	sent := cc.sending()
	err = cc.w.Write(fastpath.Flush, enc.buf)
	c.encoders.put(enc)
	if err != nil {
		// The connection died: take our call back, or wait for the failure
		// its shutdown is delivering, so the call is clean for reuse.
		if !cc.unregister(req.ID, cl) {
			<-cl.done
			cl.take()
		}
		c.calls.Put(cl)
		return nil, fail(rpc.ErrConnection, err.Error())
	}
	resp, err := cl.wait(ctx, cc, req.ID, sent, timeout)
	c.calls.Put(cl)
	if err != nil {
		var ce *rpc.CallError
		if errors.As(err, &ce) {
			ce.Service, ce.Method = req.Path, req.Method
		}
		return nil, err
	}
	return resp, nil
}

// call is one two-way request waiting for its response. Exactly one of the
// reader (response), the connection's failure, or the waiter's own timeout
// removes it from the pending map, and only the remover completes it, so a
// call can be reused once wait returns.
type call struct {
	done  chan struct{} // capacity 1
	resp  *protocol.Response
	err   error
	timer *time.Timer
}

func (cl *call) complete(resp *protocol.Response, err error) {
	cl.resp, cl.err = resp, err
	cl.done <- struct{}{}
}

// wait waits for the response to request id, sent at sent (a
// fastpath.MonoNow stamp).
func (cl *call) wait(ctx context.Context, cc *clientConn, id int64, sent int64, timeout time.Duration) (*protocol.Response, error) {
	if cl.timer == nil {
		cl.timer = time.NewTimer(timeout)
	} else {
		cl.timer.Reset(timeout)
	}
	var err error
	timedOut := true
	select {
	case <-cl.done:
		cl.timer.Stop()
		return cl.take()
	case <-cl.timer.C:
		err = &rpc.CallError{Kind: rpc.ErrTimeout, Address: cc.addr,
			Detail: fmt.Sprintf("waiting for response %d timed out after %v (CLIENT_TIMEOUT)", id, timeout)}
	case <-ctx.Done():
		cl.timer.Stop()
		err = fmt.Errorf("call %d to %s: %w", id, cc.addr, ctx.Err())
		timedOut = errors.Is(ctx.Err(), context.DeadlineExceeded)
		if timedOut {
			err = &rpc.CallError{Kind: rpc.ErrTimeout, Address: cc.addr,
				Detail: fmt.Sprintf("waiting for response %d: %v", id, ctx.Err())}
		}
	}
	if !cc.unregister(id, cl) {
		// The response (or the connection's failure) won the race; it is
		// being delivered right now.
		<-cl.done
		return cl.take()
	}
	if timedOut && cc.lastRead.Load() < sent {
		// Not a byte since the request went out: ask the provider whether
		// it is still there.
		cc.probe()
	}
	return nil, err
}

func (cl *call) take() (*protocol.Response, error) {
	resp, err := cl.resp, cl.err
	cl.resp, cl.err = nil, nil
	return resp, err
}
