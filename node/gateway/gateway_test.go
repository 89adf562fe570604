package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	hessian "github.com/apache/dubbo-go-hessian2"

	"github.com/dubbo-lab/dubbo/node/jsoncall"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// fakeInvoker answers like a Greeter provider reached through the consumer
// and remembers the last invocation.
type fakeInvoker struct {
	mu           sync.Mutex
	last         *rpc.Invocation
	lastDeadline bool // the last call's context had a deadline
	// answer overrides the default behaviour when set.
	answer func(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error)
}

func (f *fakeInvoker) Invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	f.mu.Lock()
	f.last = inv
	_, f.lastDeadline = ctx.Deadline()
	f.mu.Unlock()
	if f.answer != nil {
		return f.answer(ctx, inv)
	}
	method, _ := inv.Args[0].(string)
	args := inv.Args[2].([]hessian.Object)
	switch method {
	case "sayHello":
		return &rpc.Result{Value: "Hello, " + args[0].(string)}, nil
	case "add":
		return &rpc.Result{Value: args[0].(int32) + args[1].(int32)}, nil
	case "echoMap":
		return &rpc.Result{Value: args[0]}, nil
	case "fail":
		return &rpc.Result{Exception: &rpc.Exception{Class: "java.lang.RuntimeException", Message: args[0].(string)}}, nil
	case "sleep":
		// As the cluster does: the attempt's timeout attachment, else 1s.
		timeout := time.Second
		if ms, err := strconv.Atoi(inv.Attachment("timeout")); err == nil {
			timeout = time.Duration(ms) * time.Millisecond
		}
		select {
		case <-time.After(time.Duration(args[0].(int32)) * time.Millisecond):
			return &rpc.Result{Value: "slept"}, nil
		case <-time.After(timeout):
			return nil, &rpc.CallError{Kind: rpc.ErrTimeout, Service: inv.Service, Method: method, Detail: "timed out after " + timeout.String()}
		case <-ctx.Done():
			return nil, &rpc.CallError{Kind: rpc.ErrTimeout, Service: inv.Service, Method: method, Detail: ctx.Err().Error()}
		}
	}
	return nil, &rpc.CallError{Kind: rpc.ErrServiceNotFound, Service: inv.Service, Method: method}
}

func (f *fakeInvoker) lastHadDeadline() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastDeadline
}

func (f *fakeInvoker) lastInvocation() *rpc.Invocation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

// fakeTypes knows the Greeter's metadata.
type fakeTypes struct{}

func (fakeTypes) ParamTypes(_ context.Context, iface, _, _, method string, argc int) ([]string, error) {
	if iface != "org.example.Greeter" {
		return nil, &rpc.CallError{Kind: rpc.ErrBadRequest, Service: iface, Method: method, Detail: "no metadata"}
	}
	switch method {
	case "add":
		return []string{"int", "int"}, nil
	case "sayHello", "fail":
		return []string{"java.lang.String"}, nil
	case "echoMap":
		return []string{"java.util.Map"}, nil
	case "sleep":
		return []string{"int"}, nil
	}
	return nil, &rpc.CallError{Kind: rpc.ErrServiceNotFound, Service: iface, Method: method, Detail: "the service definition has no method " + method}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testListen is the address the tests' gateways stand for.
const testListen = "127.0.0.1:8081"

// newServer is New with the test address.
func newServer(opts Options) *Server {
	if opts.Listen == "" {
		opts.Listen = testListen
	}
	return New(opts)
}

// do sends a request as a local client would: to the gateway's address,
// from loopback, with a JSON body.
func do(t *testing.T, h http.Handler, method, target, body string) (int, map[string]any, http.Header) {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.Host, req.RemoteAddr = testListen, "127.0.0.1:40000"
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	return send(t, h, req)
}

func send(t *testing.T, h http.Handler, req *http.Request) (int, map[string]any, http.Header) {
	t.Helper()
	method, target := req.Method, req.URL.String()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s %s: response %q is not JSON: %v", method, target, rec.Body.String(), err)
	}
	return rec.Code, out, rec.Header()
}

func TestInvoke(t *testing.T) {
	tests := []struct {
		name, target, body string
		resolver           jsoncall.TypeResolver
		status             int
		want               string // JSON of the whole response
		types              string // Dubbo-Param-Types header
	}{
		{"sayHello with metadata", "/invoke/org.example.Greeter/sayHello?version=1.0.0", `["world"]`, fakeTypes{},
			200, `{"result":"Hello, world"}`, "java.lang.String"},
		{"add with metadata", "/invoke/org.example.Greeter/add", `[2, 3]`, fakeTypes{},
			200, `{"result":5}`, "int,int"},
		{"add with given types", "/invoke/org.example.Greeter/add?types=int,int", `[2,3]`, nil,
			200, `{"result":5}`, "int,int"},
		{"add inferred", "/invoke/org.example.Greeter/add", `[2,3]`, nil,
			200, `{"result":5}`, "int,int"},
		{"inferred when metadata has no service", "/invoke/org.other.Svc/sayHello", `["x"]`, fakeTypes{},
			200, `{"result":"Hello, x"}`, "java.lang.String"},
		{"echoMap", "/invoke/org.example.Greeter/echoMap", `[{"a":1,"b":[true,null]}]`, fakeTypes{},
			200, `{"result":{"a":1,"b":[true,null]}}`, "java.util.Map"},
		{"generic type list in query", "/invoke/org.example.Greeter/echoMap?types=java.util.Map%3CString,long%3E", `[{"a":1}]`, nil,
			200, `{"result":{"a":1}}`, "java.util.Map<String,long>"},
		{"exception", "/invoke/org.example.Greeter/fail", `["boom"]`, fakeTypes{},
			500, `{"error":{"class":"java.lang.RuntimeException","kind":"exception","message":"boom"}}`, "java.lang.String"},
		{"bad argument", "/invoke/org.example.Greeter/add", `[1, "abc"]`, fakeTypes{},
			400, `{"error":{"kind":"bad_request","message":"argument 2: want int, got \"abc\""}}`, ""},
		{"too few arguments for types", "/invoke/org.example.Greeter/add?types=int,int", `[1]`, nil,
			400, `{"error":{"kind":"bad_request","message":"bad request: 2 argument types (int,int) for 1 arguments"}}`, ""},
		{"method unknown to metadata", "/invoke/org.example.Greeter/nope", `[]`, fakeTypes{},
			404, `{"error":{"kind":"service_not_found","message":"org.example.Greeter.nope: service not found: the service definition has no method nope"}}`, ""},
		{"method unknown to provider", "/invoke/org.example.Greeter/nope", ``, nil,
			404, `{"error":{"kind":"service_not_found","message":"org.example.Greeter.nope: service not found"}}`, ""},
		{"timeout", "/invoke/org.example.Greeter/sleep?timeout=20ms", `[5000]`, fakeTypes{},
			504, `{"error":{"kind":"timeout","message":"org.example.Greeter.sleep: call timed out: timed out after 20ms"}}`, "int"},
		{"timeout in ms", "/invoke/org.example.Greeter/sleep?timeout=20", `[5000]`, fakeTypes{},
			504, `{"error":{"kind":"timeout","message":"org.example.Greeter.sleep: call timed out: timed out after 20ms"}}`, "int"},
		{"timeout longer than the default", "/invoke/org.example.Greeter/sleep?timeout=1500ms", `[1100]`, fakeTypes{},
			200, `{"result":"slept"}`, "int"},
		{"timeout below 1ms", "/invoke/org.example.Greeter/sleep?timeout=10us", `[1]`, nil,
			400, `{"error":{"kind":"bad_request","message":"timeout \"10us\": must be at least 1ms"}}`, ""},
		{"interface not a Java name", "/invoke/com.example.1S/m", `[]`, nil,
			400, `{"error":{"kind":"bad_request","message":"com.example.1S.m: bad request: \"com.example.1S\" is not a Java interface name (dot-separated Java identifiers, e.g. org.example.Greeter)"}}`, ""},
		{"method not a Java name", "/invoke/org.example.Greeter/say-hello", `[]`, nil,
			400, `{"error":{"kind":"bad_request","message":"org.example.Greeter.say-hello: bad request: \"say-hello\" is not a Java method name"}}`, ""},
		{"bad version", "/invoke/org.example.Greeter/sayHello?version=1%2F2", `["x"]`, nil,
			400, `{"error":{"kind":"bad_request","message":"org.example.Greeter.sayHello: bad request: version \"1/2\": only letters, digits and . _ - * , may appear"}}`, ""},
		{"bad timeout", "/invoke/org.example.Greeter/sleep?timeout=soon", `[1]`, nil,
			400, `{"error":{"kind":"bad_request","message":"timeout \"soon\": want a duration such as 500ms or 2s, or milliseconds"}}`, ""},
		{"bad types", "/invoke/org.example.Greeter/add?types=int,,int", `[1,2]`, nil,
			400, `{"error":{"kind":"bad_request","message":"bad request: types \"int,,int\": bad Java type name \"\""}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(Options{Invoker: &fakeInvoker{}, Types: tt.resolver, Logger: quietLogger()})
			status, out, hdr := do(t, s.Handler(), http.MethodPost, tt.target, tt.body)
			got, _ := json.Marshal(out)
			if status != tt.status || string(got) != tt.want {
				t.Fatalf("got %d %s\nwant %d %s", status, got, tt.status, tt.want)
			}
			if h := hdr.Get("Dubbo-Param-Types"); h != tt.types {
				t.Errorf("Dubbo-Param-Types = %q, want %q", h, tt.types)
			}
		})
	}
}

// TestInvokeInvocation checks what reaches the consumer: a generic call
// with the service key from the query and hessian-typed arguments.
func TestInvokeInvocation(t *testing.T) {
	f := &fakeInvoker{answer: func(context.Context, *rpc.Invocation) (*rpc.Result, error) {
		return &rpc.Result{Value: int64(3)}, nil
	}}
	s := newServer(Options{Invoker: f, Logger: quietLogger()})
	status, out, _ := do(t, s.Handler(), http.MethodPost,
		"/invoke/org.example.Greeter/add?version=1.0.0&group=blue&types=int,long", `[1, 2]`)
	if got, _ := json.Marshal(out); status != 200 || string(got) != `{"result":3}` {
		t.Fatalf("got %d %s", status, got)
	}
	inv := f.lastInvocation()
	if inv == nil {
		t.Fatal("no invocation")
	}
	want := &rpc.Invocation{
		Service: "org.example.Greeter", Version: "1.0.0", Group: "blue", Method: "$invoke",
		ParamTypes:  []string{"java.lang.String", "java.lang.String[]", "java.lang.Object[]"},
		Args:        []any{"add", []string{"int", "long"}, []hessian.Object{int32(1), int64(2)}},
		Attachments: map[string]any{"generic": "true"},
	}
	if !reflect.DeepEqual(inv, want) {
		t.Fatalf("invocation %+v\nwant %+v", inv, want)
	}
}

// An X-Dubbo-Tag header becomes the dubbo.tag attachment, which the
// consumer's tag router reads.
func TestInvokeTagHeader(t *testing.T) {
	f := &fakeInvoker{answer: func(context.Context, *rpc.Invocation) (*rpc.Result, error) { return &rpc.Result{}, nil }}
	s := newServer(Options{Invoker: f, Logger: quietLogger()})
	for _, tag := range []string{"gray", ""} {
		req := httptest.NewRequest(http.MethodPost, "/invoke/org.example.Greeter/sayHello?version=1.0.0", strings.NewReader(`["x"]`))
		req.Host, req.RemoteAddr = testListen, "127.0.0.1:40000"
		req.Header.Set("Content-Type", "application/json")
		if tag != "" {
			req.Header.Set("X-Dubbo-Tag", tag)
		}
		if status, _, _ := send(t, s.Handler(), req); status != 200 {
			t.Fatalf("status %d", status)
		}
		inv := f.lastInvocation()
		if got, present := inv.Attachments["dubbo.tag"]; (tag == "" && present) || (tag != "" && got != tag) {
			t.Errorf("header %q: attachments %v", tag, inv.Attachments)
		}
	}
}

func TestInvokeErrorKinds(t *testing.T) {
	tests := []struct {
		err    error
		status int
		kind   string
	}{
		{&rpc.CallError{Kind: rpc.ErrNoProvider, Service: "s", Method: "m"}, 503, "no_provider"},
		{&rpc.CallError{Kind: rpc.ErrPoolExhausted, Service: "s", Method: "m"}, 503, "pool_exhausted"},
		{&rpc.CallError{Kind: rpc.ErrConnection, Service: "s", Method: "m"}, 502, "connection"},
		{&rpc.CallError{Kind: rpc.ErrProvider, Service: "s", Method: "m"}, 502, "provider"},
		{&rpc.CallError{Kind: rpc.ErrBadRequest, Service: "s", Method: "m"}, 400, "bad_request"},
		{&rpc.CallError{Kind: rpc.ErrTimeout, Service: "s", Method: "m"}, 504, "timeout"},
		{fmt.Errorf("wrapped: %w", context.DeadlineExceeded), 504, "timeout"},
		{&rpc.Exception{Class: "java.lang.IllegalStateException", Message: "no"}, 500, "exception"},
		{errors.New("mystery"), 500, "other"},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			f := &fakeInvoker{answer: func(context.Context, *rpc.Invocation) (*rpc.Result, error) { return nil, tt.err }}
			s := newServer(Options{Invoker: f, Logger: quietLogger()})
			status, out, _ := do(t, s.Handler(), http.MethodPost, "/invoke/s/m", `[]`)
			e, _ := out["error"].(map[string]any)
			if status != tt.status || e["kind"] != tt.kind || e["message"] == "" {
				t.Fatalf("got %d %v, want %d kind %s", status, out, tt.status, tt.kind)
			}
		})
	}
}

func TestInvokeBadBody(t *testing.T) {
	tests := []struct{ name, body, msg string }{
		{"not JSON", `["world"`, "request body is not valid JSON"},
		{"garbage", `hello`, "request body is not valid JSON (at byte 1"},
		{"object", `{"name":"world"}`, "request body is a JSON object; send the arguments as a JSON array"},
		{"string", `"world"`, "request body is a JSON string"},
		{"trailing data", `["a"] ["b"]`, "data after the JSON array"},
		{"too large", `["` + strings.Repeat("x", 200) + `"]`, "larger than 100 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeInvoker{}
			s := newServer(Options{Invoker: f, Logger: quietLogger(), MaxBody: 100})
			status, out, _ := do(t, s.Handler(), http.MethodPost, "/invoke/org.example.Greeter/sayHello", tt.body)
			e, _ := out["error"].(map[string]any)
			msg, _ := e["message"].(string)
			if status != 400 || e["kind"] != "bad_request" || !strings.Contains(msg, tt.msg) {
				t.Fatalf("got %d %v, want 400 bad_request containing %q", status, out, tt.msg)
			}
			if f.lastInvocation() != nil {
				t.Fatal("a bad body reached the invoker")
			}
		})
	}
}

func TestRoutes(t *testing.T) {
	s := newServer(Options{Invoker: &fakeInvoker{}, Logger: quietLogger()})
	tests := []struct {
		method, target string
		status         int
		want           string
	}{
		{http.MethodGet, "/healthz", 200, `{"status":"ok"}`},
		{http.MethodGet, "/metrics", 404, `{"error":{"kind":"bad_request","message":"no such endpoint; use POST /invoke/\u003cinterface\u003e/\u003cmethod\u003e with a JSON array of arguments"}}`},
		{http.MethodGet, "/invoke/org.example.Greeter/sayHello", 405, `{"error":{"kind":"bad_request","message":"Method Not Allowed"}}`},
	}
	for _, tt := range tests {
		status, out, _ := do(t, s.Handler(), tt.method, tt.target, "")
		got, _ := json.Marshal(out)
		if status != tt.status || string(got) != tt.want {
			t.Errorf("%s %s = %d %s, want %d %s", tt.method, tt.target, status, got, tt.status, tt.want)
		}
	}
}

// TestServer runs the gateway on a real listener and shuts it down while
// a call is in flight: the call completes, then the server stops.
func TestServer(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	f := &fakeInvoker{answer: func(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
		close(entered)
		<-release
		return &rpc.Result{Value: "done"}, nil
	}}
	s := New(Options{Listen: "127.0.0.1:0", Invoker: f, Logger: quietLogger()})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err == nil {
		t.Fatal("second Start succeeded")
	}
	base := "http://" + s.Addr()

	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("healthz: %d", resp.StatusCode)
	}

	type answer struct {
		body string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := http.Post(base+"/invoke/s/m", "application/json", strings.NewReader(`[]`))
		if err != nil {
			got <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- answer{string(b), err}
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(ctx) }()
	time.Sleep(20 * time.Millisecond) // let Shutdown close the listener first
	close(release)
	if a := <-got; a.err != nil || strings.TrimSpace(a.body) != `{"result":"done"}` {
		t.Fatalf("in-flight call: %q, %v", a.body, a.err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Fatal("server still answers after Shutdown")
	}
}
