package mock

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

var quiet = slog.New(slog.DiscardHandler)

// next answers as told and counts the calls that reach it.
type next struct {
	calls atomic.Int32
	res   *rpc.Result
	err   error
}

func (n *next) Invoke(context.Context, *rpc.Invocation) (*rpc.Result, error) {
	n.calls.Add(1)
	return n.res, n.err
}

type types map[string]string // method -> return type

func (ts types) ReturnType(_ context.Context, method string, _ []string) (string, func(string) map[string]string) {
	return ts[method], nil
}

// The behaviours of Java's MockClusterInvokerTest: which setting applies
// to which method, when the call is made, what answers.
func TestInvoker(t *testing.T) {
	down := &rpc.CallError{Kind: rpc.ErrNoProvider, Service: "org.example.Greeter", Method: "sayHello"}
	timeout := &rpc.CallError{Kind: rpc.ErrTimeout, Service: "org.example.Greeter", Method: "sayHello"}
	business := &rpc.Result{Exception: &rpc.Exception{Class: "java.lang.IllegalStateException", Message: "no"}}
	ok := &rpc.Result{Value: "Hello, bob", Provider: "10.0.0.1:20880"}
	tests := []struct {
		name     string
		params   string // of the consumer URL
		method   string
		res      *rpc.Result
		err      error
		calls    int32
		want     any    // the value answered
		provider string // who answered
		wantErr  error  // category of the error
		exClass  string // class of the business exception answered
	}{
		{"no mock", "", "sayHello", ok, nil, 1, "Hello, bob", "10.0.0.1:20880", nil, ""},
		{"mock=false", "mock=false", "sayHello", ok, nil, 1, "Hello, bob", "10.0.0.1:20880", nil, ""},
		{"fail mock, call succeeds", "mock=fail:return%20x", "sayHello", ok, nil, 1, "Hello, bob", "10.0.0.1:20880", nil, ""},
		{"fail mock, no provider", "mock=fail:return%20x", "sayHello", nil, down, 1, "x", Provider, nil, ""},
		{"fail mock, timeout", "sayHello.mock=return%20x", "sayHello", nil, timeout, 1, "x", Provider, nil, ""},
		{"fail mock, business exception stays", "mock=fail:return%20x", "sayHello", business, nil, 1, nil, "", nil, "java.lang.IllegalStateException"},
		{"fail mock, business exception as error stays", "mock=fail:return%20x", "sayHello", nil, &rpc.Exception{Class: "E"}, 1, nil, "", nil, ""},
		{"force mock makes no call", "mock=force:return%20y", "sayHello", ok, nil, 0, "y", Provider, nil, ""},
		{"method setting wins", "mock=force:return%205&sayHello.mock=fail:return%20x", "sayHello", ok, nil, 1, "Hello, bob", "10.0.0.1:20880", nil, ""},
		{"other methods take the reference's", "mock=force:return%205&sayHello.mock=fail:return%20x", "add", ok, nil, 0, int32(5), Provider, nil, ""},
		{"typed by the return type", "add.mock=force:return%201688", "add", ok, nil, 0, int32(1688), Provider, nil, ""},
		{"force throw", "mock=force:throw", "sayHello", ok, nil, 0, nil, "", rpc.ErrProvider, ""},
		{"force throw a class", "mock=force:throw%20org.example.MyMockException", "sayHello", ok, nil, 0, nil, Provider, nil, "org.example.MyMockException"},
		{"fail throw after failure", "mock=fail:throw", "sayHello", nil, down, 1, nil, "", rpc.ErrProvider, ""},
		{"a bad value", "add.mock=force:return%20x", "add", ok, nil, 0, nil, "", rpc.ErrBadRequest, ""},
		{"force with a class fails every call", "mock=force:org.example.GreeterMock", "sayHello", ok, nil, 0, nil, "", rpc.ErrBadRequest, ""},
		{"fail with a class lets calls through", "mock=true", "sayHello", ok, nil, 1, "Hello, bob", "10.0.0.1:20880", nil, ""},
		{"fail with a class keeps the failure", "mock=true", "sayHello", nil, down, 1, nil, "", rpc.ErrNoProvider, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &next{res: tt.res, err: tt.err}
			u := url.MustParse("consumer://1.1.1.1/org.example.Greeter?" + tt.params)
			m := NewInvoker(n, func() *url.URL { return u }, types{"sayHello": "java.lang.String", "add": "int"}, quiet)
			res, err := m.Invoke(context.Background(), &rpc.Invocation{Service: "org.example.Greeter", Method: tt.method})
			if n.calls.Load() != tt.calls {
				t.Errorf("%d calls made, want %d", n.calls.Load(), tt.calls)
			}
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
				return
			case tt.err != nil && tt.want == nil && tt.exClass == "":
				if err == nil {
					t.Fatal("the business exception was replaced")
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if tt.exClass != "" {
				if res.Exception == nil || res.Exception.Class != tt.exClass {
					t.Fatalf("result %+v, want exception %s", res, tt.exClass)
				}
				return
			}
			if !reflect.DeepEqual(res.Value, tt.want) || res.Provider != tt.provider {
				t.Errorf("answered %#v by %q, want %#v by %q", res.Value, res.Provider, tt.want, tt.provider)
			}
		})
	}
}

// A generic call ($invoke) takes the setting and the return type of the
// method it invokes.
func TestInvokerGeneric(t *testing.T) {
	n := &next{err: &rpc.CallError{Kind: rpc.ErrConnection}}
	u := url.MustParse("consumer://1.1.1.1/org.example.Greeter?add.mock=return%207")
	m := NewInvoker(n, func() *url.URL { return u }, types{"add": "int"}, quiet)
	inv := &rpc.Invocation{Service: "org.example.Greeter", Method: protocol.MethodInvoke,
		Args: []any{"add", []string{"int", "int"}, []any{int32(1), int32(2)}}}
	res, err := m.Invoke(context.Background(), inv)
	if err != nil || res.Value != int32(7) {
		t.Fatalf("generic add: %#v, %v; want int 7", res, err)
	}
}

// A call the caller cancelled is not answered by a fail mock.
func TestInvokerCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := &next{err: context.Canceled}
	u := url.MustParse("consumer://1.1.1.1/org.example.Greeter?mock=return%20x")
	m := NewInvoker(n, func() *url.URL { return u }, nil, quiet)
	if _, err := m.Invoke(ctx, &rpc.Invocation{Method: "sayHello"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want the cancellation", err)
	}
}

// A setting that cannot be applied is parsed, and logged, once.
func TestUnsupportedParsedOnce(t *testing.T) {
	n := &next{res: &rpc.Result{}}
	u := url.MustParse("consumer://1.1.1.1/org.example.Greeter?mock=true")
	m := NewInvoker(n, func() *url.URL { return u }, nil, quiet)
	for range 3 {
		if _, err := m.Invoke(context.Background(), &rpc.Invocation{Method: "sayHello"}); err != nil {
			t.Fatal(err)
		}
	}
	if len(m.parsed) != 1 {
		t.Errorf("%d settings parsed, want 1", len(m.parsed))
	}
}

// A reference without a mock setting pays next to nothing for the mock.
func BenchmarkInvokerWithoutMock(b *testing.B) {
	n := &next{res: &rpc.Result{Value: "x"}}
	u := url.MustParse("consumer://1.1.1.1/org.example.Greeter?application=shop&timeout=1000&sayHello.retries=0")
	m := NewInvoker(n, func() *url.URL { return u }, nil, quiet)
	inv := &rpc.Invocation{Service: "org.example.Greeter", Method: "sayHello"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		m.Invoke(ctx, inv)
	}
}

// A protobuf method's mock answer is its default response message.
func TestInvokerProtobuf(t *testing.T) {
	n := &next{}
	inv := &rpc.Invocation{Service: "greet.GreetService", Method: "Greet", Args: []any{rpc.Message{Bytes: []byte{10, 1, 'x'}}}}
	for setting, want := range map[string]error{"force:return%20empty": nil, "force:return%20null": nil, "force:return%20hi": rpc.ErrBadRequest} {
		u := url.MustParse("consumer://1.1.1.1/greet.GreetService?mock=" + setting)
		res, err := NewInvoker(n, func() *url.URL { return u }, nil, quiet).Invoke(context.Background(), inv)
		switch {
		case want != nil && !errors.Is(err, want):
			t.Errorf("%s: %v, want %v", setting, err, want)
		case want == nil && (err != nil || !reflect.DeepEqual(res.Value, rpc.Message{})):
			t.Errorf("%s: %+v, %v; want the empty message", setting, res, err)
		}
	}
}
