package cluster_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

func generic(method string) *rpc.Invocation {
	return &rpc.Invocation{Service: "org.example.Greeter", Method: "$invoke",
		ParamTypes: []string{"java.lang.String", "java.lang.String[]", "java.lang.Object[]"},
		Args:       []any{method, []string{"int"}, []any{int32(1)}}}
}

func TestAttemptTimeout(t *testing.T) {
	withAttachment := func(inv *rpc.Invocation, v any) *rpc.Invocation {
		inv.Attachments = map[string]any{"timeout": v}
		return inv
	}
	tests := []struct {
		name  string
		query string
		inv   *rpc.Invocation
		want  time.Duration
	}{
		{"default", "", hello(), time.Second},
		{"url", "timeout=3000", hello(), 3 * time.Second},
		{"method over url", "timeout=3000&sayHello.timeout=500", hello(), 500 * time.Millisecond},
		{"other method's setting", "sleep.timeout=3000", hello(), time.Second},
		{"generic call reads its method's setting", "timeout=2000&sleep.timeout=3000", generic("sleep"), 3 * time.Second},
		{"generic call falls back to the plain key", "timeout=2000", generic("sleep"), 2 * time.Second},
		{"attachment over method", "sayHello.timeout=500", withAttachment(hello(), "2500"), 2500 * time.Millisecond},
		{"integer attachment", "", withAttachment(hello(), int64(40)), 40 * time.Millisecond},
		{"zero attachment is absent", "timeout=700", withAttachment(hello(), "0"), 700 * time.Millisecond},
		{"zero in the url is the default", "timeout=0", hello(), time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := url.MustParse("dubbo://10.0.0.1:20880/org.example.Greeter?" + tt.query)
			if got := cluster.AttemptTimeout(u, tt.inv); got != tt.want {
				t.Errorf("AttemptTimeout = %v, want %v", got, tt.want)
			}
		})
	}
	if got := cluster.MethodName(generic("sleep")); got != "sleep" {
		t.Errorf("MethodName($invoke sleep) = %q", got)
	}
}

// recorder is a provider that remembers the timeout attachment and the
// deadline each call arrived with, and answers after delay (or when ctx ends).
type recorder struct {
	*fake
	mu        sync.Mutex
	timeouts  []any
	deadlines []time.Duration
}

func (r *recorder) Invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	dl, _ := ctx.Deadline()
	r.mu.Lock()
	r.timeouts = append(r.timeouts, inv.Attachments["timeout"])
	r.deadlines = append(r.deadlines, time.Until(dl))
	r.mu.Unlock()
	return r.fake.Invoke(ctx, inv)
}

// Each attempt carries its own timeout to the provider, as an attachment
// (what the transport and a Java provider read) and as the context's
// deadline; a generic call gets its method's setting. Before, the
// attachment was left unset, so the transport's 1s default cut every
// gateway call short whatever the configuration said.
func TestEachAttemptCarriesItsTimeout(t *testing.T) {
	p := &recorder{fake: newFake("10.0.0.1", "timeout=2000&sleep.timeout=3000")}
	c := join(t, "failover", cluster.Options{}, p)
	inv := generic("sleep")
	if _, err := c.Invoke(context.Background(), inv); err != nil {
		t.Fatal(err)
	}
	if inv.Attachments != nil {
		t.Errorf("the caller's invocation was modified: %v", inv.Attachments)
	}
	if _, err := c.Invoke(context.Background(), hello()); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timeouts[0] != "3000" || p.timeouts[1] != "2000" {
		t.Errorf("timeout attachments %v, want 3000 (sleep.timeout) then 2000 (timeout)", p.timeouts)
	}
	if p.deadlines[0] < 2500*time.Millisecond || p.deadlines[0] > 3*time.Second {
		t.Errorf("first attempt's deadline %v away, want about 3s", p.deadlines[0])
	}
}

// A timed-out attempt is retried on another provider, as Java's
// FailoverClusterInvoker retries every non-business failure: a frozen
// provider costs its callers one timeout each, never a failed call.
func TestFailoverRetriesTimedOutAttempt(t *testing.T) {
	frozen := newFake("10.0.0.1", "timeout=50")
	frozen.delay = time.Hour
	live := newFake("10.0.0.2", "timeout=50")
	c := join(t, "failover", cluster.Options{}, frozen, live)
	for i := range 30 {
		start := time.Now()
		res, err := c.Invoke(context.Background(), hello())
		if err != nil || res.Value != "10.0.0.2" {
			t.Fatalf("call %d: %v, %v; want the live provider's answer", i, res, err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("call %d took %v; want at most one 50ms timeout before the retry", i, took)
		}
	}
	if frozen.calls.Load() == 0 {
		t.Errorf("no call reached the frozen provider in 30; the balancer never picked it")
	}
	// Every provider timing out: retries+1 attempts, each with its own
	// timeout, then the timeout is reported.
	slow := newFake("10.0.0.3", "timeout=30&retries=2")
	slow.delay = time.Hour
	start := time.Now()
	_, err := join(t, "failover", cluster.Options{}, slow).Invoke(context.Background(), hello())
	var ae *cluster.AttemptsError
	if !errors.Is(err, rpc.ErrTimeout) || !errors.As(err, &ae) || len(ae.Errors) != 3 {
		t.Errorf("error %v: want 3 timed-out attempts", err)
	}
	if took := time.Since(start); took < 90*time.Millisecond {
		t.Errorf("3 attempts of 30ms took %v", took)
	}
	// The caller's context bounds the whole call.
	slower := newFake("10.0.0.4", "timeout=300&retries=2")
	slower.delay = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = join(t, "failover", cluster.Options{}, slower).Invoke(ctx, hello())
	if took := time.Since(start); !errors.Is(err, rpc.ErrTimeout) || took > 600*time.Millisecond {
		t.Errorf("error %v after %v: want a timeout when the caller's 100ms are up, not after 3 × 300ms", err, took)
	}
}
