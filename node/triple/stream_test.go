package triple

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// streamMethods serve the three streaming kinds.
var streamMethods = router{
	// Count answers "<n>" with n messages "0".."n-1", header and trailer
	// metadata around them.
	"s/Count": streamFunc{rpc.ServerStream, func(_ context.Context, _ *Call, s Stream) *Status {
		req, err := s.Recv()
		if err != nil {
			return Errorf(Internal, "recv: %v", err)
		}
		n, _ := strconv.Atoi(string(req))
		if err := s.SetHeader(rpc.Metadata{{Key: "x-count", Value: string(req)}}); err != nil {
			return Errorf(Internal, "%v", err)
		}
		for i := range n {
			if err := s.Send([]byte(strconv.Itoa(i))); err != nil {
				return Errorf(Internal, "send: %v", err)
			}
		}
		if _, err := s.Recv(); err != io.EOF {
			return Errorf(Internal, "second Recv = %v, want io.EOF", err)
		}
		s.SetTrailer(rpc.Metadata{{Key: "x-sent", Value: strconv.Itoa(n)}})
		return nil
	}},
	// Sum adds the numbers the client sends.
	"s/Sum": streamFunc{rpc.ClientStream, func(_ context.Context, _ *Call, s Stream) *Status {
		sum := 0
		for {
			req, err := s.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				return Errorf(Internal, "recv: %v", err)
			}
			n, _ := strconv.Atoi(string(req))
			sum += n
		}
		if err := s.Send([]byte(strconv.Itoa(sum))); err != nil {
			return Errorf(Internal, "send: %v", err)
		}
		return nil
	}},
	// Echo answers each message with itself, until the client half-closes;
	// a message "fail" ends the call with FailedPrecondition.
	"s/Echo": streamFunc{rpc.BidiStream, func(_ context.Context, _ *Call, s Stream) *Status {
		for {
			req, err := s.Recv()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return Errorf(Internal, "recv: %v", err)
			}
			if string(req) == "fail" {
				return Errorf(FailedPrecondition, "asked to fail")
			}
			if err := s.Send(req); err != nil {
				return Errorf(Internal, "send: %v", err)
			}
		}
	}},
}

func TestServerStream(t *testing.T) {
	_, addr := start(t, Config{}, streamMethods)
	cs := openStream(callCtx5s(t), t, dial(t, addr), "/s/Count", rpc.ServerStream)
	if err := cs.SendMsg(ptr([]byte("50"))); err != nil {
		t.Fatal(err)
	}
	if err := cs.CloseSend(); err != nil {
		t.Fatal(err)
	}
	hdr, err := cs.Header()
	if err != nil {
		t.Fatal(err)
	}
	if v := hdr.Get("x-count"); len(v) != 1 || v[0] != "50" {
		t.Errorf("header x-count = %q", v)
	}
	for i := range 50 {
		var msg []byte
		if err := cs.RecvMsg(&msg); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if string(msg) != strconv.Itoa(i) {
			t.Fatalf("message %d = %q", i, msg)
		}
	}
	var msg []byte
	if err := cs.RecvMsg(&msg); err != io.EOF {
		t.Fatalf("after the messages: %v, want io.EOF", err)
	}
	if v := cs.Trailer().Get("x-sent"); len(v) != 1 || v[0] != "50" {
		t.Errorf("trailer x-sent = %q", v)
	}
}

func TestClientStream(t *testing.T) {
	_, addr := start(t, Config{}, streamMethods)
	cs := openStream(callCtx5s(t), t, dial(t, addr), "/s/Sum", rpc.ClientStream)
	want := 0
	for i := range 100 {
		want += i
		if err := cs.SendMsg(ptr([]byte(strconv.Itoa(i)))); err != nil {
			t.Fatal(err)
		}
	}
	if err := cs.CloseSend(); err != nil {
		t.Fatal(err)
	}
	var msg []byte
	if err := cs.RecvMsg(&msg); err != nil {
		t.Fatal(err)
	}
	if string(msg) != strconv.Itoa(want) {
		t.Errorf("sum = %s, want %d", msg, want)
	}
}

// A bidi stream answers message by message; a status after messages ends
// the stream with it.
func TestBidiStream(t *testing.T) {
	_, addr := start(t, Config{}, streamMethods)
	cc := dial(t, addr)
	cs := openStream(callCtx5s(t), t, cc, "/s/Echo", rpc.BidiStream)
	for i := range 200 {
		req := []byte(fmt.Sprintf("msg %d", i))
		if err := cs.SendMsg(&req); err != nil {
			t.Fatal(err)
		}
		var resp []byte
		if err := cs.RecvMsg(&resp); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(resp, req) {
			t.Fatalf("echo %q, want %q", resp, req)
		}
	}
	if err := cs.SendMsg(ptr([]byte("fail"))); err != nil {
		t.Fatal(err)
	}
	var resp []byte
	err := cs.RecvMsg(&resp)
	if st := status.Convert(err); st.Code() != codes.FailedPrecondition || st.Message() != "asked to fail" {
		t.Errorf("after fail: %v", err)
	}
}

// Messages larger than the stream window go both ways on a bidi stream
// (each reserves its length from the connection's large-message memory),
// several streams at once.
func TestStreamLargeMessages(t *testing.T) {
	_, addr := start(t, Config{MaxMessage: 1 << 20}, streamMethods)
	cc := dial(t, addr, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(2<<20)))
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			errs <- func() error {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				cs, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/s/Echo")
				if err != nil {
					return err
				}
				for i := range 3 {
					req := bytes.Repeat([]byte{byte('a' + g), byte(i)}, 300<<10)
					if err := cs.SendMsg(&req); err != nil {
						return err
					}
					var resp []byte
					if err := cs.RecvMsg(&resp); err != nil {
						return err
					}
					if !bytes.Equal(resp, req) {
						return fmt.Errorf("stream %d message %d: echo of %d bytes differs", g, i, len(resp))
					}
				}
				return cs.CloseSend()
			}()
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// A client that cancels a stream ends Serve's context and its Send.
func TestStreamCancel(t *testing.T) {
	started, ended := make(chan struct{}), make(chan error, 1)
	h := router{"s/Forever": streamFunc{rpc.ServerStream, func(ctx context.Context, _ *Call, s Stream) *Status {
		close(started)
		for {
			if err := s.Send([]byte("tick")); err != nil {
				<-ctx.Done()
				ended <- ctx.Err()
				return Errorf(Canceled, "%v", err)
			}
		}
	}}}
	_, addr := start(t, Config{}, h)
	ctx, cancel := context.WithCancel(context.Background())
	cs := openStream(ctx, t, dial(t, addr), "/s/Forever", rpc.ServerStream)
	if err := cs.SendMsg(ptr([]byte("go"))); err != nil {
		t.Fatal(err)
	}
	<-started
	var msg []byte
	if err := cs.RecvMsg(&msg); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Serve's ctx ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve's context did not end")
	}
}

// Metadata sent by the client reaches Serve's Call.
func TestStreamMetadata(t *testing.T) {
	got := make(chan string, 1)
	h := router{"s/Meta": streamFunc{rpc.BidiStream, func(_ context.Context, c *Call, s Stream) *Status {
		got <- c.Header.Get("x-who")
		return nil
	}}}
	_, addr := start(t, Config{}, h)
	ctx := metadata.AppendToOutgoingContext(callCtx5s(t), "x-who", "me")
	cs := openStream(ctx, t, dial(t, addr), "/s/Meta", rpc.BidiStream)
	var msg []byte
	if err := cs.RecvMsg(&msg); err != io.EOF {
		t.Fatalf("RecvMsg = %v, want io.EOF", err)
	}
	if v := <-got; v != "me" {
		t.Errorf("x-who = %q", v)
	}
}

func ptr(b []byte) *[]byte { return &b }
