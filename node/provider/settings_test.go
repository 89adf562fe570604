package provider_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/provider/settings"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// startBare starts a provider on a free loopback port with nothing exported.
func startBare(t *testing.T, cfg provider.Config) *provider.Provider {
	t.Helper()
	cfg.Protocol.Host = "127.0.0.1"
	cfg.Protocol.Port = -1
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := provider.Start(ctx, cfg, provider.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func export(t *testing.T, p *provider.Provider, svc provider.Service) {
	t.Helper()
	if err := p.Export(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
}

func retries(n int) *int { return &n }

// The settings land in the provider URL by Java's names (tag as dubbo.tag,
// durations in milliseconds); the matching [[provider.services]] table
// wins over the service's own parameters (a plugin's), which win over the
// node's provider.weight; the most specific table wins.
func TestServiceSettingsInURL(t *testing.T) {
	cfg := provider.Config{Weight: new(70), Services: []provider.ServiceConfig{
		{Interface: providertest.GreeterInterface, Settings: settings.Settings{
			Weight: new(300), Tag: "gray", Timeout: 3 * time.Second, Retries: retries(0), LoadBalance: "roundrobin",
			Warmup: new(time.Minute), Executes: 8, Actives: 4, Parameters: map[string]string{"sayHello.timeout": "5000", "owner": "team-a"},
		}},
		// More specific: the version's table wins for 2.0.0.
		{Interface: providertest.GreeterInterface, Version: "2.0.0", Settings: settings.Settings{Weight: new(5)}},
		{Interface: "org.example.Other", Settings: settings.Settings{Weight: new(1)}},
	}}
	p := startBare(t, cfg)
	greeter := providertest.Greeter(nil)
	greeter.Params = map[string]string{"weight": "20", "dubbo.tag": "blue", "owner": "plugin", "connections": "2"}
	export(t, p, greeter)
	v2 := providertest.Greeter(nil)
	v2.Version = "2.0.0"
	export(t, p, v2)
	plain := providertest.Greeter(nil)
	plain.Interface = "org.example.Plain"
	export(t, p, plain)

	byIface := map[string]map[string]string{}
	for _, u := range p.URLs() {
		byIface[u.Path()+":"+u.Param("version")] = u.Params()
	}
	tests := []struct {
		service string
		want    map[string]string
	}{
		{"org.example.Greeter:1.0.0", map[string]string{"weight": "300", "dubbo.tag": "gray", "timeout": "3000", "retries": "0",
			"loadbalance": "roundrobin", "warmup": "60000", "executes": "8", "actives": "4", "sayHello.timeout": "5000",
			"owner": "team-a", "connections": "2", "interface": "org.example.Greeter", "side": "provider"}},
		{"org.example.Greeter:2.0.0", map[string]string{"weight": "5", "dubbo.tag": "", "timeout": "", "version": "2.0.0"}},
		{"org.example.Plain:1.0.0", map[string]string{"weight": "70", "dubbo.tag": ""}},
	}
	for _, tt := range tests {
		got, ok := byIface[tt.service]
		if !ok {
			t.Fatalf("%s not exported; have %v", tt.service, byIface)
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", tt.service, k, got[k], v)
			}
		}
	}
}

// token: "true" a UUID per service, a value as is, "false" none even when
// provider.token sets one; calls must present it.
func TestServiceToken(t *testing.T) {
	p := startBare(t, provider.Config{Token: "node-secret", Services: []provider.ServiceConfig{
		{Interface: "org.example.Open", Settings: settings.Settings{Token: "false"}},
		{Interface: "org.example.Random", Settings: settings.Settings{Token: "true"}},
	}})
	for _, iface := range []string{"org.example.Open", "org.example.Random", "org.example.Node"} {
		svc := providertest.Greeter(nil)
		svc.Interface = iface
		export(t, p, svc)
	}
	tokens := map[string]string{}
	for _, u := range p.URLs() {
		tokens[u.Path()] = u.Param("token")
	}
	if tokens["org.example.Open"] != "" || len(tokens["org.example.Random"]) != 36 || tokens["org.example.Node"] != "node-secret" {
		t.Fatalf("tokens %v", tokens)
	}
	c := dial(t, p.Addr())
	for iface, token := range tokens {
		inv := greeterCall("sayHello", []string{"java.lang.String"}, "t")
		inv.Service = iface
		_, err := c.Invoke(context.Background(), inv)
		if refused := err != nil && strings.Contains(err.Error(), "Invalid token!"); refused != (token != "") {
			t.Errorf("%s without a token: %v", iface, err)
		}
		inv.SetAttachment("token", token)
		if res, err := c.Invoke(context.Background(), inv); err != nil || res.Value != "Hello, t" {
			t.Errorf("%s with its token: %v %v", iface, res, err)
		}
	}
}

// Settings that cannot be written or mean nothing are refused, naming the
// key: in the config at start, in a service's parameters at export.
func TestServiceSettingsRefused(t *testing.T) {
	tests := []struct {
		name string
		cfg  provider.Config
		want string
	}{
		{"unknown load balancer", provider.Config{Services: []provider.ServiceConfig{{Interface: "a.B",
			Settings: settings.Settings{LoadBalance: "roundrobbin"}}}},
			`provider.services[0].loadbalance: unknown load balancer "roundrobbin"; known: consistenthash, leastactive, p2c, random, roundrobin, shortestresponse`},
		{"no interface", provider.Config{Services: []provider.ServiceConfig{{Settings: settings.Settings{Weight: new(1)}}}},
			"provider.services[0].interface: missing"},
		{"negative weight", provider.Config{Services: []provider.ServiceConfig{{Interface: "a.B",
			Settings: settings.Settings{Weight: new(-1)}}}}, "provider.services[0].weight: -1 is negative"},
		{"reserved parameter", provider.Config{Services: []provider.ServiceConfig{{Interface: "a.B",
			Settings: settings.Settings{Parameters: map[string]string{"version": "2"}}}}},
			"provider.services[0].parameters: parameter version: written by the provider"},
		{"method-level executes not a number", provider.Config{Services: []provider.ServiceConfig{{Interface: "a.B",
			Settings: settings.Settings{Parameters: map[string]string{"sayHello.executes": "many"}}}}},
			`provider.services[0].parameters: parameter sayHello.executes: "many" is not a non-negative integer`},
		{"serialization in parameters", provider.Config{Services: []provider.ServiceConfig{{Interface: "a.B",
			Settings: settings.Settings{Parameters: map[string]string{"prefer.serialization": "hessian2,fastjson2"}}}}},
			`provider.services[0].parameters: parameter prefer.serialization: serialization "fastjson2" is Dubbo's but not implemented here`},
		{"twice", provider.Config{Services: []provider.ServiceConfig{{Interface: "a.B"}, {Interface: "a.B", Version: "0.0.0"}}},
			"provider.services[1].interface: a.B (version \"0.0.0\", group \"\") has settings in provider.services[0] already"},
		{"dispatcher", provider.Config{Protocol: provider.ProtocolConfig{Dispatcher: "al"}},
			`protocol.dispatcher: unknown dispatcher "al"; known: all, connection, direct, execution, message`},
		{"thread pool", provider.Config{Protocol: provider.ProtocolConfig{ThreadPool: "fixd"}},
			`protocol.threadpool: unknown thread pool "fixd"; known: cached, eager, fixed, limited`},
		{"serialization", provider.Config{Protocol: provider.ProtocolConfig{Serialization: "fastjson2"}},
			`protocol.serialization: serialization "fastjson2" is Dubbo's but not implemented here; only hessian2 is`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
			tt.cfg.Protocol.Host, tt.cfg.Protocol.Port = "127.0.0.1", -1
			if p, err := provider.Start(context.Background(), tt.cfg, provider.Options{Logger: quietLogger()}); err == nil {
				p.Close()
				t.Fatal("Start accepted it")
			}
		})
	}

	p := startBare(t, provider.Config{})
	svc := providertest.Greeter(nil)
	svc.Params = map[string]string{"weight": "-5"}
	if err := p.Export(context.Background(), svc); err == nil || !strings.Contains(err.Error(), `parameter weight: "-5" is not a non-negative integer`) {
		t.Fatalf("export with weight -5: %v", err)
	}
	svc.Params = map[string]string{"methods": "x"}
	if err := p.Export(context.Background(), svc); err == nil || !strings.Contains(err.Error(), "parameter methods: written by the provider") {
		t.Fatalf("export with methods: %v", err)
	}
}

// blockingService serves org.example.Blocking: hold() waits for release
// and counts how many run at once; quick() answers at once.
type blockingService struct {
	inside, most atomic.Int32
	entered      chan struct{}
	release      chan struct{}
}

func newBlockingService() *blockingService {
	return &blockingService{entered: make(chan struct{}, 64), release: make(chan struct{})}
}

func (b *blockingService) service(params map[string]string) provider.Service {
	return provider.Service{Interface: "org.example.Blocking", Version: "1.0.0", Params: params,
		Methods: []provider.Method{
			{Name: "hold", ReturnType: "java.lang.String"},
			{Name: "quick", ReturnType: "java.lang.String"},
		},
		Invoker: rpc.InvokerFunc(func(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
			if inv.Method == "quick" {
				return &rpc.Result{Value: "quick"}, nil
			}
			n := b.inside.Add(1)
			defer b.inside.Add(-1)
			for m := b.most.Load(); n > m && !b.most.CompareAndSwap(m, n); m = b.most.Load() {
			}
			b.entered <- struct{}{}
			select {
			case <-b.release:
				return &rpc.Result{Value: "held"}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})}
}

func blockingCall(method string) *rpc.Invocation {
	inv := &rpc.Invocation{Service: "org.example.Blocking", Version: "1.0.0", Method: method}
	inv.SetAttachment("timeout", "10000")
	return inv
}

// waitEntered waits for n calls to be inside hold().
func (b *blockingService) waitEntered(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-b.entered:
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of %d calls entered the handler within 5s", i, n)
		}
	}
}

// executes: the provider runs at most that many calls of a method at
// once and refuses one more with Java's ExecuteLimitFilter error
// (SERVICE_ERROR, "The service using threads greater than <dubbo:service
// executes=..."), which consumers see as a provider error; other methods
// and later calls are served.
func TestExecutesLimit(t *testing.T) {
	b := newBlockingService()
	p := startBare(t, provider.Config{Services: []provider.ServiceConfig{
		{Interface: "org.example.Blocking", Settings: settings.Settings{Executes: 2}},
	}})
	export(t, p, b.service(nil))
	c := dial(t, p.Addr())
	ctx := context.Background()

	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Invoke(ctx, blockingCall("hold"))
			errs <- err
		}()
	}
	b.waitEntered(t, 2)

	_, err := c.Invoke(ctx, blockingCall("hold"))
	want := fmt.Sprintf("org.apache.dubbo.rpc.RpcException: Failed to invoke method hold in provider dubbo://%s/org.example.Blocking?", p.Addr())
	if !errors.Is(err, rpc.ErrProvider) || !strings.Contains(err.Error(), want) ||
		!strings.Contains(err.Error(), `cause: The service using threads greater than <dubbo:service executes="2" /> limited.`) {
		t.Fatalf("third concurrent call: %v\nwant a provider error with %q", err, want)
	}
	if res, err := c.Invoke(ctx, blockingCall("quick")); err != nil || res.Value != "quick" {
		t.Fatalf("another method while hold is at its limit: %v %v", res, err)
	}
	close(b.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a call within the limit: %v", err)
		}
	}
	// The limit counts calls in flight, not calls made.
	for i := range 3 {
		if _, err := c.Invoke(ctx, blockingCall("hold")); err != nil {
			t.Fatalf("call %d after the others ended: %v", i, err)
		}
	}
	if got := b.most.Load(); got != 2 {
		t.Errorf("at most %d calls ran at once, want 2", got)
	}

	// Per method, through parameters: <method>.executes.
	b2 := newBlockingService()
	p2 := startBare(t, provider.Config{})
	export(t, p2, b2.service(map[string]string{"hold.executes": "1"}))
	c2 := dial(t, p2.Addr())
	go c2.Invoke(ctx, blockingCall("hold"))
	b2.waitEntered(t, 1)
	if _, err := c2.Invoke(ctx, blockingCall("hold")); err == nil || !strings.Contains(err.Error(), `executes="1"`) {
		t.Fatalf("second call with hold.executes=1: %v", err)
	}
	close(b2.release)
}

// delay: the service is neither served nor listed until its delay has
// passed, then it is exported as usual; Unexport during the delay cancels
// it.
func TestDelayedExport(t *testing.T) {
	p := startBare(t, provider.Config{Services: []provider.ServiceConfig{
		{Interface: providertest.GreeterInterface, Settings: settings.Settings{Delay: time.Second}},
	}})
	start := time.Now()
	export(t, p, providertest.Greeter(nil))
	c := dial(t, p.Addr())
	inv := greeterCall("sayHello", []string{"java.lang.String"}, "early")
	if _, err := c.Invoke(context.Background(), inv); !errors.Is(err, rpc.ErrServiceNotFound) {
		if time.Since(start) < time.Second {
			t.Fatalf("a call during the delay: %v, want service not found", err)
		}
	}
	if us := p.URLs(); len(us) != 0 && time.Since(start) < time.Second {
		t.Fatalf("listed during the delay: %v", us)
	}
	if st := p.Services(); len(st) != 1 || st[0].DelayedUntil.IsZero() || st[0].Published {
		if time.Since(start) < time.Second {
			t.Fatalf("states during the delay: %+v", st)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(p.URLs()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("not exported 5s after a delay of 1s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if took := time.Since(start); took < time.Second {
		t.Fatalf("exported after %v, before its delay of 1s", took)
	}
	if u := p.URLs()[0]; u.Param("delay") != "1000" {
		t.Errorf("delay = %q in %s, want 1000", u.Param("delay"), u)
	}
	if res, err := c.Invoke(context.Background(), inv); err != nil || res.Value != "Hello, early" {
		t.Fatalf("after the delay: %v %v", res, err)
	}

	// Unexported while delayed: never exported.
	if err := p.Unexport(context.Background(), providertest.GreeterInterface, providertest.GreeterVersion, ""); err != nil {
		t.Fatal(err)
	}
	export(t, p, providertest.Greeter(nil))
	if err := p.Unexport(context.Background(), providertest.GreeterInterface, providertest.GreeterVersion, ""); err != nil {
		t.Fatalf("unexport during the delay: %v", err)
	}
	time.Sleep(1500 * time.Millisecond)
	if us := p.URLs(); len(us) != 0 {
		t.Fatalf("exported although unexported during its delay: %v", us)
	}
}

// A setting whose 0 means something else than unset is registered as 0,
// as Java writes it: warmup = 0 is no warm-up (absent, consumers ramp the
// weight up for Dubbo's 10 minutes), weight = 0 no calls (absent, 100),
// retries = 0 no retry (absent, 2). Unset, none is written.
func TestZeroSettingsRegistered(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	zero, zeroDuration := 0, time.Duration(0)
	p := startBare(t, provider.Config{Application: "greeter-app", Registry: "zookeeper://" + zkAddr,
		Services: []provider.ServiceConfig{{Interface: "org.example.Zero",
			Settings: settings.Settings{Warmup: &zeroDuration, Weight: &zero, Retries: &zero}}}})
	for _, iface := range []string{"org.example.Zero", "org.example.Unset"} {
		svc := providertest.Greeter(nil)
		svc.Interface = iface
		export(t, p, svc)
	}
	zc := zkConn(t, zkAddr)
	for iface, want := range map[string]map[string]string{
		"org.example.Zero":  {"warmup": "0", "weight": "0", "retries": "0"},
		"org.example.Unset": {},
	} {
		children, _, err := zc.Children("/dubbo/" + iface + "/providers")
		if err != nil || len(children) != 1 {
			t.Fatalf("%s providers %v %v", iface, children, err)
		}
		u, err := url.Decode(children[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"warmup", "weight", "retries"} {
			v, ok := want[k]
			if u.HasParam(k) != ok || u.Param(k) != v {
				t.Errorf("%s registered %s=%q (present %v), want %q (present %v)", iface, k, u.Param(k), u.HasParam(k), v, ok)
			}
		}
	}
}
