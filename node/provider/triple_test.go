package provider_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/dubbo-lab/dubbo/examples/greet/greetpb"
	"github.com/dubbo-lab/dubbo/internal/pluginsvc"
	"github.com/dubbo-lab/dubbo/internal/testkit/child"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/triple/client"
	"github.com/dubbo-lab/dubbo/plugins"
)

// built are the example plugins, built by the first test that needs them
// and removed when the tests end.
var built struct {
	sync.Mutex
	dir string
	err error
}

func examplePlugins() (string, error) {
	built.Lock()
	defer built.Unlock()
	if built.dir == "" && built.err == nil {
		built.dir, built.err = child.Build("../../examples/greet", "../../examples/greeter")
	}
	return built.dir, built.err
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// startPlugin starts the example plugin name (greet or greeter).
func startPlugin(t testing.TB, name string) *plugins.Plugin {
	t.Helper()
	dir, err := examplePlugins()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pl, err := plugins.Start(ctx, plugins.Config{Path: filepath.Join(dir, name), Name: name, Logger: quietLogger(), StartTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pl.Close() })
	return pl
}

// exportPlugin exports what pl serves, each service changed by adjust
// first.
func exportPlugin(t testing.TB, p *provider.Provider, pl *plugins.Plugin, adjust ...func(*provider.Service)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, sd := range pl.Services() {
		svc := pluginsvc.Service(sd, pl)
		for _, a := range adjust {
			a(&svc)
		}
		if err := p.Export(ctx, svc); err != nil {
			t.Fatal(err)
		}
	}
}

// startTriple starts a provider that serves tri only, on a free port.
func startTriple(t testing.TB, cfg provider.Config, opts provider.Options) *provider.Provider {
	t.Helper()
	cfg.Protocol.Name, cfg.Protocol.Host, cfg.Protocol.Port = provider.ProtocolTriple, "127.0.0.1", -1
	if cfg.Application == "" {
		cfg.Application = "greet-app"
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := provider.Start(ctx, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// tripleClient is our Triple client of addr, connected.
func tripleClient(t testing.TB, addr string) *client.Client {
	t.Helper()
	c := client.New(addr, client.Config{})
	t.Cleanup(func() { c.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for !c.Available() {
		if time.Now().After(deadline) {
			t.Fatalf("no connection to %s", addr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return c
}

// grpcConn is a plain grpc-go client connection to addr.
func grpcConn(t testing.TB, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.Dial(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func encode(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func greeting(t testing.TB, b []byte) string {
	t.Helper()
	var r greetpb.GreetResponse
	if err := proto.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r.Greeting
}

const greetService = "greet.GreetService"

// greetThrough makes the four calls of greet.GreetService with stream
// opening and unary calling as given, and checks the answers.
func greetThrough(t *testing.T, unary func(method string, req []byte) ([]byte, error),
	stream func(method string, reqs ...[]byte) ([]string, error)) {
	t.Helper()
	resp, err := unary("Greet", encode(t, &greetpb.GreetRequest{Name: "x"}))
	if err != nil || greeting(t, resp) != "Hello, x" {
		t.Errorf("Greet: %q, %v", resp, err)
	}
	for _, tc := range []struct {
		method string
		reqs   [][]byte
		want   string
	}{
		{"GreetServerStream", [][]byte{encode(t, &greetpb.GreetStreamRequest{Name: "x", Count: 3})}, "Hello, x #1|Hello, x #2|Hello, x #3"},
		{"GreetClientStream", [][]byte{encode(t, &greetpb.GreetRequest{Name: "a"}), encode(t, &greetpb.GreetRequest{Name: "b"})}, "Hello, a,b"},
		{"GreetStream", [][]byte{encode(t, &greetpb.GreetRequest{Name: "a"}), encode(t, &greetpb.GreetRequest{Name: "b"})}, "Hello, a|Hello, b"},
	} {
		got, err := stream(tc.method, tc.reqs...)
		if err != nil || strings.Join(got, "|") != tc.want {
			t.Errorf("%s: %q, %v; want %s", tc.method, got, err, tc.want)
		}
	}
}

// The protobuf service of a plugin, served over Triple: all four kinds of
// methods, through our Triple client and through a plain grpc-go client;
// the messages reach the plugin as the client encoded them.
func TestTripleServesProtobufPlugin(t *testing.T) {
	p := startTriple(t, provider.Config{}, provider.Options{})
	exportPlugin(t, p, startPlugin(t, "greet"))
	ctx := testCtx(t)

	t.Run("our client", func(t *testing.T) {
		c := tripleClient(t, p.Addr())
		greetThrough(t, func(method string, req []byte) ([]byte, error) {
			res, err := c.Invoke(ctx, &rpc.Invocation{Service: greetService, Method: method, Args: []any{rpc.Message{Bytes: req}}})
			if err != nil {
				return nil, err
			}
			return res.Value.(rpc.Message).Bytes, nil
		}, func(method string, reqs ...[]byte) ([]string, error) {
			s, err := c.Stream(ctx, &rpc.Invocation{Service: greetService, Method: method})
			if err != nil {
				return nil, err
			}
			for _, r := range reqs {
				if err := s.Send(rpc.Message{Bytes: r}); err != nil {
					return nil, err
				}
			}
			if err := s.CloseSend(); err != nil {
				return nil, err
			}
			var out []string
			for {
				m, err := s.Recv()
				if err == io.EOF {
					return out, nil
				}
				if err != nil {
					return out, err
				}
				out = append(out, greeting(t, m.Bytes))
			}
		})
	})

	t.Run("grpc-go", func(t *testing.T) {
		cc := grpcConn(t, p.Addr())
		greetThrough(t, func(method string, req []byte) ([]byte, error) {
			var in greetpb.GreetRequest
			var out greetpb.GreetResponse
			if err := proto.Unmarshal(req, &in); err != nil {
				return nil, err
			}
			if err := cc.Invoke(ctx, "/"+greetService+"/"+method, &in, &out); err != nil {
				return nil, err
			}
			return proto.Marshal(&out)
		}, grpcStream(ctx, t, cc, nil))
	})
}

// grpcStream opens a stream of a greet method with grpc-go, sends the
// requests (the GreetStreamRequest of a server stream, GreetRequests
// otherwise), closes and reads the greetings.
func grpcStream(ctx context.Context, t *testing.T, cc *grpc.ClientConn, opts []grpc.CallOption) func(method string, reqs ...[]byte) ([]string, error) {
	return func(method string, reqs ...[]byte) ([]string, error) {
		s, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/"+greetService+"/"+method, opts...)
		if err != nil {
			return nil, err
		}
		for _, r := range reqs {
			var m proto.Message = &greetpb.GreetRequest{}
			if method == "GreetServerStream" {
				m = &greetpb.GreetStreamRequest{}
			}
			if err := proto.Unmarshal(r, m); err != nil {
				return nil, err
			}
			if err := s.SendMsg(m); err != nil {
				return nil, err
			}
		}
		if err := s.CloseSend(); err != nil {
			return nil, err
		}
		var out []string
		for {
			var r greetpb.GreetResponse
			err := s.RecvMsg(&r)
			if err == io.EOF {
				return out, nil
			}
			if err != nil {
				return out, err
			}
			out = append(out, r.Greeting)
		}
	}
}

// jsonCodec is protobuf JSON for grpc-go: content-type
// application/grpc+json.
type jsonCodec struct{}

func (jsonCodec) Name() string                    { return "json" }
func (jsonCodec) Marshal(v any) ([]byte, error)   { return protojson.Marshal(v.(proto.Message)) }
func (jsonCodec) Unmarshal(b []byte, v any) error { return protojson.Unmarshal(b, v.(proto.Message)) }

// JSON clients of a protobuf service: application/grpc+json over HTTP/2
// (every kind of method) and application/json over HTTP/1.1 (unary), the
// messages translated with the plugin's descriptors; JSON that does not
// fit the message is InvalidArgument, or HTTP 400.
func TestTripleJSON(t *testing.T) {
	p := startTriple(t, provider.Config{}, provider.Options{})
	exportPlugin(t, p, startPlugin(t, "greet"))
	ctx := testCtx(t)

	t.Run("grpc+json", func(t *testing.T) {
		cc := grpcConn(t, p.Addr())
		opts := []grpc.CallOption{grpc.ForceCodec(jsonCodec{})}
		greetThrough(t, func(method string, req []byte) ([]byte, error) {
			var in greetpb.GreetRequest
			var out greetpb.GreetResponse
			if err := proto.Unmarshal(req, &in); err != nil {
				return nil, err
			}
			if err := cc.Invoke(ctx, "/"+greetService+"/"+method, &in, &out, opts...); err != nil {
				return nil, err
			}
			return proto.Marshal(&out)
		}, grpcStream(ctx, t, cc, opts))

		// A field the message does not have.
		err := cc.Invoke(ctx, "/"+greetService+"/Greet", rawJSON(`{"nme":"x"}`), new(rawJSON), grpc.ForceCodec(rawCodec{"json"}))
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "nme") {
			t.Errorf("Greet({nme}) over grpc+json: %v, want InvalidArgument naming the field", err)
		}
	})

	t.Run("HTTP/1.1", func(t *testing.T) {
		for _, tc := range []struct {
			body, want string
			status     int
		}{
			{`{"name":"x"}`, `{"greeting":"Hello, x"}`, 200},
			{`{"nme":"x"}`, `"code":"invalid_argument"`, 400},
			{`not json`, `"code":"invalid_argument"`, 400},
		} {
			resp, err := http.Post("http://"+p.Addr()+"/"+greetService+"/Greet", "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !bytes.Contains(body, []byte(tc.want)) {
				t.Errorf("POST %s: %d %s, want %d with %s", tc.body, resp.StatusCode, body, tc.status, tc.want)
			}
		}
	})
}

// rawJSON is a message given as JSON text, for rawCodec.
type rawJSON []byte

// rawCodec sends and receives bytes as they are, under a content-type
// subtype.
type rawCodec struct{ name string }

func (c rawCodec) Name() string { return c.name }
func (c rawCodec) Marshal(v any) ([]byte, error) {
	switch v := v.(type) {
	case rawJSON:
		return v, nil
	case []byte:
		return v, nil
	}
	return nil, errors.New("rawCodec: not bytes")
}
func (c rawCodec) Unmarshal(b []byte, v any) error {
	switch v := v.(type) {
	case *rawJSON:
		*v = append((*v)[:0], b...)
	case *[]byte:
		*v = append((*v)[:0], b...)
	default:
		return errors.New("rawCodec: not bytes")
	}
	return nil
}
