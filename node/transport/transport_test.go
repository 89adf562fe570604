package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/fastpath"
	"github.com/dubbo-lab/dubbo/node/dispatch"
	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// greeter is the example service (docs/ARCHITECTURE.md, "Contracts"), plus a method the provider
// does not know.
var greeter = HandlerFunc(func(ctx context.Context, req *protocol.Request) *protocol.Response {
	resp := protocol.ResponseTo(req)
	switch req.Method {
	case "sayHello":
		resp.Value = "Hello, " + req.Args[0].(string)
	case "sleep":
		// Like a handler that ignores its deadline but gives up when the
		// connection closes.
		slept := time.After(time.Duration(req.Args[0].(int32)) * time.Millisecond)
		select {
		case <-slept:
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				<-slept
			}
		}
		resp.Value = "slept"
	case "fail":
		resp.Exception = &protocol.Exception{Class: "java.lang.IllegalStateException", Message: req.Args[0].(string)}
	default:
		resp.Status = protocol.StatusServiceError
		resp.ErrorMessage = "Not found exported service: " + req.Path + ":" + req.Method
	}
	return resp
})

func startServer(t testing.TB, addr string, h Handler, cfg ServerConfig) *Server {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	s, err := Listen(addr, h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func dial(t testing.TB, s *Server, cfg ClientConfig) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	c, err := Dial(ctx, s.Addr().String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var quiet = slog.New(slog.DiscardHandler)

func hello(name string) *rpc.Invocation {
	return &rpc.Invocation{Service: "org.example.Greeter", Version: "1.0.0", Method: "sayHello",
		ParamTypes: []string{"java.lang.String"}, Args: []any{name}}
}

func sleepInv(ms int32) *rpc.Invocation {
	return &rpc.Invocation{Service: "org.example.Greeter", Version: "1.0.0", Method: "sleep",
		ParamTypes: []string{"int"}, Args: []any{ms}}
}

func callHello(t testing.TB, c *Client, name string) {
	t.Helper()
	res, err := c.Invoke(context.Background(), hello(name))
	if err != nil {
		t.Fatalf("sayHello(%s): %v", name, err)
	}
	if res.Value != "Hello, "+name {
		t.Fatalf("sayHello(%s) = %v", name, res.Value)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestRoundTrip(t *testing.T) {
	var oneways atomic.Int32
	h := HandlerFunc(func(ctx context.Context, req *protocol.Request) *protocol.Response {
		if !req.TwoWay {
			oneways.Add(1)
			return nil
		}
		if Peer(ctx) == nil {
			t.Error("no peer address in the handler's context")
		}
		if req.Attachment("interface") != "org.example.Greeter" || req.Attachment("timeout") == "" ||
			req.Method == "sayHello" && req.Version != "1.0.0" {
			t.Errorf("attachments %v version %q", req.Attachments, req.Version)
		}
		return greeter(ctx, req)
	})
	s := startServer(t, "", h, ServerConfig{})
	c := dial(t, s, ClientConfig{})
	if !c.Available() {
		t.Fatal("dialled client not available")
	}
	callHello(t, c, "world")

	fail := &rpc.Invocation{Service: "org.example.Greeter", Method: "fail", ParamTypes: []string{"java.lang.String"}, Args: []any{"boom"}}
	res, err := c.Invoke(context.Background(), fail)
	if err != nil || res.Exception == nil || res.Exception.Message != "boom" || res.Exception.Class != "java.lang.IllegalStateException" {
		t.Fatalf("fail: %+v %v", res, err)
	}

	_, err = c.Invoke(context.Background(), &rpc.Invocation{Service: "org.example.Greeter", Method: "nope"})
	if !errors.Is(err, rpc.ErrServiceNotFound) || !strings.Contains(err.Error(), "Not found exported service") {
		t.Fatalf("unknown method: %v", err)
	}

	ow := hello("x")
	ow.SetAttachment("return", "false")
	if res, err := c.Invoke(context.Background(), ow); err != nil || res == nil {
		t.Fatalf("oneway: %v", err)
	}
	waitFor(t, "oneway request", func() bool { return oneways.Load() == 1 })
}

func TestConcurrentCalls(t *testing.T) {
	s := startServer(t, "", greeter, ServerConfig{})
	c := dial(t, s, ClientConfig{Connections: 2})
	var wg sync.WaitGroup
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				name := string(rune('a'+g%26)) + strings.Repeat("x", i)
				res, err := c.Invoke(context.Background(), hello(name))
				if err != nil || res.Value != "Hello, "+name {
					t.Errorf("%s: %v %v", name, res, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	waitFor(t, "in-flight count to settle", func() bool { return s.Stats().InFlight == 0 })
	if st := s.Stats(); st.Accepted != 2 {
		t.Fatalf("server stats %+v", st)
	}
}

func TestTimeoutKeepsConnection(t *testing.T) {
	s := startServer(t, "", greeter, ServerConfig{})
	c := dial(t, s, ClientConfig{Timeout: 100 * time.Millisecond})
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		inv  *rpc.Invocation
	}{
		{"config timeout", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, sleepInv(500)},
		{"ctx deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}, sleepInv(500)},
		{"timeout attachment", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			func() *rpc.Invocation { inv := sleepInv(500); inv.SetAttachment("timeout", "100"); return inv }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := tt.ctx()
			defer cancel()
			start := time.Now()
			_, err := c.Invoke(ctx, tt.inv)
			took := time.Since(start)
			if !errors.Is(err, rpc.ErrTimeout) {
				t.Fatalf("err %v, want ErrTimeout", err)
			}
			if took < 90*time.Millisecond || took > 300*time.Millisecond {
				t.Fatalf("timed out after %v, want about 100ms", took)
			}
			callHello(t, c, "after timeout")
		})
	}
	if st := s.Stats(); st.Accepted != 1 {
		t.Fatalf("connections accepted %d, want 1 (a timeout must not break it)", st.Accepted)
	}
}

func TestServerKilledFailsCallsAtOnce(t *testing.T) {
	s := startServer(t, "", greeter, ServerConfig{})
	addr := s.Addr().String()
	var states []bool
	var mu sync.Mutex
	cfg := ClientConfig{Timeout: 10 * time.Second, ReconnectMin: 10 * time.Millisecond, ReconnectMax: 50 * time.Millisecond,
		OnStateChange: func(up bool) { mu.Lock(); states = append(states, up); mu.Unlock() }}
	c := dial(t, s, cfg)

	const n = 5
	errs := make(chan error, n)
	start := time.Now()
	for i := 0; i < n; i++ {
		go func() {
			_, err := c.Invoke(context.Background(), sleepInv(10000))
			errs <- err
		}()
	}
	waitFor(t, "calls in flight", func() bool { return s.Stats().InFlight == n })
	s.Close()
	for i := 0; i < n; i++ {
		if err := <-errs; !errors.Is(err, rpc.ErrConnection) {
			t.Fatalf("in-flight call: %v, want ErrConnection", err)
		}
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("in-flight calls failed after %v; the connection loss should fail them at once", took)
	}
	if c.Available() {
		t.Fatal("client still available after the server closed")
	}
	if _, err := c.Invoke(context.Background(), hello("down")); !errors.Is(err, rpc.ErrConnection) {
		t.Fatalf("call while down: %v", err)
	}

	s2 := startServer(t, addr, greeter, ServerConfig{})
	waitFor(t, "reconnect", c.Available)
	callHello(t, c, "back")
	if st := s2.Stats(); st.Accepted != 1 {
		t.Fatalf("accepted %d", st.Accepted)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(states) != 3 || !states[0] || states[1] || !states[2] {
		t.Fatalf("state changes %v, want [true false true]", states)
	}
}

func TestPoolExhausted(t *testing.T) {
	pool, err := dispatch.NewPool(dispatch.PoolConfig{Threads: 1, Name: "test-pool", Where: "dubbo://test"})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	d, _ := dispatch.NewDispatcher(dispatch.All, pool)
	s := startServer(t, "", greeter, ServerConfig{Dispatcher: d})
	c := dial(t, s, ClientConfig{Timeout: 5 * time.Second})

	busy := make(chan error, 1)
	go func() { _, err := c.Invoke(context.Background(), sleepInv(300)); busy <- err }()
	waitFor(t, "busy worker", func() bool { return pool.Stats().Active == 1 })
	start := time.Now()
	_, err = c.Invoke(context.Background(), hello("refused"))
	if !errors.Is(err, rpc.ErrPoolExhausted) || !strings.Contains(err.Error(), "Thread pool is EXHAUSTED!") ||
		!strings.Contains(err.Error(), "thread pool is exhausted, detail msg:") {
		t.Fatalf("err %v, want ErrPoolExhausted with Dubbo's message", err)
	}
	if took := time.Since(start); took > 200*time.Millisecond {
		t.Fatalf("rejection took %v", took)
	}
	if err := <-busy; err != nil {
		t.Fatal(err)
	}
	// The worker is released just after its response is queued.
	waitFor(t, "idle worker", func() bool { return pool.Stats().Active == 0 })
	callHello(t, c, "after")
}

func TestOversizeRequestKeepsConnection(t *testing.T) {
	s := startServer(t, "", greeter, ServerConfig{Payload: 1024})
	c := dial(t, s, ClientConfig{})
	_, err := c.Invoke(context.Background(), hello(strings.Repeat("x", 4096)))
	if !errors.Is(err, rpc.ErrBadRequest) || !strings.Contains(err.Error(), "Data length too large") {
		t.Fatalf("err %v, want ErrBadRequest with the payload message", err)
	}
	callHello(t, c, "small")
	if st := s.Stats(); st.Accepted != 1 {
		t.Fatalf("accepted %d", st.Accepted)
	}
}

// rawFrame builds a frame by hand so tests do not trust the codec they test.
func rawFrame(flags, status byte, id int64, body []byte) []byte {
	b := []byte{0xda, 0xbb, flags, status}
	b = binary.BigEndian.AppendUint64(b, uint64(id))
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	return append(b, body...)
}

func rawConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(3 * time.Second))
	return conn
}

func readFrame(t *testing.T, conn net.Conn) []byte {
	t.Helper()
	f, err := nextFrame(conn)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// nextFrame is readFrame for any goroutine.
func nextFrame(conn net.Conn) ([]byte, error) {
	hdr := make([]byte, 16)
	if _, err := io.ReadFull(conn, hdr); err != nil {
		return nil, fmt.Errorf("reading header: %w", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[12:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		return nil, fmt.Errorf("reading body: %w", err)
	}
	return append(hdr, body...), nil
}

func TestHeartbeatBytes(t *testing.T) {
	s := startServer(t, "", greeter, ServerConfig{})
	conn := rawConn(t, s.Addr().String())
	// PROTOCOLS B.6: request e2, body N; response 22, status 20, same id.
	conn.Write(rawFrame(0xe2, 0, 77, []byte{0x4e}))
	if got, want := readFrame(t, conn), rawFrame(0x22, 20, 77, []byte{0x4e}); !bytes.Equal(got, want) {
		t.Fatalf("heartbeat response % x, want % x", got, want)
	}
}

func TestClientHeartbeats(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- conn
		}
	}()
	c := NewClient(ln.Addr().String(), ClientConfig{Heartbeat: 30 * time.Millisecond, HeartbeatTimeout: 150 * time.Millisecond,
		ReconnectMin: 10 * time.Millisecond, Logger: quiet})
	defer c.Close()
	conn := <-accepted
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(3 * time.Second))

	// The idle client pings: e2, status 0, body N.
	f := readFrame(t, conn)
	id := int64(binary.BigEndian.Uint64(f[4:12]))
	if want := rawFrame(0xe2, 0, id, []byte{0x4e}); !bytes.Equal(f, want) {
		t.Fatalf("client heartbeat % x, want % x", f, want)
	}
	// It answers a provider's heartbeat (dubbo-go sends them); the reply may
	// come after more pings of its own.
	conn.Write(rawFrame(0xe2, 0, 1234, []byte{0x4e}))
	want := rawFrame(0x22, 20, 1234, []byte{0x4e})
	for i := 0; ; i++ {
		f := readFrame(t, conn)
		if bytes.Equal(f, want) {
			break
		}
		if i > 20 || f[2] != 0xe2 {
			t.Fatalf("got % x, want the heartbeat response % x", f, want)
		}
	}
	// A provider that never answers is dropped after HeartbeatTimeout and
	// the client dials again.
	select {
	case c2 := <-accepted:
		c2.Close()
	case <-time.After(2 * time.Second):
		t.Fatal("client did not reconnect after the heartbeat timeout")
	}
}

func TestServerClosesIdleConnection(t *testing.T) {
	s := startServer(t, "", greeter, ServerConfig{HeartbeatTimeout: 100 * time.Millisecond})
	conn := rawConn(t, s.Addr().String())
	start := time.Now()
	if _, err := conn.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read %v, want EOF", err)
	}
	if took := time.Since(start); took < 90*time.Millisecond || took > time.Second {
		t.Fatalf("closed after %v", took)
	}
}

func TestBadInputFromRawClients(t *testing.T) {
	s := startServer(t, "", greeter, ServerConfig{})
	c := dial(t, s, ClientConfig{})
	tests := []struct {
		name       string
		send       []byte
		wantStatus byte   // 0: want the connection closed
		wantText   string // in the error body
	}{
		{"bad magic closes", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), 0, ""},
		{"undecodable body", rawFrame(0xc2, 0, 5, []byte{0x05, 'h', 'e'}), 40, "Fail to decode request"},
		{"unsupported serialization", rawFrame(0xc6, 0, 6, []byte("{}")), 40, "serialization"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn := rawConn(t, s.Addr().String())
			conn.Write(tt.send)
			if tt.wantStatus == 0 {
				if n, err := conn.Read(make([]byte, 64)); err != io.EOF {
					t.Fatalf("read %d, %v; want the connection closed", n, err)
				}
			} else {
				f := readFrame(t, conn)
				if f[2] != 0x02 || f[3] != tt.wantStatus || !bytes.Contains(f, []byte(tt.wantText)) {
					t.Fatalf("response % x (%q)", f[:4], f[16:])
				}
				// Framing was intact, so the connection still serves.
				conn.Write(rawFrame(0xe2, 0, 9, []byte{0x4e}))
				if f := readFrame(t, conn); f[2] != 0x22 {
					t.Fatalf("heartbeat after bad request: % x", f)
				}
			}
			callHello(t, c, "others unaffected")
		})
	}
}

func TestGracefulShutdown(t *testing.T) {
	s := startServer(t, "", greeter, ServerConfig{})
	down := make(chan struct{})
	var once sync.Once
	c := dial(t, s, ClientConfig{Timeout: 5 * time.Second, OnStateChange: func(up bool) {
		if !up {
			once.Do(func() { close(down) })
		}
	}})
	inflight := make(chan error, 1)
	go func() {
		res, err := c.Invoke(context.Background(), sleepInv(300))
		if err == nil && res.Value != "slept" {
			err = errors.New("wrong result")
		}
		inflight <- err
	}()
	waitFor(t, "call in flight", func() bool { return s.Stats().InFlight == 1 })
	shut := make(chan error, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		shut <- s.Shutdown(ctx)
	}()
	select {
	case <-down:
	case <-time.After(time.Second):
		t.Fatal("read-only event did not make the client unavailable")
	}
	if took := time.Since(start); took > 200*time.Millisecond {
		t.Fatalf("read-only took %v", took)
	}
	if _, err := c.Invoke(context.Background(), hello("new")); !errors.Is(err, rpc.ErrConnection) || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("new call to a read-only provider: %v", err)
	}
	if err := <-inflight; err != nil {
		t.Fatalf("in-flight call during shutdown: %v", err)
	}
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
}

func TestStatusKinds(t *testing.T) {
	tests := []struct {
		status protocol.Status
		msg    string
		want   error
	}{
		{protocol.StatusServerThreadpoolExhaust, "", rpc.ErrPoolExhausted},
		{protocol.StatusBadRequest, "", rpc.ErrBadRequest},
		{protocol.StatusClientError, "", rpc.ErrBadRequest},
		{protocol.StatusSerializationError, "", rpc.ErrBadRequest},
		{protocol.StatusClientTimeout, "", rpc.ErrTimeout},
		{protocol.StatusServerTimeout, "", rpc.ErrTimeout},
		{protocol.StatusChannelInactive, "", rpc.ErrConnection},
		{protocol.StatusServiceNotFound, "", rpc.ErrServiceNotFound},
		{protocol.StatusServiceError, "Not found exported service: a.B:1.0 in [], may be version or group mismatch", rpc.ErrServiceNotFound},
		{protocol.StatusServiceError, "cannot find method [x] of service [y]", rpc.ErrServiceNotFound},
		{protocol.StatusServiceError, "java.lang.NullPointerException", rpc.ErrProvider},
		{protocol.StatusServiceError, "org.apache.dubbo.rpc.RpcException: Invalid token! Forbid invoke remote service " +
			"interface org.example.Greeter method sayHello() from consumer 127.0.0.1 to provider 127.0.0.1", rpc.ErrBadRequest},
		{protocol.StatusServerError, "", rpc.ErrProvider},
		{protocol.StatusBadResponse, "", rpc.ErrProvider},
	}
	for _, tt := range tests {
		_, err := resultOf(&protocol.Response{Status: tt.status, ErrorMessage: tt.msg}, hello("x"), "h:1")
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%v %q: %v, want %v", tt.status, tt.msg, err, tt.want)
		}
	}
}

func TestHeartbeatNotQueuedBehindBusinessWork(t *testing.T) {
	pool, _ := dispatch.NewPool(dispatch.PoolConfig{Threads: 1})
	defer pool.Close()
	d, _ := dispatch.NewDispatcher(dispatch.All, pool)
	s := startServer(t, "", greeter, ServerConfig{Dispatcher: d})
	conn := rawConn(t, s.Addr().String())
	req, err := requestFor(sleepInv(300), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	req.ID = 1
	frame, err := protocol.NewEncoder(0).AppendRequest(nil, req)
	if err != nil {
		t.Fatal(err)
	}
	conn.Write(frame)
	waitFor(t, "busy worker", func() bool { return pool.Stats().Active == 1 })
	start := time.Now()
	conn.Write(rawFrame(0xe2, 0, 2, []byte{0x4e}))
	f := readFrame(t, conn)
	if id := binary.BigEndian.Uint64(f[4:12]); f[2] != 0x22 || id != 2 {
		t.Fatalf("first frame back % x, want the heartbeat response", f[:16])
	}
	if took := time.Since(start); took > 150*time.Millisecond {
		t.Fatalf("heartbeat answered after %v, behind the busy worker", took)
	}
	if f := readFrame(t, conn); f[3] != 20 || binary.BigEndian.Uint64(f[4:12]) != 1 {
		t.Fatalf("sleep response % x", f[:16])
	}
}

func TestDialClosedPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = Dial(ctx, addr, ClientConfig{Logger: quiet, ReconnectMin: 10 * time.Millisecond})
	if !errors.Is(err, rpc.ErrConnection) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("dial a closed port: %v", err)
	}
}

// frozenPeer is a provider that the test reads and answers by hand, so it
// can stop doing either, as a SIGSTOPped process does.
type frozenPeer struct {
	conn net.Conn
	enc  *protocol.Encoder
}

func acceptPeer(t *testing.T, ln net.Listener) *frozenPeer {
	t.Helper()
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	return &frozenPeer{conn: conn, enc: protocol.NewEncoder(0)}
}

// answer reads one frame and answers it if it is a two-way request; it
// returns the frame's flags.
func (p *frozenPeer) answer() (byte, error) {
	f, err := nextFrame(p.conn)
	if err != nil {
		return 0, err
	}
	id := int64(binary.BigEndian.Uint64(f[4:12]))
	var out []byte
	switch f[2] {
	case 0xe2: // heartbeat
		out = rawFrame(0x22, 20, id, []byte{0x4e})
	case 0xc2:
		if out, err = p.enc.AppendResponse(nil, &protocol.Response{ID: id, Value: "Hello, world"}); err != nil {
			return 0, err
		}
	}
	if out != nil {
		if _, err := p.conn.Write(out); err != nil {
			return 0, err
		}
	}
	return f[2], nil
}

// answerAsync answers one frame on another goroutine; its error, nil once
// it answered, comes on the channel.
func (p *frozenPeer) answerAsync() <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := p.answer()
		done <- err
	}()
	return done
}

// answerOne is answer in the test's goroutine.
func (p *frozenPeer) answerOne(t *testing.T) byte {
	t.Helper()
	flags, err := p.answer()
	if err != nil {
		t.Fatal(err)
	}
	return flags
}

func TestFrozenProviderUnavailable(t *testing.T) {
	tests := []struct {
		name     string
		liveness time.Duration
		timeout  time.Duration
	}{
		{"liveness watch", 40 * time.Millisecond, 5 * time.Second},
		{"timed-out call", -1, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			states := make(chan bool, 8)
			c := NewClient(ln.Addr().String(), ClientConfig{Liveness: tt.liveness, Timeout: tt.timeout, Logger: quiet,
				OnStateChange: func(up bool) { states <- up }})
			defer c.Close()
			p := acceptPeer(t, ln)
			if up := <-states; !up {
				t.Fatal("first state change is not available")
			}
			answered := p.answerAsync()
			callHello(t, c, "world")
			if err := <-answered; err != nil {
				t.Fatal(err)
			}

			// The provider freezes: it neither reads nor answers.
			calls := make(chan error, 1)
			start := time.Now()
			go func() { _, err := c.Invoke(context.Background(), hello("world")); calls <- err }()
			select {
			case up := <-states:
				if up {
					t.Fatal("state change to available while frozen")
				}
			case <-time.After(2 * time.Second):
				t.Fatal("a silent provider with a call outstanding stayed available")
			}
			took := time.Since(start)
			if c.Available() {
				t.Fatal("Available() while frozen")
			}
			if limit := max(tt.timeout, 0) + 500*time.Millisecond; tt.liveness > 0 && took > limit {
				t.Fatalf("frozen after %v", took)
			}
			t.Logf("unavailable %v after the call", took.Round(time.Millisecond))

			// It thaws: the call (unless it timed out) and the probe heartbeat
			// are waiting in its socket, and the first answer makes the client
			// available again.
			if flags := p.answerOne(t); flags != 0xc2 {
				t.Fatalf("first frame after the freeze has flags %02x, want the call (c2)", flags)
			}
			if flags := p.answerOne(t); flags != 0xe2 {
				t.Fatalf("second frame after the freeze has flags %02x, want the probe heartbeat (e2)", flags)
			}
			select {
			case up := <-states:
				if !up {
					t.Fatal("second state change is not available")
				}
			case <-time.After(2 * time.Second):
				t.Fatal("client stayed unavailable after the provider answered")
			}
			err = <-calls
			if tt.timeout < time.Second {
				if !errors.Is(err, rpc.ErrTimeout) {
					t.Fatalf("call during the freeze: %v, want ErrTimeout", err)
				}
			} else if err != nil {
				t.Fatalf("call during the freeze: %v", err)
			}
			answered = p.answerAsync()
			callHello(t, c, "world")
			if err := <-answered; err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSlowCallDoesNotFreeze(t *testing.T) {
	s := startServer(t, "", greeter, ServerConfig{})
	var downs atomic.Int32
	c := dial(t, s, ClientConfig{Liveness: 20 * time.Millisecond, Timeout: 5 * time.Second,
		OnStateChange: func(up bool) {
			if !up {
				downs.Add(1)
			}
		}})
	if _, err := c.Invoke(context.Background(), sleepInv(300)); err != nil {
		t.Fatal(err)
	}
	if n := downs.Load(); n != 0 {
		t.Fatalf("a provider answering heartbeats during a slow call was reported unavailable %d times", n)
	}
}

func TestHandlerDeadlineFromTimeoutAttachment(t *testing.T) {
	type seen struct {
		deadline time.Duration // from the handler's start; 0: none
		stopped  time.Duration // when ctx.Done fired; 0: never
		err      error
	}
	seenc := make(chan seen, 1)
	h := HandlerFunc(func(ctx context.Context, req *protocol.Request) *protocol.Response {
		start := time.Now()
		var s seen
		if dl, ok := ctx.Deadline(); ok {
			s.deadline = dl.Sub(start)
		}
		select {
		case <-ctx.Done():
			s.stopped, s.err = time.Since(start), ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		seenc <- s
		if s.stopped > 0 {
			time.Sleep(200 * time.Millisecond) // answer after the consumer gave up
		}
		return protocol.ResponseTo(req)
	})
	s := startServer(t, "", h, ServerConfig{})

	t.Run("timeout attachment", func(t *testing.T) {
		c := dial(t, s, ClientConfig{})
		inv := hello("x")
		inv.SetAttachment("timeout", "100")
		if _, err := c.Invoke(context.Background(), inv); !errors.Is(err, rpc.ErrTimeout) {
			t.Fatalf("call: %v, want ErrTimeout", err)
		}
		got := <-seenc
		if got.deadline <= 0 || got.deadline > 100*time.Millisecond {
			t.Fatalf("handler deadline %v from its start, want within 100ms", got.deadline)
		}
		if got.stopped < 50*time.Millisecond || got.stopped > 300*time.Millisecond || !errors.Is(got.err, context.DeadlineExceeded) {
			t.Fatalf("handler context done after %v with %v, want about 100ms and DeadlineExceeded", got.stopped, got.err)
		}
	})
	t.Run("no timeout attachment", func(t *testing.T) {
		req, err := requestFor(hello("x"), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		delete(req.Attachments, "timeout")
		req.ID = 7
		frame, err := protocol.NewEncoder(0).AppendRequest(nil, req)
		if err != nil {
			t.Fatal(err)
		}
		conn := rawConn(t, s.Addr().String())
		conn.Write(frame)
		if f := readFrame(t, conn); f[3] != 20 {
			t.Fatalf("response status %d", f[3])
		}
		if got := <-seenc; got.deadline != 0 || got.stopped != 0 {
			t.Fatalf("handler without a timeout attachment saw %+v, want no deadline", got)
		}
	})
}

// A request the reader runs itself (its connection was idle) that turns out
// slow holds the connection's next requests up for a few milliseconds at
// most: the watchdog lets another goroutine read on.
func TestSlowRequestRunHereHandedOver(t *testing.T) {
	s := startServer(t, "", greeter, ServerConfig{})
	c := dial(t, s, ClientConfig{Timeout: 5 * time.Second})
	slow := make(chan error, 1)
	go func() { _, err := c.Invoke(context.Background(), sleepInv(1000)); slow <- err }()
	waitFor(t, "the slow call in flight", func() bool { return s.Stats().InFlight == 1 })
	start := time.Now()
	callHello(t, c, "meanwhile")
	if took := time.Since(start); took > 300*time.Millisecond {
		t.Fatalf("a call behind a slow one on the same connection took %v", took)
	}
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	callHello(t, c, "after")
}

// Close does not wait for a handler its reader runs, any more than for one
// on the pool.
func TestCloseDoesNotWaitForHandlerRunHere(t *testing.T) {
	s := startServer(t, "", greeter, ServerConfig{})
	c := dial(t, s, ClientConfig{Timeout: 10 * time.Second})
	go c.Invoke(context.Background(), sleepInv(5000))
	waitFor(t, "the slow call in flight", func() bool { return s.Stats().InFlight == 1 })
	start := time.Now()
	s.Close()
	if took := time.Since(start); took > time.Second {
		t.Fatalf("Close took %v with a 5s handler running", took)
	}
}

// flusher records whether its held writes were flushed.
type flusher struct{ flushed atomic.Int32 }

func (f *flusher) FlushHeld() { f.flushed.Add(1) }

// A write held back during a burst of requests is flushed when the reader
// has no more whole requests buffered: none is left waiting.
func TestHeldWritesFlushedAfterBurst(t *testing.T) {
	f := &flusher{}
	var held atomic.Int32
	h := HandlerFunc(func(ctx context.Context, req *protocol.Request) *protocol.Response {
		if fastpath.HolderOf(ctx).Hold(f) {
			held.Add(1)
		}
		return greeter(ctx, req)
	})
	s := startServer(t, "", h, ServerConfig{})
	conn := rawConn(t, s.Addr().String())
	var burst []byte
	for id := range int64(20) {
		req, err := requestFor(hello("burst"), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		req.ID = id
		if burst, err = protocol.NewEncoder(0).AppendRequest(burst, req); err != nil {
			t.Fatal(err)
		}
	}
	conn.Write(burst) // one write: the reader finds them buffered together
	for range 20 {
		readFrame(t, conn)
	}
	if held.Load() == 0 {
		t.Fatal("no write was held back while 20 requests were buffered")
	}
	// The reader flushes once it is through the burst, just after the last
	// response went out.
	waitFor(t, "the held writes flushed", func() bool { return f.flushed.Load() > 0 })
}

// One call at a time runs on the connection's reader, so the pool starts no
// worker; with PoolOnly every call goes to a worker.
func TestPoolOnly(t *testing.T) {
	for _, poolOnly := range []bool{false, true} {
		pool, err := dispatch.NewPool(dispatch.PoolConfig{})
		if err != nil {
			t.Fatal(err)
		}
		d, _ := dispatch.NewDispatcher(dispatch.All, pool)
		s := startServer(t, "", greeter, ServerConfig{Dispatcher: d, PoolOnly: poolOnly})
		cl := dial(t, s, ClientConfig{})
		for i := range 10 {
			callHello(t, cl, strconv.Itoa(i))
		}
		st := pool.Stats()
		if st.Tasks != 10 || (st.Workers > 0) != poolOnly {
			t.Errorf("PoolOnly=%v: %d workers started, %d tasks after 10 calls one at a time", poolOnly, st.Workers, st.Tasks)
		}
		pool.Close()
	}
}
