package triple

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // registers the gzip compressor with grpc-go
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

func callCtx5s(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A unary call reaches the handler and its answer the client, whether the
// handler answers on the reader or from a goroutine of its own.
func TestUnaryEcho(t *testing.T) {
	_, addr := start(t, Config{}, router{"greet.Greeter/Echo": echo, "greet.Greeter/Async": asyncUnary(echo)})
	cc := dial(t, addr)
	for _, m := range []string{"/greet.Greeter/Echo", "/greet.Greeter/Async"} {
		resp, err := invoke(callCtx5s(t), cc, m, []byte("hello"))
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if string(resp) != "echo:hello" {
			t.Errorf("%s = %q, want echo:hello", m, resp)
		}
	}
}

// The call's headers reach the handler as Call fields and metadata (-bin
// values decoded); the handler's trailer metadata reaches the client.
func TestUnaryMetadata(t *testing.T) {
	// The race detector does not see the socket order the handler's
	// write before the client's read (the server uses raw system calls):
	// what the handler saw comes back through a channel.
	calls := make(chan Call, 1)
	h := router{"greet.Greeter/Meta": unaryFunc(func(ctx context.Context, c *Call, req []byte) ([]byte, rpc.Metadata, *Status) {
		calls <- *c
		return nil, rpc.Metadata{{Key: "x-answer", Value: "42"}, {Key: "x-raw-bin", Value: "\x00\x01\xff"}, {Key: "grpc-status", Value: "13"}}, nil
	})}
	_, addr := start(t, Config{}, h)
	cc := dial(t, addr)
	ctx := metadata.AppendToOutgoingContext(callCtx5s(t),
		"tri-service-version", "1.0.0", "tri-service-group", "g1", "x-id-bin", "\x00\xfe")
	var trailer metadata.MD
	if _, err := invoke(ctx, cc, "/greet.Greeter/Meta", nil, grpc.Trailer(&trailer)); err != nil {
		t.Fatal(err)
	}
	got := <-calls
	if got.Service != "greet.Greeter" || got.Method != "Meta" || got.Codec != "proto" || got.HTTP1 {
		t.Errorf("call = %+v", got)
	}
	if !got.Peer.Addr().IsLoopback() {
		t.Errorf("peer = %v, want loopback", got.Peer)
	}
	if dl := time.Until(got.Deadline); dl <= 0 || dl > 5*time.Second {
		t.Errorf("deadline in %v, want within 5s", dl)
	}
	for k, want := range map[string]string{"tri-service-version": "1.0.0", "tri-service-group": "g1", "x-id-bin": "\x00\xfe"} {
		if v := got.Header.Get(k); v != want {
			t.Errorf("header %s = %q, want %q", k, v, want)
		}
	}
	for _, k := range []string{"content-type", "te", "grpc-timeout", ":path"} {
		if got.Header.Get(k) != "" {
			t.Errorf("transport header %s handed over as metadata", k)
		}
	}
	if v := trailer.Get("x-answer"); len(v) != 1 || v[0] != "42" {
		t.Errorf("trailer x-answer = %q", v)
	}
	if v := trailer.Get("x-raw-bin"); len(v) != 1 || v[0] != "\x00\x01\xff" {
		t.Errorf("trailer x-raw-bin = %q", v)
	}
}

// A handler's status reaches the client: code and message, the message
// percent-encoded on the wire and decoded by grpc-go; codes outside 0..16
// go out as Unknown, but dubbo-go's BizError (17), which a handler answers
// dubbo-go's client only.
func TestUnaryStatus(t *testing.T) {
	for _, c := range []struct {
		st       *Status
		wantCode codes.Code
		wantMsg  string
	}{
		{Errorf(NotFound, "no such user"), codes.NotFound, "no such user"},
		{Errorf(InvalidArgument, "100%% ünïcode\nand a newline"), codes.InvalidArgument, "100% ünïcode\nand a newline"},
		{Errorf(Internal, ""), codes.Internal, ""},
		{&Status{Code: 99, Message: "odd"}, codes.Unknown, "odd"},
		{Errorf(Unauthenticated, "who?"), codes.Unauthenticated, "who?"},
		{Errorf(BizError, "boom"), codes.Code(17), "boom"},
	} {
		t.Run(c.wantCode.String(), func(t *testing.T) {
			h := router{"s/M": unaryFunc(func(context.Context, *Call, []byte) ([]byte, rpc.Metadata, *Status) {
				return []byte("ignored"), nil, c.st
			})}
			_, addr := start(t, Config{}, h)
			_, err := invoke(callCtx5s(t), dial(t, addr), "/s/M", nil)
			st := status.Convert(err)
			if st.Code() != c.wantCode || st.Message() != c.wantMsg {
				t.Errorf("status = %v %q, want %v %q", st.Code(), st.Message(), c.wantCode, c.wantMsg)
			}
		})
	}
}

// A status's details travel in grpc-status-details-bin, as grpc-go reads
// them.
func TestUnaryStatusDetails(t *testing.T) {
	want, err := status.New(codes.NotFound, "no such user").WithDetails(wrapperspb.String("user 7"))
	if err != nil {
		t.Fatal(err)
	}
	details, err := proto.Marshal(want.Proto())
	if err != nil {
		t.Fatal(err)
	}
	h := router{"s/M": unaryFunc(func(context.Context, *Call, []byte) ([]byte, rpc.Metadata, *Status) {
		return nil, nil, &Status{Code: NotFound, Message: "no such user", Details: details}
	})}
	_, addr := start(t, Config{}, h)
	_, err = invoke(callCtx5s(t), dial(t, addr), "/s/M", nil)
	got := status.Convert(err).Details()
	if len(got) != 1 {
		t.Fatalf("details %v, want one", got)
	}
	if v, ok := got[0].(*wrapperspb.StringValue); !ok || v.GetValue() != "user 7" {
		t.Errorf("detail %v, want StringValue user 7", got[0])
	}
}

// An unknown service or method is Unimplemented, as the handler says.
func TestUnaryUnknownMethod(t *testing.T) {
	_, addr := start(t, Config{}, router{"s/M": echo})
	_, err := invoke(callCtx5s(t), dial(t, addr), "/s/Nope", nil)
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("err = %v, want Unimplemented", err)
	}
}

// The client's deadline becomes the handler's: when it passes, the client
// gets DeadlineExceeded and the handler's context ends with it.
func TestUnaryDeadline(t *testing.T) {
	ended := make(chan error, 1)
	h := router{"s/Slow": asyncUnary(func(ctx context.Context, _ *Call, _ []byte) ([]byte, rpc.Metadata, *Status) {
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, nil, Errorf(DeadlineExceeded, "%v", ctx.Err())
	})}
	_, addr := start(t, Config{}, h)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := invoke(ctx, dial(t, addr), "/s/Slow", nil)
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("err = %v, want DeadlineExceeded", err)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			t.Errorf("handler's ctx ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context did not end")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the call took %v with a 200ms deadline", d)
	}
}

// A client that cancels a call ends the handler's context.
func TestUnaryCancel(t *testing.T) {
	started, ended := make(chan struct{}), make(chan error, 1)
	h := router{"s/Wait": asyncUnary(func(ctx context.Context, _ *Call, _ []byte) ([]byte, rpc.Metadata, *Status) {
		close(started)
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, nil, nil
	})}
	_, addr := start(t, Config{}, h)
	cc := dial(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := invoke(ctx, cc, "/s/Wait", nil)
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; status.Code(err) != codes.Canceled {
		t.Errorf("err = %v, want Canceled", err)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("handler's ctx ended with %v, want Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context did not end")
	}
}

// Messages near MaxMessage go through both ways (a response larger than
// the client's window waits for it); one byte more is ResourceExhausted,
// plain or gzipped (a compression bomb inflates no further than the
// limit).
func TestUnaryLargeMessages(t *testing.T) {
	const limit = 1 << 20
	h := router{"s/Echo": unaryFunc(func(_ context.Context, _ *Call, req []byte) ([]byte, rpc.Metadata, *Status) {
		return append([]byte(nil), req...), nil, nil
	})}
	_, addr := start(t, Config{MaxMessage: limit}, h)
	cc := dial(t, addr, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(4<<20), grpc.MaxCallSendMsgSize(4<<20)))
	for _, c := range []struct {
		name string
		size int
		gzip bool
		want codes.Code
	}{
		{"at the limit", limit, false, codes.OK},
		{"past the limit", limit + 1, false, codes.ResourceExhausted},
		{"gzip at the limit", limit, true, codes.OK},
		{"gzip bomb", 4 * limit, true, codes.ResourceExhausted},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := bytes.Repeat([]byte("0123456789abcdef"), c.size/16+1)[:c.size]
			var opts []grpc.CallOption
			if c.gzip {
				opts = append(opts, grpc.UseCompressor("gzip"))
			}
			resp, err := invoke(callCtx5s(t), cc, "/s/Echo", req, opts...)
			if status.Code(err) != c.want {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if c.want == codes.OK && !bytes.Equal(resp, req) {
				t.Errorf("response of %d bytes differs from the request", len(resp))
			}
		})
	}
}

// gzip both ways: a compressed request is inflated for the handler, and
// the response to it is compressed (grpc-go inflates it again).
func TestUnaryGzip(t *testing.T) {
	reqs := make(chan []byte, 1)
	h := router{"s/Echo": unaryFunc(func(_ context.Context, _ *Call, req []byte) ([]byte, rpc.Metadata, *Status) {
		reqs <- req
		return append([]byte(nil), req...), nil, nil
	})}
	_, addr := start(t, Config{}, h)
	req := []byte(strings.Repeat("compress me ", 100))
	resp, err := invoke(callCtx5s(t), dial(t, addr), "/s/Echo", req, grpc.UseCompressor("gzip"))
	if err != nil {
		t.Fatal(err)
	}
	if got := <-reqs; !bytes.Equal(got, req) || !bytes.Equal(resp, req) {
		t.Errorf("handler got %d bytes, client %d, want %d", len(got), len(resp), len(req))
	}
}

// Many concurrent calls on one connection each get their own answer.
func TestUnaryConcurrent(t *testing.T) {
	_, addr := start(t, Config{}, router{"s/Echo": echo, "s/Async": asyncUnary(echo)})
	cc := dial(t, addr)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			method := "/s/Echo"
			if g%2 == 1 {
				method = "/s/Async"
			}
			for i := range 100 {
				req := fmt.Sprintf("%d-%d", g, i)
				resp, err := invoke(context.Background(), cc, method, []byte(req))
				if err == nil && string(resp) != "echo:"+req {
					err = fmt.Errorf("%s answered %q to %q", method, resp, req)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A Unary that blocks the reader anyway (against the contract) holds up
// its connection for a few milliseconds only: the reading is handed to a
// new goroutine and the other calls of the connection go on.
func TestUnaryBlockingHandlerHandsOver(t *testing.T) {
	h := router{"s/Echo": echo, "s/Sleep": unaryFunc(func(context.Context, *Call, []byte) ([]byte, rpc.Metadata, *Status) {
		time.Sleep(time.Second)
		return []byte("slept"), nil, nil
	})}
	_, addr := start(t, Config{}, h)
	cc := dial(t, addr)
	slept := make(chan error, 1)
	go func() {
		_, err := invoke(context.Background(), cc, "/s/Sleep", nil)
		slept <- err
	}()
	time.Sleep(50 * time.Millisecond) // the reader is asleep in the handler by now
	t0 := time.Now()
	for range 10 {
		if _, err := invoke(callCtx5s(t), cc, "/s/Echo", nil); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(t0); d > 500*time.Millisecond {
		t.Errorf("10 calls took %v beside a blocked handler", d)
	}
	if err := <-slept; err != nil {
		t.Errorf("the blocking call: %v", err)
	}
}
