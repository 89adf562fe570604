package directory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/cluster/configurator"
	"github.com/dubbo-lab/dubbo/node/cluster/router"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

type fakeProvider struct {
	u    *url.URL
	down atomic.Bool
}

func (f *fakeProvider) Invoke(context.Context, *rpc.Invocation) (*rpc.Result, error) {
	return &rpc.Result{}, nil
}
func (f *fakeProvider) URL() *url.URL   { return f.u }
func (f *fakeProvider) Available() bool { return !f.down.Load() }

var consumer = url.MustParse("consumer://192.168.1.5/org.example.Greeter?application=shop&retries=5&sayHello.timeout=300&weight=1")

func addresses(ps []cluster.ProviderInvoker) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.URL().Address())
	}
	return strings.Join(out, ",")
}

func provider(addr string, query string) *url.URL {
	return url.MustParse("dubbo://" + addr + "/org.example.Greeter?interface=org.example.Greeter&" + query)
}

// harness is a Dynamic directory whose Connect and Release are recorded.
type harness struct {
	*Dynamic
	mu        sync.Mutex
	connects  []string
	releases  []string
	providers map[string]*fakeProvider
	refuse    map[string]bool
}

func newHarness(t *testing.T) *harness {
	h := &harness{providers: map[string]*fakeProvider{}, refuse: map[string]bool{}}
	d, err := NewDynamic(Options{
		Consumer: consumer,
		Connect: func(u *url.URL) (cluster.ProviderInvoker, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.refuse[u.Address()] {
				return nil, errors.New("connection refused")
			}
			h.connects = append(h.connects, u.Address())
			p := &fakeProvider{u: u}
			h.providers[u.Address()] = p
			return p, nil
		},
		Release: func(p cluster.ProviderInvoker) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.releases = append(h.releases, p.URL().Address())
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	h.Dynamic = d
	return h
}

func (h *harness) record() (connects, releases string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.connects, ","), strings.Join(h.releases, ",")
}

var call = &rpc.Invocation{Service: "org.example.Greeter", Method: "sayHello"}

func TestDynamicUpdates(t *testing.T) {
	h := newHarness(t)
	h.Update([]*url.URL{provider("10.0.0.2:20880", "timestamp=1"), provider("10.0.0.1:20880", "timestamp=1")})
	if got := addresses(h.List(call)); got != "10.0.0.1:20880,10.0.0.2:20880" {
		t.Fatalf("listed %q", got)
	}
	// Re-registration with a new timestamp keeps the connection but the URL
	// the balancers see is the new one.
	h.Update([]*url.URL{provider("10.0.0.1:20880", "timestamp=2"), provider("10.0.0.2:20880", "timestamp=1")})
	if c, r := h.record(); strings.Count(c, ",") != 1 || r != "" {
		t.Errorf("after timestamp change: connects %q releases %q, want 2 connects, no release", c, r)
	}
	if ts := h.List(call)[0].URL().Param("timestamp"); ts != "2" {
		t.Errorf("timestamp = %s, want the re-registered 2", ts)
	}
	// A provider that leaves is released; a changed parameter is a new provider.
	h.Update([]*url.URL{provider("10.0.0.1:20880", "timestamp=2&weight=7")})
	if got := addresses(h.List(call)); got != "10.0.0.1:20880" {
		t.Errorf("listed %q after removal", got)
	}
	if _, r := h.record(); r != "10.0.0.2:20880,10.0.0.1:20880" && r != "10.0.0.1:20880,10.0.0.2:20880" {
		t.Errorf("released %q, want both old invokers", r)
	}
	// An empty notification means no providers.
	h.Update([]*url.URL{url.MustParse("empty://192.168.1.5/org.example.Greeter?category=providers")})
	if got := h.List(call); len(got) != 0 {
		t.Errorf("listed %q after empty update", addresses(got))
	}
	if _, r := h.record(); strings.Count(r, ",") != 2 {
		t.Errorf("released %q, want 3 releases", r)
	}
}

func TestDynamicConnectFailureRetriedOnNextUpdate(t *testing.T) {
	h := newHarness(t)
	h.refuse["10.0.0.1:20880"] = true
	list := []*url.URL{provider("10.0.0.1:20880", ""), provider("10.0.0.2:20880", "")}
	h.Update(list)
	if got := addresses(h.List(call)); got != "10.0.0.2:20880" {
		t.Errorf("listed %q, want only the provider that connected", got)
	}
	delete(h.refuse, "10.0.0.1:20880")
	h.Update(list)
	if got := addresses(h.List(call)); got != "10.0.0.1:20880,10.0.0.2:20880" {
		t.Errorf("listed %q after retry", got)
	}
}

func TestDynamicUnavailableDropsOutAtOnce(t *testing.T) {
	h := newHarness(t)
	h.Update([]*url.URL{provider("10.0.0.1:20880", ""), provider("10.0.0.2:20880", "")})
	h.providers["10.0.0.1:20880"].down.Store(true)
	if got := addresses(h.List(call)); got != "10.0.0.2:20880" {
		t.Errorf("listed %q with 10.0.0.1 down", got)
	}
	h.providers["10.0.0.1:20880"].down.Store(false)
	if got := addresses(h.List(call)); got != "10.0.0.1:20880,10.0.0.2:20880" {
		t.Errorf("listed %q after recovery", got)
	}
}

func TestDynamicConfiguratorsAndRouter(t *testing.T) {
	h := newHarness(t)
	h.Update([]*url.URL{provider("10.0.0.1:20880", "weight=100&retries=1"), provider("10.0.0.2:20880", "weight=100")})

	// The consumer's settings win over the provider's; weight is not a consumer setting.
	p := h.List(call)[0].URL()
	if p.Param("retries") != "5" || p.Param("sayHello.timeout") != "300" || p.Param("weight") != "100" {
		t.Errorf("merged URL %s: want retries=5, sayHello.timeout=300, weight=100", p)
	}

	rules, err := configurator.Parse([]byte(`
scope: service
key: org.example.Greeter
configs:
  - side: provider
    addresses: ["10.0.0.1:20880"]
    parameters: {weight: 300}
  - side: provider
    addresses: ["10.0.0.2"]
    parameters: {disabled: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	h.SetConfigurator("service", 2, rules)
	ps := h.List(call)
	if addresses(ps) != "10.0.0.1:20880" || ps[0].URL().Param("weight") != "300" {
		t.Errorf("with overrides listed %q weight %s; want only 10.0.0.1 at weight 300", addresses(ps), ps[0].URL().Param("weight"))
	}
	// Overrides survive a provider update and go away when removed.
	h.Update([]*url.URL{provider("10.0.0.1:20880", "weight=100&retries=1"), provider("10.0.0.2:20880", "weight=100"), provider("10.0.0.3:20880", "")})
	if got := addresses(h.List(call)); got != "10.0.0.1:20880,10.0.0.3:20880" {
		t.Errorf("after update listed %q", got)
	}
	h.SetConfigurator("service", 2, nil)
	if got := addresses(h.List(call)); got != "10.0.0.1:20880,10.0.0.2:20880,10.0.0.3:20880" {
		t.Errorf("without overrides listed %q", got)
	}

	rule, err := router.ParseCondition("method = sayHello => host != 10.0.0.1", false)
	if err != nil {
		t.Fatal(err)
	}
	h.SetRouter(rule)
	if got := addresses(h.List(call)); got != "10.0.0.2:20880,10.0.0.3:20880" {
		t.Errorf("routed %q", got)
	}
	if got := addresses(h.List(&rpc.Invocation{Method: "add"})); got != "10.0.0.1:20880,10.0.0.2:20880,10.0.0.3:20880" {
		t.Errorf("add routed %q, want all", got)
	}
	h.SetRouter(nil)
	if got := len(h.List(call)); got != 3 {
		t.Errorf("without router listed %d, want 3", got)
	}
}

func TestDynamicClose(t *testing.T) {
	h := newHarness(t)
	h.Update([]*url.URL{provider("10.0.0.1:20880", ""), provider("10.0.0.2:20880", "")})
	h.Close()
	h.Update([]*url.URL{provider("10.0.0.3:20880", "")})
	if got := h.List(call); len(got) != 0 {
		t.Errorf("closed directory lists %q", addresses(got))
	}
	if c, r := h.record(); strings.Contains(c, "10.0.0.3") || strings.Count(r, ",") != 1 {
		t.Errorf("connects %q releases %q: want both released and nothing connected after Close", c, r)
	}
}

func TestDynamicConcurrentUpdateAndList(t *testing.T) {
	h := newHarness(t)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, p := range h.List(call) {
				if p.URL() == nil {
					t.Error("nil URL")
				}
			}
		}
	}()
	for i := range 200 {
		h.Update([]*url.URL{provider(fmt.Sprintf("10.0.0.%d:20880", i%5), ""), provider("10.0.1.1:20880", "")})
	}
	close(stop)
	wg.Wait()
}

func TestStatic(t *testing.T) {
	a := &fakeProvider{u: provider("10.0.0.1:20880", "")}
	b := &fakeProvider{u: provider("10.0.0.2:20880", "disabled=true")}
	c := &fakeProvider{u: provider("10.0.0.3:20880", "")}
	c.down.Store(true)
	d := NewStatic(consumer, nil, a, b, c)
	ps := d.List(call)
	if addresses(ps) != "10.0.0.1:20880" || ps[0].URL().Param("retries") != "5" {
		t.Errorf("listed %q (%v); want only the enabled, available one with the consumer's retries", addresses(ps), ps)
	}
}

// BenchmarkDynamicUpdate is one registration event of a service with 1,000
// providers: the registry notifies the whole list, one provider more or
// one fewer than the last time, with the URL objects it notified before.
func BenchmarkDynamicUpdate(b *testing.B) {
	h := &harness{providers: map[string]*fakeProvider{}, refuse: map[string]bool{}}
	d, err := NewDynamic(Options{
		Consumer: consumer,
		Connect:  func(u *url.URL) (cluster.ProviderInvoker, error) { return &fakeProvider{u: u}, nil },
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	h.Dynamic = d
	var all []*url.URL
	for i := range 1001 {
		all = append(all, provider(fmt.Sprintf("10.0.%d.%d:20880", i/250, i%250), "application=greeter-app&timestamp=1&methods=sayHello,add"))
	}
	lists := [][]*url.URL{all[:1000], all}
	h.Update(lists[0])
	b.ResetTimer()
	for i := range b.N {
		h.Update(lists[(i+1)%2])
	}
	b.StopTimer()
	if n := len(h.Providers()); n != len(lists[b.N%2]) {
		b.Fatalf("%d providers listed, want %d", n, len(lists[b.N%2]))
	}
}

// ConsumerURL follows the consumer-side override rules, so that settings
// of the whole reference (mock) change without any provider.
func TestDynamicConsumerURL(t *testing.T) {
	h := newHarness(t)
	if h.ConsumerURL() != h.opts.Consumer {
		t.Fatal("without rules the consumer URL is the one given")
	}
	rules, err := configurator.Parse([]byte("scope: service\nkey: org.example.Greeter\nconfigs:\n  - side: consumer\n    parameters: {mock: 'force:return null'}\n  - side: provider\n    parameters: {weight: 5}\n"))
	if err != nil {
		t.Fatal(err)
	}
	h.SetConfigurator("service", 2, rules)
	if got := h.ConsumerURL(); got.Param("mock") != "force:return null" || got.Param("weight") != "1" {
		t.Errorf("consumer URL under the rules: %s", got)
	}
	h.SetConfigurator("service", 2, nil)
	if h.ConsumerURL().HasParam("mock") {
		t.Error("the rule's mock stayed after the rule went")
	}
}
