package provider_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/dubbo-lab/dubbo/examples/greet/greetpb"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/provider/settings"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats"
	"github.com/dubbo-lab/dubbo/node/triple/wrapper"
)

// greeterTri is a call of org.example.Greeter 1.0.0 as our Triple client
// makes it in wrapper mode.
func greeterTri(method string, types []string, args ...any) *rpc.Invocation {
	return &rpc.Invocation{Service: providertest.GreeterInterface, Version: providertest.GreeterVersion,
		Method: method, ParamTypes: types, Args: args}
}

var (
	str  = []string{"java.lang.String"}
	ints = []string{"int", "int"}
)

// The greeter plugin's Java interface over Triple in wrapper mode, as
// dubbo-go's non-IDL client (and ours) calls it: application/grpc+hessian2,
// hessian2 values; fail's exception reaches the client as a business
// exception, in a status within gRPC's 0-16.
func TestTripleWrapperMode(t *testing.T) {
	p := startTriple(t, provider.Config{}, provider.Options{})
	exportPlugin(t, p, startPlugin(t, "greeter"))
	c := tripleClient(t, p.Addr())
	ctx := testCtx(t)

	for _, tc := range []struct {
		inv  *rpc.Invocation
		want any
	}{
		{greeterTri("sayHello", str, "world"), "Hello, world"},
		{greeterTri("add", ints, int32(2), int32(3)), int32(5)},
		{greeterTri("echoMap", []string{"java.util.Map"}, map[string]any{"k": "v"}), map[any]any{"k": "v"}},
		{greeterTri("sleep", []string{"int"}, int32(10)), "slept"},
		{greeterTri("$echo", []string{"java.lang.Object"}, "ping"), "ping"},
		{greeterTri("$invoke", []string{"java.lang.String", "java.lang.String[]", "java.lang.Object[]"},
			"sayHello", []string{"java.lang.String"}, []any{"generic"}), "Hello, generic"},
	} {
		res, err := c.Invoke(ctx, tc.inv)
		if err != nil || res.Exception != nil || !reflect.DeepEqual(res.Value, tc.want) {
			t.Errorf("%s: %#v (exception %v), %v; want %#v", tc.inv.Method, res, res.Exception, err, tc.want)
		}
	}
	res, err := c.Invoke(ctx, greeterTri("fail", str, "boom"))
	if err != nil || res.Exception == nil || res.Exception.Message != "boom" {
		t.Errorf("fail(boom): %+v, %v; want a business exception with message boom", res, err)
	}

	// A plain gRPC client sees the same exception as status Unknown with
	// Java's tri-exception-code.
	cc := grpcConn(t, p.Addr())
	var trailer metadata.MD
	err = cc.Invoke(ctx, "/org.example.Greeter/fail", wrapArgs(t, wrapper.Hessian2, "boom"), new([]byte),
		grpc.ForceCodec(rawCodec{"hessian2"}), grpc.Trailer(&trailer))
	if status.Code(err) != codes.Unknown || status.Convert(err).Message() != "boom" || strings.Join(trailer.Get("tri-exception-code"), "") != "3" {
		t.Errorf("fail(boom) to grpc-go: %v, trailer %v", err, trailer)
	}

	// dubbo-go's client (its User-Agent) gets dubbo-go's business error,
	// 17, which its failover does not retry.
	dg := grpcConn(t, p.Addr(), grpc.WithUserAgent("grpc-go-triple/3.3.0 (go1.26)"))
	err = dg.Invoke(ctx, "/org.example.Greeter/fail", wrapArgs(t, wrapper.Hessian2, "boom"), new([]byte),
		grpc.ForceCodec(rawCodec{"hessian2"}))
	if status.Code(err) != codes.Code(17) || status.Convert(err).Message() != "boom" {
		t.Errorf("fail(boom) to dubbo-go's client: %v, want code 17 and boom", err)
	}
}

// wrapArgs is a TripleRequestWrapper of string arguments.
func wrapArgs(t testing.TB, serialize string, args ...string) []byte {
	t.Helper()
	w := wrapper.Request{SerializeType: serialize}
	for _, a := range args {
		b, err := wrapper.EncodeValue(a)
		if err != nil {
			t.Fatal(err)
		}
		w.Args = append(w.Args, b)
		w.ArgTypes = append(w.ArgTypes, "java.lang.String")
	}
	return w.Append(nil)
}

// Java's documented form: application/grpc+proto with hessian4. The
// answer is in hessian4 too, and an exception comes as Java 3.2+ sends
// one: status OK, tri-exception-code in the response header, the
// serialized exception in the wrapper, typed with its class.
func TestTripleWrapperJavaForm(t *testing.T) {
	p := startTriple(t, provider.Config{}, provider.Options{})
	exportPlugin(t, p, startPlugin(t, "greeter"))
	cc := grpcConn(t, p.Addr())
	ctx := metadata.AppendToOutgoingContext(testCtx(t), "tri-service-version", "1.0.0")

	call := func(method, arg string) (*wrapper.Response, any, metadata.MD) {
		t.Helper()
		var resp []byte
		var header metadata.MD
		if err := cc.Invoke(ctx, "/org.example.Greeter/"+method, wrapArgs(t, wrapper.Hessian4, arg), &resp,
			grpc.ForceCodec(rawCodec{"proto"}), grpc.Header(&header)); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		w, err := wrapper.ParseResponse(resp)
		if err != nil {
			t.Fatal(err)
		}
		v, err := wrapper.DecodeValue(w.Data)
		if err != nil {
			t.Fatal(err)
		}
		return w, v, header
	}
	w, v, header := call("sayHello", "world")
	if v != "Hello, world" || w.SerializeType != wrapper.Hessian4 || w.Type != "java.lang.String" || len(header.Get("tri-exception-code")) != 0 {
		t.Errorf("sayHello: %v as %+v, header %v", v, w, header)
	}
	w, v, header = call("fail", "boom")
	ex := protocol.ExceptionOf(v, w.Type)
	if strings.Join(header.Get("tri-exception-code"), "") != "3" || ex.Class != "java.lang.RuntimeException" || ex.Message != "boom" {
		t.Errorf("fail: %v (%+v), header %v; want tri-exception-code 3 and RuntimeException(boom)", ex, w, header)
	}
}

// Several versions of one service on the port: Dubbo clients pick with
// tri-service-version and tri-service-group; a plain gRPC client, which
// sends neither, is told which there are and how to choose. A lone
// version is served to it.
func TestTripleVersionsAndGroups(t *testing.T) {
	p := startTriple(t, provider.Config{}, provider.Options{})
	var served sync.Map // version -> calls
	for _, v := range []string{"1.0.0", "2.0.0"} {
		svc := providertest.Greeter(func(inv *rpc.Invocation) {
			n, _ := served.LoadOrStore(v, new(atomic.Int32))
			n.(*atomic.Int32).Add(1)
		})
		svc.Version = v
		if err := p.Export(testCtx(t), svc); err != nil {
			t.Fatal(err)
		}
	}
	calls := func(v string) int32 {
		n, ok := served.Load(v)
		if !ok {
			return 0
		}
		return n.(*atomic.Int32).Load()
	}
	ctx := testCtx(t)
	cc := grpcConn(t, p.Addr())
	hello := func(ctx context.Context) error {
		return cc.Invoke(ctx, "/org.example.Greeter/sayHello", wrapArgs(t, wrapper.Hessian2, "x"), new([]byte), grpc.ForceCodec(rawCodec{"hessian2"}))
	}
	err := hello(ctx)
	if msg := status.Convert(err).Message(); status.Code(err) != codes.InvalidArgument || !strings.Contains(msg, `version "1.0.0"`) ||
		!strings.Contains(msg, `version "2.0.0"`) || !strings.Contains(msg, "tri-service-version") {
		t.Errorf("no version header: %v; want InvalidArgument naming both versions and the header", err)
	}
	if err := hello(metadata.AppendToOutgoingContext(ctx, "tri-service-version", "2.0.0")); err != nil || calls("2.0.0") != 1 || calls("1.0.0") != 0 {
		t.Errorf("version 2.0.0: %v; calls 1.0.0 %d, 2.0.0 %d", err, calls("1.0.0"), calls("2.0.0"))
	}
	err = hello(metadata.AppendToOutgoingContext(ctx, "tri-service-version", "3.0.0"))
	if status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), "org.example.Greeter:3.0.0") {
		t.Errorf("version 3.0.0: %v, want Unimplemented", err)
	}
	// Our client sends the reference's version.
	if _, err := tripleClient(t, p.Addr()).Invoke(ctx, greeterTri("sayHello", str, "x")); err != nil || calls("1.0.0") != 1 {
		t.Errorf("our client, version 1.0.0: %v; calls %d", err, calls("1.0.0"))
	}
	if err := p.Unexport(ctx, providertest.GreeterInterface, "2.0.0", ""); err != nil {
		t.Fatal(err)
	}
	if err := hello(ctx); err != nil || calls("1.0.0") != 2 {
		t.Errorf("a lone version, no header: %v; calls %d", err, calls("1.0.0"))
	}
}

// What dubbo:// enforces, Triple enforces the same way: the token, a
// method's executes, the business pool, the caller's deadline (which
// reaches the plugin); and the calls are counted per service, method and
// consumer IP.
func TestTripleProviderRules(t *testing.T) {
	ctx := testCtx(t)
	greeter := startPlugin(t, "greeter")

	t.Run("token", func(t *testing.T) {
		p := startTriple(t, provider.Config{Token: "secret"}, provider.Options{})
		exportPlugin(t, p, greeter)
		c := tripleClient(t, p.Addr())
		_, err := c.Invoke(ctx, greeterTri("sayHello", str, "x"))
		if !errors.Is(err, rpc.ErrBadRequest) || !strings.Contains(err.Error(), "Invalid token") {
			t.Errorf("without the token: %v", err)
		}
		inv := greeterTri("sayHello", str, "x")
		inv.SetAttachment("token", "secret")
		if res, err := c.Invoke(ctx, inv); err != nil || res.Value != "Hello, x" {
			t.Errorf("with the token: %v, %v", res, err)
		}
	})

	t.Run("executes", func(t *testing.T) {
		p := startTriple(t, provider.Config{Services: []provider.ServiceConfig{{Interface: providertest.GreeterInterface,
			Settings: settings.Settings{Executes: 1}}}}, provider.Options{})
		exportPlugin(t, p, greeter)
		c := tripleClient(t, p.Addr())
		errs := concurrently(4, func() error { _, err := c.Invoke(ctx, greeterTri("sleep", []string{"int"}, int32(300))); return err })
		refused := 0
		for _, err := range errs {
			switch {
			case err == nil:
			case errors.Is(err, rpc.ErrPoolExhausted) && strings.Contains(err.Error(), `executes="1"`):
				refused++
			default:
				t.Errorf("sleep: %v", err)
			}
		}
		if refused != 3 {
			t.Errorf("%d of 4 calls refused, want 3 (executes = 1): %v", refused, errs)
		}
	})

	t.Run("pool", func(t *testing.T) {
		p := startTriple(t, provider.Config{Protocol: provider.ProtocolConfig{Threads: 1}}, provider.Options{})
		exportPlugin(t, p, greeter)
		c := tripleClient(t, p.Addr())
		errs := concurrently(3, func() error { _, err := c.Invoke(ctx, greeterTri("sleep", []string{"int"}, int32(300))); return err })
		refused := 0
		for _, err := range errs {
			if errors.Is(err, rpc.ErrPoolExhausted) && strings.Contains(err.Error(), "thread pool is exhausted") {
				refused++
			} else if err != nil {
				t.Errorf("sleep: %v", err)
			}
		}
		if refused != 2 {
			t.Errorf("%d of 3 calls refused, want 2 (threads = 1): %v", refused, errs)
		}
	})

	t.Run("deadline", func(t *testing.T) {
		p := startTriple(t, provider.Config{}, provider.Options{})
		exportPlugin(t, p, greeter)
		c := tripleClient(t, p.Addr())
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.Invoke(cctx, greeterTri("sleep", []string{"int"}, int32(5000)))
		if !errors.Is(err, rpc.ErrTimeout) || time.Since(start) > 2*time.Second {
			t.Errorf("sleep(5000) within 200ms: %v after %v", err, time.Since(start))
		}
		// The plugin's call ended with the deadline: counted as a timeout.
		var samples []stats.Sample
		waitFor(t, "the timeout counted", func() (bool, string) {
			samples = append(samples, p.Stats().Collect(time.Now())...)
			for _, s := range samples {
				if s.Method == "sleep" && s.Failure > 0 {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%+v", samples)
		})
	})

	t.Run("statistics", func(t *testing.T) {
		p := startTriple(t, provider.Config{}, provider.Options{})
		exportPlugin(t, p, startPlugin(t, "greet"))
		exportPlugin(t, p, greeter)
		cc := grpcConn(t, p.Addr())
		for range 3 {
			if err := cc.Invoke(ctx, "/greet.GreetService/Greet", &greetpb.GreetRequest{Name: "x"}, new(greetpb.GreetResponse)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tripleClient(t, p.Addr()).Invoke(ctx, greeterTri("fail", str, "boom")); err != nil {
			t.Fatal(err)
		}
		got := map[string][2]int64{}
		var samples []stats.Sample
		waitFor(t, "the calls counted", func() (bool, string) {
			samples = append(samples, p.Stats().Collect(time.Now())...)
			got = map[string][2]int64{}
			for _, s := range samples {
				if s.Peer != "127.0.0.1" || s.Side != stats.Provider || s.Port != p.Port() {
					t.Errorf("sample identity %+v", s)
				}
				g := got[s.Interface+"."+s.Method]
				got[s.Interface+"."+s.Method] = [2]int64{g[0] + s.Success, g[1] + s.Failure}
			}
			return got["greet.GreetService.Greet"] == [2]int64{3, 0} && got["org.example.Greeter.fail"] == [2]int64{0, 1}, fmt.Sprint(got)
		})
	})
}

// concurrently runs f n times at once and returns the errors.
func concurrently(n int, f func() error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f()
		}()
		time.Sleep(20 * time.Millisecond) // in order, so the first holds what the others want
	}
	wg.Wait()
	return errs
}

// Attachments travel as metadata both ways in wrapper mode: the client's
// reach the service's invocation, the service's result attachments come
// back in the trailer.
func TestTripleWrapperAttachments(t *testing.T) {
	p := startTriple(t, provider.Config{}, provider.Options{})
	var got sync.Map
	svc := providertest.Greeter(nil)
	svc.Invoker = rpc.InvokerFunc(func(_ context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
		for k, v := range inv.Attachments {
			got.Store(k, v)
		}
		return &rpc.Result{Value: "ok", Attachments: map[string]any{"served-by": "tri-test"}}, nil
	})
	if err := p.Export(testCtx(t), svc); err != nil {
		t.Fatal(err)
	}
	inv := greeterTri("sayHello", str, "x")
	inv.SetAttachment("trace-id", "abc")
	res, err := tripleClient(t, p.Addr()).Invoke(testCtx(t), inv)
	if err != nil || res.Value != "ok" || res.Attachments["served-by"] != "tri-test" {
		t.Errorf("sayHello: %+v, %v; want the service's attachment back", res, err)
	}
	for k, want := range map[string]string{"trace-id": "abc", "interface": providertest.GreeterInterface, "version": providertest.GreeterVersion} {
		if v, _ := got.Load(k); v != want {
			t.Errorf("the service got attachment %s = %v, want %q", k, v, want)
		}
	}
}

// A Java-interface service over HTTP/1.1 with JSON, as Java Dubbo 3.3's
// documentation calls one with curl: POST /<interface>/<method>/ and a JSON
// array of the arguments (a method of one parameter takes it alone too);
// the answer is the return value as JSON, a mistake 400 with the reason,
// a business exception 500 with its message.
func TestTripleWrapperHTTP1JSON(t *testing.T) {
	p := startTriple(t, provider.Config{}, provider.Options{})
	exportPlugin(t, p, startPlugin(t, "greeter"))
	for _, tc := range []struct {
		path, body string
		status     int
		want       string
	}{
		{"sayHello", `["world"]`, 200, `"Hello, world"`},
		{"sayHello/", `["world"]`, 200, `"Hello, world"`}, // the documentation's form
		{"sayHello", `"alone"`, 200, `"Hello, alone"`},
		{"add", `[2, 3]`, 200, `5`},
		{"echoMap", `[{"k": "v"}]`, 200, `{"k":"v"}`},
		{"echoMap", `{"k": "v"}`, 200, `{"k":"v"}`},
		{"add", `[1]`, 400, `takes (int, int), not 1 arguments`},
		{"add", `["two", 3]`, 400, `"code":"invalid_argument"`},
		{"sayHello", `["unclosed`, 400, `the body is not JSON`},
		{"fail", `["boom"]`, 500, `"message":"boom"`},
		{"nope", `[]`, 404, `cannot find method [nope]`},
		{"$echo", `["ping"]`, 400, `$echo is not served as JSON over HTTP/1.1`},
	} {
		resp, err := http.Post("http://"+p.Addr()+"/org.example.Greeter/"+tc.path, "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.want) {
			t.Errorf("POST %s %s: %d %s; want %d with %s", tc.path, tc.body, resp.StatusCode, body, tc.status, tc.want)
		}
	}
}
