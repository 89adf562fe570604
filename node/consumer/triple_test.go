package consumer_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/greetgrpc"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/node/cluster/router"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/idl"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/registry/metadata"
	"github.com/dubbo-lab/dubbo/node/registry/zookeeper"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// A grpc-go greet server stands for a Triple provider: Triple is gRPC on
// the wire. It is registered by hand, with the keys dubbo-go registers for
// a Triple service.

func triURL(addr string, params map[string]string) *url.URL {
	u := url.MustParse("tri://" + addr + "/" + greetgrpc.Service + "?interface=" + greetgrpc.Service +
		"&application=greet-app&side=provider&methods=Greet,GreetClientStream,GreetServerStream,GreetStream")
	for k, v := range params {
		u.SetParam(k, v)
	}
	return u
}

// registrar registers provider URLs in its own ZooKeeper session: they go
// when it closes, as a provider's do when it stops.
func registrar(t *testing.T, zkAddr string) *zookeeper.Registry {
	t.Helper()
	reg, err := zookeeper.New(url.MustParse("zookeeper://"+zkAddr), zookeeper.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	return reg
}

func greetRef() consumer.ReferenceConfig {
	return consumer.ReferenceConfig{Interface: greetgrpc.Service}
}

func greetCall(t *testing.T, name string) *rpc.Invocation {
	return &rpc.Invocation{Service: greetgrpc.Service, Method: "Greet",
		Args: []any{rpc.Message{Bytes: greetgrpc.Encode(t, greetgrpc.Request, fmt.Sprintf(`{"name":%q}`, name))}}}
}

func greetingOf(t *testing.T, res *rpc.Result) string {
	t.Helper()
	return greetgrpc.Decode(t, greetgrpc.Response, res.Value.(rpc.Message).Bytes)
}

// tri:// providers found in the registry are called over Triple, with the
// routing, balancing, token, timeouts and statistics of dubbo:// ones.
func TestTripleProvidersFromRegistry(t *testing.T) {
	zktest.Both(t, func(t *testing.T, zkAddr string) {
		s1 := greetgrpc.Start(t, greetgrpc.Options{})
		s2 := greetgrpc.Start(t, greetgrpc.Options{})
		reg := registrar(t, zkAddr)
		ctx := testCtx(t)
		for _, u := range []*url.URL{
			triURL(s1.Addr(), map[string]string{"token": "t0k3n"}),
			triURL(s2.Addr(), map[string]string{router.KeyTag: "gray", "token": "t0k3n"}),
		} {
			if err := reg.Register(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		ref := greetRef()
		ref.LoadBalance = "roundrobin"
		c := newConsumer(t, zkAddr, ref)
		waitProviders(t, c, ref, 2)

		// Untagged calls go to the untagged provider only (tag routing).
		for range 4 {
			res, err := c.Invoke(ctx, greetCall(t, "x"))
			if err != nil {
				t.Fatal(err)
			}
			if got := greetingOf(t, res); got != `{"greeting":"Hello, x"}` || res.Provider != s1.Addr() {
				t.Fatalf("answer %s from %s", got, res.Provider)
			}
		}
		tagged := greetCall(t, "g")
		tagged.SetAttachment(router.KeyTag, "gray")
		res, err := c.Invoke(ctx, tagged)
		if err != nil || res.Provider != s2.Addr() {
			t.Fatalf("tagged call: %v, %+v", err, res)
		}
		call := s2.Calls()[0]
		for k, want := range map[string]string{"token": "t0k3n", router.KeyTag: "gray", "remote.application": "greeter-consumer"} {
			if got := call.Metadata.Get(k); len(got) != 1 || got[0] != want {
				t.Errorf("header %s = %q, want %q", k, got, want)
			}
		}
		// The attempt's timeout (1s by default) is the call's deadline.
		if left := time.Until(call.Deadline); left > time.Second || left <= 0 {
			t.Errorf("deadline in %v, want within the 1s default timeout", left)
		}

		// Timeouts: the reference's, and failover retries another provider.
		start := time.Now()
		slow := greetCall(t, "sleep:3s")
		slow.SetAttachment("timeout", "100")
		slow.SetAttachment(router.KeyTag, "gray")
		slow.SetAttachment("dubbo.force.tag", "true")
		_, err = c.Invoke(ctx, slow)
		if !errors.Is(err, rpc.ErrTimeout) || time.Since(start) > 2*time.Second {
			t.Errorf("slow call: %v after %v, want timeouts after 3 x 100ms", err, time.Since(start))
		}

		// The consumer counts each call by method and provider.
		counted := map[string]int64{}
		for _, smp := range c.Stats().Collect(time.Now()) {
			if smp.Interface == greetgrpc.Service && smp.Method == "Greet" {
				counted[smp.Peer] += smp.Success + smp.Failure
			}
		}
		if counted[s1.Addr()] != 4 || counted[s2.Addr()] != 4 { // 1 tagged + 3 timed-out attempts
			t.Errorf("statistics %v, want 4 calls on each", counted)
		}

		// A provider that goes is left out at once; its node goes later.
		s1.Stop()
		waitFor(t, "s1 unavailable", func() bool {
			r, _ := c.Reference(ctx, ref)
			return len(r.Providers()) == 1
		})
	})
}

// A reference's protocol limits it to providers of that protocol; without
// one it calls either; url = "tri://host:port" works.
func TestReferenceProtocol(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	s := greetgrpc.Start(t, greetgrpc.Options{})
	if err := registrar(t, zkAddr).Register(testCtx(t), triURL(s.Addr(), nil)); err != nil {
		t.Fatal(err)
	}
	startProvider(t, zkAddr, provider.Config{}, nil) // org.example.Greeter over dubbo://

	c := newConsumer(t, zkAddr)
	ctx := testCtx(t)
	refs := []struct {
		ref  consumer.ReferenceConfig
		want int
	}{
		{greetRef(), 1},
		{consumer.ReferenceConfig{Interface: greetgrpc.Service, Protocol: "tri"}, 1},
		{consumer.ReferenceConfig{Interface: greetgrpc.Service, Protocol: "dubbo"}, 0},
		{consumer.ReferenceConfig{Interface: providertest.GreeterInterface, Version: providertest.GreeterVersion, Protocol: "tri"}, 0},
		{consumer.ReferenceConfig{Interface: providertest.GreeterInterface, Version: providertest.GreeterVersion, Protocol: "dubbo"}, 1},
	}
	for _, tt := range refs {
		cc := newConsumer(t, zkAddr)
		r, err := cc.Reference(ctx, tt.ref)
		if err != nil {
			t.Fatal(err)
		}
		r.WaitAvailable(ctx, 300*time.Millisecond)
		if got := len(r.Providers()); got != tt.want {
			t.Errorf("%s protocol %q: %d providers, want %d", tt.ref.Interface, tt.ref.Protocol, got, tt.want)
		}
		if tt.ref.Protocol != "" && r.ConsumerURL().Param("protocol") != tt.ref.Protocol {
			t.Errorf("consumer URL %s does not name the protocol", r.ConsumerURL())
		}
	}

	direct := consumer.ReferenceConfig{Interface: greetgrpc.Service, URL: "tri://" + s.Addr()}
	r, err := c.Reference(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	r.WaitAvailable(ctx, 3*time.Second)
	res, err := r.Invoke(ctx, greetCall(t, "direct"))
	if err != nil || greetingOf(t, res) != `{"greeting":"Hello, direct"}` {
		t.Fatalf("direct tri:// call: %v %+v", err, res)
	}

	for _, bad := range []consumer.ReferenceConfig{
		{Interface: greetgrpc.Service, Protocol: "grpc"},
		{Interface: greetgrpc.Service, Protocol: "dubbo", URL: "tri://" + s.Addr()},
		{Interface: greetgrpc.Service, URL: "http://" + s.Addr()},
	} {
		if _, err := c.Reference(ctx, bad); err == nil {
			t.Errorf("reference %+v accepted", bad)
		}
	}
}

// An instance that lists a Triple service in its MetadataInfo (keyed with
// the protocol) is called at its tri endpoint.
func TestTripleApplicationLevel(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	s := greetgrpc.Start(t, greetgrpc.Options{})
	zc := zkConn(t, zkAddr)
	admin := registrar(t, zkAddr)
	_, portStr, _ := strings.Cut(s.Addr(), ":")
	rev := "tri-rev-1"
	// dubbo-go's MetadataInfo of a Triple service, and its instance whose
	// dubbo.endpoints lists a dubbo port (nobody there) and the tri one.
	info := fmt.Sprintf(`{"app":"greet-app","revision":%q,"services":{"greet.GreetService:tri":`+
		`{"name":"greet.GreetService","protocol":"tri","port":%s,"path":"greet.GreetService",`+
		`"params":{"application":"greet-app","methods":"Greet,GreetClientStream,GreetServerStream,GreetStream","release":"3.3.0"}}}}`, rev, portStr)
	mkdirs(t, zc, "/dubbo/greet-app")
	if _, err := zc.Create("/dubbo/greet-app/"+rev, []byte(info), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := admin.AddMapping(testCtx(t), greetgrpc.Service, "greet-app"); err != nil {
		t.Fatal(err)
	}
	writeInstanceEndpoints(t, zc, "greet-app", s.Addr(), rev, fmt.Sprintf(`[{"port":1,"protocol":"dubbo"},{"port":%s,"protocol":"tri"}]`, portStr))

	ref := greetRef()
	c := newConsumer(t, zkAddr, ref)
	waitProviders(t, c, ref, 1)
	res, err := c.Invoke(testCtx(t), greetCall(t, "app"))
	if err != nil || greetingOf(t, res) != `{"greeting":"Hello, app"}` || res.Provider != s.Addr() {
		t.Fatalf("call: %v %+v", err, res)
	}
	r, _ := c.Reference(testCtx(t), ref)
	if u := r.Providers()[0].URL(); u.Protocol() != "tri" {
		t.Errorf("provider URL %s", u)
	}
	// A reference limited to dubbo finds none of it.
	dubboOnly := consumer.ReferenceConfig{Interface: greetgrpc.Service, Protocol: "dubbo"}
	r, err = newConsumer(t, zkAddr).Reference(testCtx(t), dubboOnly)
	if err != nil {
		t.Fatal(err)
	}
	if r.WaitAvailable(testCtx(t), 300*time.Millisecond) {
		t.Errorf("a dubbo-only reference found %v", r.Providers())
	}
}

// writeInstanceEndpoints writes the instance node of addr with remote
// metadata and the given dubbo.endpoints.
func writeInstanceEndpoints(t *testing.T, zc *zk.Conn, app, addr, revision, endpoints string) {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	doc := fmt.Sprintf(`{"name":%q,"id":%q,"address":%q,"port":%s,"payload":{"@class":%q,"id":%q,"name":%q,`+
		`"metadata":{%q:%q,%q:%q,%q:%q}},"registrationTimeUTC":0,"tag":""}`,
		app, addr, host, port, metadata.InstancePayloadClass, addr, app,
		metadata.KeyEndpoints, endpoints, metadata.KeyRevision, revision, metadata.KeyStorageType, metadata.StorageRemote)
	mkdirs(t, zc, "/services/"+app)
	if _, err := zc.Create("/services/"+app+"/"+addr, []byte(doc), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}

// Streams go through the consumer to one provider, and count as one call
// each in the statistics.
func TestTripleStreamThroughConsumer(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	s := greetgrpc.Start(t, greetgrpc.Options{})
	if err := registrar(t, zkAddr).Register(testCtx(t), triURL(s.Addr(), map[string]string{"token": "t"})); err != nil {
		t.Fatal(err)
	}
	ref := greetRef()
	c := newConsumer(t, zkAddr, ref)
	ctx := testCtx(t)

	st, err := c.Stream(ctx, &rpc.Invocation{Service: greetgrpc.Service, Method: "GreetServerStream"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(rpc.Message{Bytes: greetgrpc.Encode(t, greetgrpc.StreamRequest, `{"name":"s","count":2}`)}); err != nil {
		t.Fatal(err)
	}
	st.CloseSend()
	var got []string
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, greetgrpc.Decode(t, greetgrpc.Response, m.Bytes))
	}
	if strings.Join(got, " ") != `{"greeting":"Hello, s #1"} {"greeting":"Hello, s #2"}` {
		t.Errorf("server stream through the consumer: %v", got)
	}
	if tok := s.Calls()[0].Metadata.Get("token"); len(tok) != 1 || tok[0] != "t" {
		t.Errorf("stream token header %q", tok)
	}
	var counted, out int64
	for _, smp := range c.Stats().Collect(time.Now()) {
		if smp.Method == "GreetServerStream" && smp.Peer == s.Addr() {
			counted += smp.Success
			out += smp.Output
		}
	}
	if counted != 1 || out == 0 {
		t.Errorf("statistics: %d streams, %d bytes out; want 1 and the responses' size", counted, out)
	}

	// A stream to a service of an on-demand reference; a dubbo-only
	// reference cannot stream.
	startProvider(t, zkAddr, provider.Config{}, nil)
	_, err = c.Stream(ctx, &rpc.Invocation{Service: providertest.GreeterInterface, Version: providertest.GreeterVersion, Method: "sayHello"})
	if !errors.Is(err, rpc.ErrBadRequest) || !strings.Contains(err.Error(), "tri") {
		t.Errorf("stream to a dubbo provider: %v", err)
	}
}

// The descriptor of a service comes from its tri:// providers' reflection
// and stays with the reference; a service with no tri:// provider, or
// none at all, is answered at once.
func TestProtoService(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	s := greetgrpc.Start(t, greetgrpc.Options{})
	reg := registrar(t, zkAddr)
	ctx := testCtx(t)
	if err := reg.Register(ctx, triURL(s.Addr(), nil)); err != nil {
		t.Fatal(err)
	}
	// A Java-interface service served over Triple at the same address:
	// the provider's reflection does not describe it.
	javaOverTri := url.MustParse("tri://" + s.Addr() + "/org.example.Wrapped?interface=org.example.Wrapped&side=provider")
	if err := reg.Register(ctx, javaOverTri); err != nil {
		t.Fatal(err)
	}
	startProvider(t, zkAddr, provider.Config{}, nil) // org.example.Greeter over dubbo://
	c := newConsumer(t, zkAddr)

	svc, err := c.ProtoService(ctx, greetgrpc.Service, "", "")
	if err != nil || svc.FullName() != greetgrpc.Service || svc.Methods().Len() != 4 {
		t.Fatalf("greet.GreetService: %v, %v", svc, err)
	}
	for _, iface := range []string{"org.example.Wrapped", providertest.GreeterInterface, "org.example.Nobody"} {
		start := time.Now()
		version := ""
		if iface == providertest.GreeterInterface {
			version = providertest.GreeterVersion
		}
		_, err := c.ProtoService(ctx, iface, version, "")
		switch {
		case iface == "org.example.Nobody" && errors.Is(err, rpc.ErrNoProvider):
		case iface != "org.example.Nobody" && errors.Is(err, idl.ErrNoDescriptor):
		default:
			t.Errorf("%s: %v", iface, err)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("%s: answered after %v", iface, took)
		}
	}
	// Kept by the reference: no provider needs to be asked again.
	s.Stop()
	if svc, err := c.ProtoService(ctx, greetgrpc.Service, "", ""); err != nil || svc.FullName() != greetgrpc.Service {
		t.Errorf("greet.GreetService again, its provider gone: %v, %v", svc, err)
	}
}
