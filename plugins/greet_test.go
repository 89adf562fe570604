package plugins_test

import (
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/dubbo-lab/dubbo/examples/greet/greetpb"
	"github.com/dubbo-lab/dubbo/internal/testkit/child"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/plugins"
)

// startGreet builds examples/greet and starts it as a plugin.
func startGreet(t testing.TB) *plugins.Plugin {
	t.Helper()
	dir, err := child.Build("../examples/greet")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return startGreeter(t, plugins.Config{Path: filepath.Join(dir, "greet"), Logger: testLogger(t), StartTimeout: 10 * time.Second})
}

// greetStream is a stream to a method of greet.GreetService with its
// messages typed.
type greetStream struct {
	t *testing.T
	s *plugins.Stream
}

func openGreet(ctx context.Context, t *testing.T, p *plugins.Plugin, method string) greetStream {
	t.Helper()
	s, err := p.OpenStream(ctx, plugins.ProtoCall{Service: "greet.GreetService", Method: method})
	if err != nil {
		t.Fatalf("OpenStream %s: %v", method, err)
	}
	return greetStream{t, s}
}

func (g greetStream) send(m proto.Message) {
	g.t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		g.t.Fatal(err)
	}
	if err := g.s.Send(b); err != nil {
		g.t.Fatalf("Send: %v", err)
	}
}

// recv returns the next greeting, or "" and the error that ended the
// stream (io.EOF when it ended OK).
func (g greetStream) recv() (string, error) {
	b, err := g.s.Recv()
	if err != nil {
		return "", err
	}
	var resp greetpb.GreetResponse
	if err := proto.Unmarshal(b, &resp); err != nil {
		g.t.Fatal(err)
	}
	return resp.Greeting, nil
}

// all reads the greetings to the end of the stream, which must be OK.
func (g greetStream) all() []string {
	g.t.Helper()
	var out []string
	for {
		s, err := g.recv()
		if err == io.EOF {
			return out
		}
		if err != nil {
			g.t.Fatalf("Recv: %v", err)
		}
		out = append(out, s)
	}
}

// TestGreetExample runs examples/greet, as make build builds it, as a
// plugin: what it serves, its four methods through the node's API, a
// stream canceled midway, and the plugin killed mid-stream.
func TestGreetExample(t *testing.T) {
	p := startGreet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	svcs := p.Services()
	if len(svcs) != 1 || svcs[0].Key() != "greet.GreetService" || svcs[0].Proto == nil {
		t.Fatalf("services = %+v", svcs)
	}
	kinds := map[string]rpc.MethodKind{}
	for _, m := range svcs[0].Methods {
		kinds[m.Name] = m.Kind
	}
	if want := map[string]rpc.MethodKind{"Greet": rpc.Unary, "GreetServerStream": rpc.ServerStream,
		"GreetClientStream": rpc.ClientStream, "GreetStream": rpc.BidiStream}; !maps.Equal(kinds, want) {
		t.Errorf("methods %v, want %v", kinds, want)
	}

	t.Run("Greet", func(t *testing.T) {
		o := callGreet(ctx, t, p, plugins.ProtoCall{Service: "greet.GreetService", Method: "Greet"}, "world")
		if o.st != nil || o.resp.Greeting != "Hello, world" {
			t.Errorf("Greet(world) = %+v", o)
		}
	})
	t.Run("GreetServerStream", func(t *testing.T) {
		g := openGreet(ctx, t, p, "GreetServerStream")
		g.send(&greetpb.GreetStreamRequest{Name: "ann", Count: 3})
		g.s.CloseSend()
		if got := strings.Join(g.all(), "|"); got != "Hello, ann #1|Hello, ann #2|Hello, ann #3" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("GreetClientStream", func(t *testing.T) {
		g := openGreet(ctx, t, p, "GreetClientStream")
		for _, n := range []string{"a", "b", "c"} {
			g.send(&greetpb.GreetRequest{Name: n})
		}
		g.s.CloseSend()
		if got := g.all(); len(got) != 1 || got[0] != "Hello, a,b,c" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("GreetStream", func(t *testing.T) {
		g := openGreet(ctx, t, p, "GreetStream")
		for _, n := range []string{"a", "b", "c"} {
			g.send(&greetpb.GreetRequest{Name: n})
			if got, err := g.recv(); err != nil || got != "Hello, "+n {
				t.Fatalf("answer to %s: %q, %v", n, got, err)
			}
		}
		g.s.CloseSend()
		if rest := g.all(); len(rest) != 0 {
			t.Errorf("after the half-close: %q", rest)
		}
	})
	t.Run("canceled midway", func(t *testing.T) {
		sctx, cancelStream := context.WithCancel(ctx)
		g := openGreet(sctx, t, p, "GreetServerStream")
		g.send(&greetpb.GreetStreamRequest{Name: "ann", Count: 1 << 30}) // would run for minutes
		g.s.CloseSend()
		for range 3 {
			if _, err := g.recv(); err != nil {
				t.Fatal(err)
			}
		}
		cancelStream()
		start := time.Now()
		var st *plugins.Status
		for {
			_, err := g.recv()
			if err == nil {
				continue // sent before the cancel
			}
			if !errors.As(err, &st) || st.Code != codes.Canceled {
				t.Errorf("Recv after the cancel: %v, want Canceled", err)
			}
			break
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("the stream ended %v after the cancel", took)
		}
		// The plugin serves on.
		o := callGreet(ctx, t, p, plugins.ProtoCall{Service: "greet.GreetService", Method: "Greet"}, "again")
		if o.st != nil || o.resp.Greeting != "Hello, again" {
			t.Errorf("Greet after the cancel = %+v", o)
		}
	})
	t.Run("killed mid-stream", func(t *testing.T) {
		g := openGreet(ctx, t, p, "GreetStream")
		g.send(&greetpb.GreetRequest{Name: "a"})
		if _, err := g.recv(); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(p.Pid(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err := g.recv()
		var st *plugins.Status
		if !errors.As(err, &st) || st.Code != codes.Unavailable || !strings.Contains(st.Message, "died during the stream") {
			t.Errorf("Recv when the plugin died: %v, want Unavailable saying it died", err)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("the stream failed %v after the kill", took)
		}
		b, _ := proto.Marshal(&greetpb.GreetRequest{Name: "b"})
		if err := g.s.Send(b); !errors.As(err, &st) || st.Code != codes.Unavailable {
			t.Errorf("Send after: %v, want Unavailable", err)
		}
		if _, err := p.OpenStream(ctx, plugins.ProtoCall{Service: "greet.GreetService", Method: "GreetStream"}); !errors.As(err, &st) || st.Code != codes.Unavailable {
			t.Errorf("OpenStream after: %v, want Unavailable", err)
		}
	})
}
