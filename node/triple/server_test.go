package triple

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dubbo-lab/dubbo/internal/testkit/h2raw"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Shutdown sends GOAWAY with the last stream it will serve, refuses
// streams past it, lets the call in flight finish, then closes.
func TestShutdownLetsCallsFinish(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	h := router{"s/Echo": echo, "s/Slow": asyncUnary(func(context.Context, *Call, []byte) ([]byte, rpc.Metadata, *Status) {
		close(started)
		<-release
		return []byte("done"), nil, nil
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(Config{}, h)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	c := h2raw.Dial(t, ln.Addr().String())
	c.Request(1, false, "/s/Slow")
	c.Message(1, []byte("x"), true)
	<-started

	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	v := c.Read(5*time.Second, func(v *h2raw.Conversation) bool { return v.GoAway != nil || v.Err != nil })
	if v.GoAway == nil || v.GoAway.ErrCode != http2.ErrCodeNo || v.GoAway.LastStreamID != 1 {
		t.Fatalf("want GOAWAY NO_ERROR last stream 1, got %+v (%v)", v.GoAway, v.Err)
	}
	c.Request(3, true, "/s/Echo") // past the last stream: refused
	close(release)
	v = c.Read(5*time.Second, func(v *h2raw.Conversation) bool { return v.Err != nil })
	if r := v.Stream(1); r.Status() != 0 || string(r.Data[5:]) != "done" {
		t.Errorf("the call in flight: %+v", r)
	}
	if r := v.Streams[3]; r != nil && r.Status() == 0 {
		t.Errorf("a stream past GOAWAY was served: %+v", r)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if err := <-served; err != ErrServerClosed {
		t.Errorf("Serve: %v", err)
	}
}

// Shutdown gives up on calls still running when its context ends: it
// closes their connections and says so.
func TestShutdownDeadline(t *testing.T) {
	h := router{"s/Wait": asyncUnary(func(ctx context.Context, _ *Call, _ []byte) ([]byte, rpc.Metadata, *Status) {
		<-ctx.Done()
		return nil, nil, nil
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(Config{}, h)
	go func() { _ = s.Serve(ln) }()
	cc := dial(t, ln.Addr().String())
	errc := make(chan error, 1)
	go func() {
		_, err := invoke(context.Background(), cc, "/s/Wait", nil)
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want DeadlineExceeded", err)
	}
	if err := <-errc; status.Code(err) != codes.Unavailable {
		t.Errorf("the call in flight: %v, want Unavailable", err)
	}
}

// A connection that sends nothing for IdleTimeout gets GOAWAY and is
// closed.
func TestIdleTimeout(t *testing.T) {
	_, addr := start(t, Config{IdleTimeout: 200 * time.Millisecond}, router{"s/Echo": echo})
	c := h2raw.Dial(t, addr)
	t0 := time.Now()
	v := c.Read(5*time.Second, func(v *h2raw.Conversation) bool { return v.Err != nil })
	if v.GoAway == nil || v.GoAway.ErrCode != http2.ErrCodeNo {
		t.Errorf("want GOAWAY NO_ERROR, got %+v", v.GoAway)
	}
	if h2raw.IsTimeout(v.Err) {
		t.Fatal("the idle connection was not closed")
	}
	if d := time.Since(t0); d < 150*time.Millisecond || d > 3*time.Second {
		t.Errorf("closed after %v, want about 200ms", d)
	}
}

// Connections past Accepts are closed at once; the others are served.
func TestAccepts(t *testing.T) {
	s, addr := start(t, Config{Accepts: 1}, router{"s/Echo": echo})
	cc := dial(t, addr)
	if _, err := invoke(callCtx5s(t), cc, "/s/Echo", nil); err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Read(make([]byte, 1)); err == nil || h2raw.IsTimeout(err) {
		t.Errorf("the connection past Accepts: read %v, want it closed", err)
	}
	if s.refused.Load() != 1 {
		t.Errorf("refused %d, want 1", s.refused.Load())
	}
	if _, err := invoke(callCtx5s(t), cc, "/s/Echo", nil); err != nil {
		t.Errorf("the first connection after the refusal: %v", err)
	}
}
