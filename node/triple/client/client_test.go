package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/greetgrpc"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/triple/client"
)

// connect makes a client of addr and waits until it is available.
func connect(t *testing.T, addr string, cfg client.Config) *client.Client {
	t.Helper()
	c := client.New(addr, cfg)
	t.Cleanup(func() { c.Close() })
	waitFor(t, "client available", c.Available)
	return c
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func greet(t *testing.T, name string) *rpc.Invocation {
	return &rpc.Invocation{Service: greetgrpc.Service, Method: "Greet",
		Args: []any{rpc.Message{Type: greetgrpc.Request, Bytes: greetgrpc.Encode(t, greetgrpc.Request, fmt.Sprintf(`{"name":%q}`, name))}}}
}

func greeting(t *testing.T, res *rpc.Result) string {
	t.Helper()
	m, ok := res.Value.(rpc.Message)
	if !ok {
		t.Fatalf("result value %T, want rpc.Message", res.Value)
	}
	return greetgrpc.Decode(t, greetgrpc.Response, m.Bytes)
}

func TestUnaryAgainstGRPCGo(t *testing.T) {
	srv := greetgrpc.Start(t, greetgrpc.Options{})
	c := connect(t, srv.Addr(), client.Config{})
	res, err := c.Invoke(context.Background(), greet(t, "x"))
	if err != nil {
		t.Fatal(err)
	}
	if got := greeting(t, res); got != `{"greeting":"Hello, x"}` {
		t.Errorf("Greet answered %s", got)
	}
	if res.Exception != nil {
		t.Errorf("exception %v", res.Exception)
	}
	// The provider's response metadata are the result's attachments.
	if got := res.Attachments["greet-server"]; got != srv.Addr() {
		t.Errorf("attachment greet-server = %v, want %s", got, srv.Addr())
	}
	if res.RequestBytes <= 5 || res.ResponseBytes <= 5 {
		t.Errorf("sizes %d, %d: want the framed message sizes", res.RequestBytes, res.ResponseBytes)
	}
	calls := srv.Calls()
	if len(calls) != 1 || calls[0].Metadata.Get("content-type")[0] != "application/grpc+proto" {
		t.Errorf("the server saw %+v", calls)
	}
}

// What travels as headers: version and group as Triple's, the deadline as
// grpc-timeout, attachments under lower-case names, the timeout attachment
// not (the deadline says it), and nothing HTTP/2 cannot carry.
func TestHeaders(t *testing.T) {
	srv := greetgrpc.Start(t, greetgrpc.Options{})
	c := connect(t, srv.Addr(), client.Config{})
	inv := greet(t, "x")
	inv.Version, inv.Group = "1.0.0", "g1"
	inv.Attachments = map[string]any{
		"token":              "secret",
		"dubbo.tag":          "gray",
		"Upper.Case":         "v",
		"remote.application": "cons-app",
		"timeout":            "1000",
		"count":              int32(3),
		"trace-bin":          []byte{0, 1, 2},
		"bad key":            "dropped",
		"bad-value":          "line\nbreak",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Invoke(ctx, inv); err != nil {
		t.Fatal(err)
	}
	call := srv.Calls()[0]
	want := map[string]string{
		"tri-service-version":  "1.0.0",
		"tri-service-group":    "g1",
		"token":                "secret",
		"dubbo.tag":            "gray",
		"upper.case":           "v",
		"remote.application":   "cons-app",
		"tri-consumer-appname": "cons-app",
		"count":                "3",
		"trace-bin":            "\x00\x01\x02",
	}
	for k, v := range want {
		if got := call.Metadata.Get(k); len(got) != 1 || got[0] != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	for _, k := range []string{"timeout", "bad key", "bad-value"} {
		if got := call.Metadata.Get(k); len(got) > 0 {
			t.Errorf("header %s sent: %q", k, got)
		}
	}
	if left := time.Until(call.Deadline); call.Deadline.IsZero() || left > 5*time.Second || left < 3*time.Second {
		t.Errorf("server deadline in %v, want about 5s (grpc-timeout from the context)", left)
	}
}

// Status codes map to the rpc categories; dubbo-go's 17 is a business
// exception in the result.
func TestStatusCodes(t *testing.T) {
	srv := greetgrpc.Start(t, greetgrpc.Options{})
	c := connect(t, srv.Addr(), client.Config{})
	tests := []struct {
		code int
		kind string
	}{
		{14, rpc.KindConnection},      // Unavailable
		{4, rpc.KindTimeout},          // DeadlineExceeded
		{8, rpc.KindPoolExhausted},    // ResourceExhausted
		{12, rpc.KindServiceNotFound}, // Unimplemented
		{5, rpc.KindServiceNotFound},  // NotFound
		{3, rpc.KindBadRequest},       // InvalidArgument
		{7, rpc.KindBadRequest},       // PermissionDenied
		{16, rpc.KindBadRequest},      // Unauthenticated
		{2, rpc.KindProvider},         // Unknown
		{13, rpc.KindProvider},        // Internal
		{10, rpc.KindProvider},        // Aborted
	}
	for _, tt := range tests {
		res, err := c.Invoke(context.Background(), greet(t, fmt.Sprintf("fail:%d:boom %d", tt.code, tt.code)))
		if got := rpc.ErrorKind(err); got != tt.kind {
			t.Errorf("status %d: kind %q (%v, %+v), want %s", tt.code, got, err, res, tt.kind)
			continue
		}
		var ce *rpc.CallError
		if !errors.As(err, &ce) || ce.Address != srv.Addr() || ce.Service != greetgrpc.Service || ce.Method != "Greet" ||
			!strings.Contains(ce.Detail, fmt.Sprintf("boom %d", tt.code)) {
			t.Errorf("status %d: error %#v does not name the call and the message", tt.code, err)
		}
	}

	res, err := c.Invoke(context.Background(), greet(t, "fail:17:the business failed"))
	if err != nil {
		t.Fatalf("status 17: %v, want a result with the exception", err)
	}
	if res.Exception == nil || res.Exception.Message != "the business failed" || rpc.ErrorKind(res.Exception) != rpc.KindException {
		t.Errorf("status 17: exception %+v", res.Exception)
	}

	// A method the server does not have.
	inv := greet(t, "x")
	inv.Method = "Nope"
	if _, err := c.Invoke(context.Background(), inv); !errors.Is(err, rpc.ErrServiceNotFound) {
		t.Errorf("unknown method: %v, want service not found", err)
	}
}

func TestDeadlineAndCancel(t *testing.T) {
	srv := greetgrpc.Start(t, greetgrpc.Options{})
	c := connect(t, srv.Addr(), client.Config{Timeout: 200 * time.Millisecond})

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err := c.Invoke(ctx, greet(t, "sleep:5s"))
	cancel()
	if !errors.Is(err, rpc.ErrTimeout) || time.Since(start) > 2*time.Second {
		t.Errorf("deadline: %v after %v, want a timeout after 100ms", err, time.Since(start))
	}

	// No deadline: Config.Timeout.
	start = time.Now()
	_, err = c.Invoke(context.Background(), greet(t, "sleep:5s"))
	if !errors.Is(err, rpc.ErrTimeout) || time.Since(start) > 2*time.Second {
		t.Errorf("Config.Timeout: %v after %v, want a timeout after 200ms", err, time.Since(start))
	}

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = c.Invoke(ctx, greet(t, "sleep:5s"))
	if !errors.Is(err, context.Canceled) || rpc.Category(err) != nil {
		t.Errorf("canceled: %v, want context.Canceled and no category", err)
	}
}

// Available follows the connection: false with no server, true once one
// listens, false again when it goes, true when it is back.
func TestAvailableAndReconnect(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	c := client.New(addr, client.Config{ReconnectMax: 200 * time.Millisecond})
	defer c.Close()
	time.Sleep(100 * time.Millisecond)
	if c.Available() {
		t.Fatal("available with nothing listening")
	}
	start := time.Now()
	_, err = c.Invoke(context.Background(), greet(t, "x"))
	if !errors.Is(err, rpc.ErrConnection) || time.Since(start) > 100*time.Millisecond {
		t.Errorf("call while down: %v after %v, want a connection error at once", err, time.Since(start))
	}

	srv := greetgrpc.Start(t, greetgrpc.Options{Addr: addr})
	waitFor(t, "available once the server listens", c.Available)
	srv.Stop()
	waitFor(t, "not available once the server is gone", func() bool { return !c.Available() })

	greetgrpc.Start(t, greetgrpc.Options{Addr: addr})
	waitFor(t, "available again after a restart", c.Available)
	if _, err := c.Invoke(context.Background(), greet(t, "again")); err != nil {
		t.Errorf("call after the restart: %v", err)
	}
}

func TestConnectionsAndPayload(t *testing.T) {
	srv := greetgrpc.Start(t, greetgrpc.Options{})
	c := connect(t, srv.Addr(), client.Config{Connections: 3, Payload: 1024})
	// The connections come up in the background; round robin over the ones
	// up spreads the calls over all three once they are.
	peers := func() int {
		seen := map[string]bool{}
		for _, call := range srv.Calls() {
			seen[call.Peer] = true
		}
		return len(seen)
	}
	waitFor(t, "calls over three connections", func() bool {
		_, err := c.Invoke(context.Background(), greet(t, "x"))
		return err == nil && peers() == 3
	})
	for range 6 {
		if _, err := c.Invoke(context.Background(), greet(t, "x")); err != nil {
			t.Fatal(err)
		}
	}
	if n := peers(); n != 3 {
		t.Errorf("calls came over %d connections, want 3", n)
	}

	// Past Payload: a bad request, not an exhausted pool.
	_, err := c.Invoke(context.Background(), greet(t, strings.Repeat("x", 2000)))
	if !errors.Is(err, rpc.ErrBadRequest) {
		t.Errorf("a request over the payload: %v, want bad request", err)
	}
}

func TestStreams(t *testing.T) {
	srv := greetgrpc.Start(t, greetgrpc.Options{})
	c := connect(t, srv.Addr(), client.Config{})
	ctx := context.Background()
	open := func(method string) rpc.Stream {
		t.Helper()
		s, err := c.Stream(ctx, &rpc.Invocation{Service: greetgrpc.Service, Method: method, Version: "1.0.0"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	send := func(s rpc.Stream, typ, json string) {
		t.Helper()
		if err := s.Send(rpc.Message{Bytes: greetgrpc.Encode(t, typ, json)}); err != nil {
			t.Fatal(err)
		}
	}
	recvAll := func(s rpc.Stream) []string {
		t.Helper()
		var out []string
		for {
			m, err := s.Recv()
			if errors.Is(err, io.EOF) {
				return out
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, greetgrpc.Decode(t, greetgrpc.Response, m.Bytes))
		}
	}

	s := open("GreetServerStream")
	send(s, greetgrpc.StreamRequest, `{"name":"x","count":3}`)
	s.CloseSend()
	if got := strings.Join(recvAll(s), " "); got != `{"greeting":"Hello, x #1"} {"greeting":"Hello, x #2"} {"greeting":"Hello, x #3"}` {
		t.Errorf("server stream: %s", got)
	}

	s = open("GreetClientStream")
	for _, n := range []string{"a", "b", "c"} {
		send(s, greetgrpc.Request, fmt.Sprintf(`{"name":%q}`, n))
	}
	s.CloseSend()
	if got := recvAll(s); len(got) != 1 || got[0] != `{"greeting":"Hello, a,b,c"}` {
		t.Errorf("client stream: %v", got)
	}

	// Bidi: each message answered before the next is sent.
	s = open("GreetStream")
	for _, n := range []string{"a", "b"} {
		send(s, greetgrpc.Request, fmt.Sprintf(`{"name":%q}`, n))
		m, err := s.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if got := greetgrpc.Decode(t, greetgrpc.Response, m.Bytes); got != fmt.Sprintf(`{"greeting":"Hello, %s"}`, n) {
			t.Errorf("bidi answered %s to %s", got, n)
		}
	}
	s.CloseSend()
	if rest := recvAll(s); len(rest) != 0 {
		t.Errorf("bidi: more after the half-close: %v", rest)
	}
	for _, call := range srv.Calls() {
		if got := call.Metadata.Get("tri-service-version"); len(got) != 1 || got[0] != "1.0.0" {
			t.Errorf("%s: version header %q", call.Method, got)
		}
	}

	// An unknown method fails the stream with its category.
	s = open("Nope")
	s.CloseSend()
	if _, err := s.Recv(); !errors.Is(err, rpc.ErrServiceNotFound) {
		t.Errorf("unknown streaming method: %v", err)
	}

	// Cancelling the context ends the stream.
	sctx, cancel := context.WithCancel(ctx)
	s, err := c.Stream(sctx, &rpc.Invocation{Service: greetgrpc.Service, Method: "GreetStream"})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := s.Recv(); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled stream: %v", err)
	}
}
