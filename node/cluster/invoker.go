package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Options configures Join. The zero value of every field but NewBalancer
// means Dubbo's default.
type Options struct {
	// Cluster is the strategy name (the "cluster" URL key): failover
	// (default), failfast, failsafe, failback, forking, broadcast, available.
	Cluster string
	// NewBalancer makes the load balancer for a "loadbalance" name; pass
	// loadbalance.New. Required.
	NewBalancer func(name string, stats *Stats) (LoadBalancer, error)
	// URL is the reference's consumer URL, whose settings of the whole
	// reference apply as Java's cluster invokers read them from theirs:
	// failback's "retries" (default 3; 0 = no background retry) and
	// "failbacktasks" (default 100), broadcast's "broadcast.fail.percent".
	// Optional.
	URL *url.URL
	// Logger receives errors that failsafe and failback swallow.
	// Default slog.Default().
	Logger *slog.Logger
	// FailbackPeriod is how often failback retries failed calls. Default
	// 5s (Java's RETRY_FAILED_PERIOD).
	FailbackPeriod time.Duration
	// ResponseWindow is how long response times are averaged before every
	// provider's average starts over (Stats). Default 30s, Dubbo's
	// shortestresponse slide period.
	ResponseWindow time.Duration
	// Now is the clock for warm-up weights and response times. Default time.Now.
	Now func() time.Time
}

// Invoker is the cluster invoker of one referenced service: an rpc.Invoker
// over a Directory. Close it to stop failback's background retries.
type Invoker struct {
	dir      Directory
	strategy strategy
	opts     Options
	log      *slog.Logger
	stats    *Stats
	fb       failbackSettings
	// sticky is the address of the provider sticky calls keep using.
	sticky atomic.Pointer[string]

	mu        sync.Mutex
	balancers map[string]LoadBalancer
	failback  *failbackQueue
	closed    bool
}

// Join builds the cluster invoker for dir with the strategy opts.Cluster.
func Join(dir Directory, opts Options) (*Invoker, error) {
	name := opts.Cluster
	if name == "" {
		name = DefaultCluster
	}
	s, ok := strategies[name]
	if !ok {
		return nil, Check(name)
	}
	if opts.NewBalancer == nil {
		return nil, errors.New("cluster.Join: Options.NewBalancer is nil; pass loadbalance.New")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.FailbackPeriod <= 0 {
		opts.FailbackPeriod = 5 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Invoker{
		dir:       dir,
		strategy:  s,
		opts:      opts,
		log:       opts.Logger,
		stats:     NewStats(opts.Now, opts.ResponseWindow),
		fb:        failbackSettingsOf(opts.URL),
		balancers: make(map[string]LoadBalancer),
	}, nil
}

// Stats are the call counts this invoker keeps for its balancers.
func (c *Invoker) Stats() *Stats { return c.stats }

// Invoke makes one call with the invoker's strategy.
func (c *Invoker) Invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	return c.strategy(ctx, c, inv)
}

// Close stops the failback retries; calls still queued are dropped.
func (c *Invoker) Close() error {
	c.mu.Lock()
	q := c.failback
	c.closed = true
	c.mu.Unlock()
	if q != nil {
		q.stop()
	}
	return nil
}

// list asks the directory for providers and fails with ErrNoProvider when
// there are none.
func (c *Invoker) list(inv *rpc.Invocation) ([]ProviderInvoker, error) {
	ps := c.dir.List(inv)
	if len(ps) == 0 {
		return nil, &rpc.CallError{Kind: rpc.ErrNoProvider, Service: inv.Service, Method: inv.Method,
			Detail: "the directory lists no provider after routing; check that providers of " +
				url.ServiceKey(inv.Service, inv.Version, inv.Group) + " are running and registered and that no routing rule or override disables them"}
	}
	return ps, nil
}

// balancer is the load balancer the providers' URLs ask for this method.
func (c *Invoker) balancer(ps []ProviderInvoker, inv *rpc.Invocation) (LoadBalancer, error) {
	name := MethodParam(ps[0].URL(), MethodName(inv), KeyLoadBalance)
	if name == "" {
		name = DefaultLoadBalance
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if lb := c.balancers[name]; lb != nil {
		return lb, nil
	}
	lb, err := c.opts.NewBalancer(name, c.stats)
	if err != nil {
		return nil, &rpc.CallError{Kind: rpc.ErrBadRequest, Service: inv.Service, Method: inv.Method,
			Detail: fmt.Sprintf("loadbalance setting: %v", err)}
	}
	c.balancers[name] = lb
	return lb, nil
}

// pick selects a provider, avoiding those already tried (by address) and
// unavailable ones when others remain, as Dubbo's select and reselect do.
// With "sticky" set for the method, the provider picked last is kept while
// it is listed, available and not tried, as Java's stickyInvoker.
func (c *Invoker) pick(lb LoadBalancer, ps []ProviderInvoker, inv *rpc.Invocation, tried map[string]bool) ProviderInvoker {
	sticky := strings.EqualFold(MethodParam(ps[0].URL(), MethodName(inv), KeySticky), "true")
	if sticky {
		if addr := c.sticky.Load(); addr != nil && !tried[*addr] {
			for _, p := range ps {
				if p.URL().Address() == *addr && p.Available() {
					return p
				}
			}
		}
	}
	p := reselect(lb, ps, inv, tried)
	if sticky {
		addr := p.URL().Address()
		c.sticky.Store(&addr)
	}
	return p
}

func reselect(lb LoadBalancer, ps []ProviderInvoker, inv *rpc.Invocation, tried map[string]bool) ProviderInvoker {
	if len(ps) == 1 {
		return ps[0]
	}
	p := lb.Select(ps, inv)
	if p != nil && !tried[p.URL().Address()] && p.Available() {
		return p
	}
	rest := make([]ProviderInvoker, 0, len(ps))
	for _, q := range ps {
		if !tried[q.URL().Address()] && q.Available() {
			rest = append(rest, q)
		}
	}
	if len(rest) > 0 {
		return lb.Select(rest, inv)
	}
	if p == nil {
		return ps[0]
	}
	return p
}

// Select picks the provider a call of inv would go to first, by the
// routers, the load balancer and stickiness, without calling it: for what
// goes to one provider and is not retried, a stream. ErrNoProvider when
// the directory lists none.
func (c *Invoker) Select(inv *rpc.Invocation) (ProviderInvoker, error) {
	return c.selectAvoiding(inv, nil)
}

// selectAvoiding is Select preferring providers not in tried (addresses).
func (c *Invoker) selectAvoiding(inv *rpc.Invocation, tried map[string]bool) (ProviderInvoker, error) {
	ps, err := c.list(inv)
	if err != nil {
		return nil, err
	}
	lb, err := c.balancer(ps, inv)
	if err != nil {
		return nil, err
	}
	return c.pick(lb, ps, inv, tried), nil
}

// once makes one attempt on a provider other than avoid (an address) when
// another is listed; it returns the address it tried ("" when none was
// listed).
func (c *Invoker) once(ctx context.Context, inv *rpc.Invocation, avoid string) (string, *rpc.Result, error) {
	var tried map[string]bool
	if avoid != "" {
		tried = map[string]bool{avoid: true}
	}
	p, err := c.selectAvoiding(inv, tried)
	if err != nil {
		return "", nil, err
	}
	res, err := c.call(ctx, p, inv)
	return p.URL().Address(), res, err
}

// call invokes one provider with the attempt's timeout (AttemptTimeout),
// records the call in Stats and makes sure the error carries a category and
// the provider's address. The timeout bounds this attempt only: failover
// retries a timed-out attempt on another provider, as Java Dubbo does.
func (c *Invoker) call(ctx context.Context, p ProviderInvoker, inv *rpc.Invocation) (*rpc.Result, error) {
	u := p.URL()
	timeout := AttemptTimeout(u, inv)
	// The provider and the transport read the attachment, as a Java
	// provider does; the context ends the wait here.
	inv = withTimeout(inv, timeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	end := c.stats.Begin(u, MethodName(inv))
	res, err := p.Invoke(ctx, inv)
	end(err)
	if err == nil {
		if res == nil {
			res = &rpc.Result{}
		}
		return res, nil
	}
	return nil, categorize(ctx, err, inv, u.Address())
}

// AttemptTimeout is the timeout of one attempt of inv on the provider u,
// read as Java Dubbo's RpcUtils.getTimeout reads it: the invocation's
// "timeout" attachment (milliseconds) when the caller set one, else the
// URL's "<method>.timeout", else its "timeout", else DefaultTimeoutMs.
// Values that are not positive count as absent.
func AttemptTimeout(u *url.URL, inv *rpc.Invocation) time.Duration {
	if ms := attachmentMillis(inv.Attachments[KeyTimeout]); ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	ms := MethodIntParam(u, MethodName(inv), KeyTimeout, DefaultTimeoutMs)
	if ms <= 0 {
		ms = DefaultTimeoutMs
	}
	return time.Duration(ms) * time.Millisecond
}

// attachmentMillis reads a timeout attachment: milliseconds as a decimal
// string (as Dubbo sends it) or an integer; 0 when absent or unreadable.
func attachmentMillis(v any) int64 {
	switch v := v.(type) {
	case string:
		ms, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return ms
	case int:
		return int64(v)
	case int32:
		return int64(v)
	case int64:
		return v
	}
	return 0
}

// withTimeout returns inv with the timeout attachment set to timeout,
// copying it only when the attachment says otherwise (the attempts of one
// call share inv).
func withTimeout(inv *rpc.Invocation, timeout time.Duration) *rpc.Invocation {
	ms := timeout.Milliseconds()
	if attachmentMillis(inv.Attachments[KeyTimeout]) == ms {
		return inv
	}
	cp := *inv
	cp.Attachments = maps.Clone(inv.Attachments)
	if cp.Attachments == nil {
		cp.Attachments = make(map[string]any, 1)
	}
	cp.Attachments[KeyTimeout] = strconv.FormatInt(ms, 10)
	return &cp
}

// categorize wraps errors that carry no rpc category, so that callers can
// always use errors.Is with the rpc categories.
func categorize(ctx context.Context, err error, inv *rpc.Invocation, addr string) error {
	var ex *rpc.Exception
	if rpc.Category(err) != nil || errors.As(err, &ex) {
		return err
	}
	kind := rpc.ErrProvider
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		kind = rpc.ErrTimeout
	}
	return fmt.Errorf("%w: %w", &rpc.CallError{Kind: kind, Service: inv.Service, Method: inv.Method, Address: addr}, err)
}

// AttemptsError is the error of a call that was tried on several providers
// (failover, forking, broadcast). errors.Is matches the category of any
// attempt; the message lists each.
type AttemptsError struct {
	Service, Method string
	// Listed is how many providers the directory offered at the last attempt.
	Listed int
	// Errors holds one error per failed attempt, in order.
	Errors []error
}

func (e *AttemptsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s.%s: failed %d attempt(s) (%d provider(s) listed)", e.Service, e.Method, len(e.Errors), e.Listed)
	for i, err := range e.Errors {
		fmt.Fprintf(&b, "; #%d: %v", i+1, err)
	}
	return b.String()
}

// Unwrap returns every attempt's error for errors.Is and errors.As.
func (e *AttemptsError) Unwrap() []error { return e.Errors }

// errClosed is what failback reports for calls dropped by Close.
var errClosed = errors.New("cluster invoker closed")
