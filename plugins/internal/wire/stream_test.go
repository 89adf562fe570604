package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// streamFunc serves every stream with f; unary protobuf calls it refuses.
type streamFunc func(ctx context.Context, head []byte, s *Stream) (*Status, rpc.Metadata)

func (streamFunc) Prepare([]byte) (Runner, bool)      { return refusal(nil), true }
func (streamFunc) PrepareProto([]byte) (Runner, bool) { return refusal(nil), true }

func (f streamFunc) ServeStream(ctx context.Context, head []byte, s *Stream) (*Status, rpc.Metadata) {
	return f(ctx, head, s)
}

// echoStream sends its metadata back as the header, answers each message
// with "re:" and it, and ends, once the opener half-closed, with the
// status the metadata asks for and a trailer counting the messages.
func echoStream(_ context.Context, head []byte, s *Stream) (*Status, rpc.Metadata) {
	_, rawMD, _, err := ParseProtoCall(head)
	if err != nil {
		return &Status{Code: codes.Internal, Message: err.Error()}, nil
	}
	md, _ := ParseMetadata(rawMD)
	if err := s.SendHeader(md); err != nil {
		return &Status{Code: codes.Internal, Message: err.Error()}, nil
	}
	n := 0
	for {
		msg, err := s.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return &Status{Code: codes.Canceled, Message: err.Error()}, nil
		}
		n++
		if err := s.Send(append([]byte("re:"), msg...)); err != nil {
			return &Status{Code: codes.Internal, Message: err.Error()}, nil
		}
	}
	trailer := rpc.Metadata{{Key: "count", Value: fmt.Sprint(n)}}
	if code := md.Get("end-with"); code != "" {
		return &Status{Code: codes.FailedPrecondition, Message: code}, trailer
	}
	return nil, trailer
}

// openStream opens a stream on l with md.
func openStream(t *testing.T, ctx context.Context, l *Link, md rpc.Metadata) *Stream {
	t.Helper()
	head, err := AppendProtoCall(nil, MethodRef{1, 2}, md)
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.OpenStream(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A stream's life: the header, messages both ways, the half-close, and
// the end with its status and trailer.
func TestStreamLifecycle(t *testing.T) {
	a, _ := pair(t, nil, streamFunc(echoStream))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, end := range []string{"", "failed on purpose"} {
		md := rpc.Metadata{{Key: "x-user", Value: "ann"}}
		if end != "" {
			md = append(md, rpc.MetadataField{Key: "end-with", Value: end})
		}
		s := openStream(t, ctx, a, md)
		if h, err := s.Header(); err != nil || !reflect.DeepEqual(h, md) {
			t.Errorf("header %q, %v; want %q", h, err, md)
		}
		for i := range 3 {
			msg := []byte{'a' + byte(i)}
			if err := s.Send(msg); err != nil {
				t.Fatal(err)
			}
			got, err := s.Recv()
			if err != nil || string(got) != "re:"+string(msg) {
				t.Fatalf("Recv = %q, %v", got, err)
			}
		}
		if err := s.CloseSend(); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Recv(); err != io.EOF {
			t.Fatalf("Recv after the end = %q, %v; want io.EOF", got, err)
		}
		st, trailer := s.End()
		wantST := (*Status)(nil)
		if end != "" {
			wantST = &Status{Code: codes.FailedPrecondition, Message: end}
		}
		if !reflect.DeepEqual(st, wantST) || trailer.Get("count") != "3" {
			t.Errorf("end %v, trailer %q; want %v, count 3", st, trailer, wantST)
		}
		if err := s.Send([]byte("late")); err != io.EOF {
			t.Errorf("Send after the end = %v, want io.EOF", err)
		}
	}
}

// A side that serves no streams ends them Unimplemented.
func TestStreamUnimplemented(t *testing.T) {
	a, _ := pair(t, nil, echo(false))
	s := openStream(t, context.Background(), a, nil)
	if _, err := s.Recv(); err != io.EOF {
		t.Fatalf("Recv = %v, want io.EOF", err)
	}
	if st, _ := s.End(); st == nil || st.Code != codes.Unimplemented {
		t.Errorf("end = %v, want Unimplemented", st)
	}
}

// An opener that gives up ends the stream on both sides at once; the
// deadline travels with the open.
func TestStreamCancel(t *testing.T) {
	served := make(chan error, 1)
	deadline := make(chan time.Duration, 1)
	a, _ := pair(t, nil, streamFunc(func(ctx context.Context, _ []byte, s *Stream) (*Status, rpc.Metadata) {
		dl, _ := ctx.Deadline()
		deadline <- time.Until(dl)
		_, err := s.Recv() // nothing comes
		served <- err
		return nil, nil
	}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	s := openStream(t, ctx, a, nil)
	if left := <-deadline; left < 50*time.Second || left > time.Minute {
		t.Errorf("the server's deadline is %v away, want about a minute", left)
	}
	cancel()
	if _, err := s.Recv(); !errors.Is(err, context.Canceled) {
		t.Errorf("the opener's Recv = %v, want context.Canceled", err)
	}
	select {
	case err := <-served:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the server's Recv = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server's stream did not end when the opener canceled")
	}
	if err := s.Send([]byte("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("Send after the cancel = %v", err)
	}
}

// Neither side can make the other buffer more than a window of messages
// (or one larger message): a Send waits for credit, which comes back as
// the other side takes them.
func TestStreamCredit(t *testing.T) {
	release := make(chan struct{})
	var took atomic.Int64
	a, _ := pair(t, nil, streamFunc(func(ctx context.Context, _ []byte, s *Stream) (*Status, rpc.Metadata) {
		<-release
		for {
			msg, err := s.Recv()
			if err != nil {
				return nil, nil
			}
			took.Add(int64(len(msg)))
		}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := openStream(t, ctx, a, nil)
	msg := make([]byte, 32<<10)
	var sent atomic.Int64
	done := make(chan error, 1)
	go func() {
		for range 64 { // 2 MiB, eight windows
			if err := s.Send(msg); err != nil {
				done <- err
				return
			}
			sent.Add(int64(len(msg)))
		}
		done <- s.Send(make([]byte, 1<<20)) // larger than a window: once all is taken
	}()
	time.Sleep(200 * time.Millisecond)
	if n := sent.Load(); n > streamWindow {
		t.Errorf("%d bytes sent to a side that takes none; the window is %d", n, streamWindow)
	}
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("sending stalled at %d bytes once the other side took them", sent.Load())
	}
	s.CloseSend()
	if _, err := s.Recv(); err != io.EOF {
		t.Fatalf("Recv = %v", err)
	}
	if want := int64(64*len(msg) + 1<<20); took.Load() != want {
		t.Errorf("the server took %d bytes, want %d", took.Load(), want)
	}
}

// A peer that sends past its credit breaks the link.
func TestStreamOverrun(t *testing.T) {
	ca, cb := conns(t)
	defer cb.Close()
	l := NewLink(ca)
	l.Start(streamFunc(func(ctx context.Context, _ []byte, s *Stream) (*Status, rpc.Metadata) {
		<-ctx.Done()
		return nil, nil
	}))
	defer l.Close()
	go io.Copy(io.Discard, cb)
	frame := func(kind byte, rest []byte) []byte {
		b := binary4(uint32(2 + len(rest)))
		return append(append(b, kind, 1), rest...)
	}
	cb.Write(frame(frameOpen, []byte{0, 0, 0, 0}))
	msg := make([]byte, 100<<10)
	for range 4 { // 400 KiB, more than a window, with no credit back
		cb.Write(frame(frameSend, msg))
	}
	select {
	case <-l.Done():
		if !errors.Is(l.Err(), ErrCorrupt) {
			t.Errorf("Err = %v, want ErrCorrupt", l.Err())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a peer past its credit did not break the link")
	}
}

func binary4(n uint32) []byte { return []byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)} }

// When the link ends, every open stream fails at once, on both sides.
func TestStreamLinkDown(t *testing.T) {
	served := make(chan error, 1)
	started := make(chan struct{})
	a, b := pair(t, nil, streamFunc(func(ctx context.Context, _ []byte, s *Stream) (*Status, rpc.Metadata) {
		close(started)
		_, err := s.Recv()
		served <- err
		return nil, nil
	}))
	s := openStream(t, context.Background(), a, nil)
	<-started
	b.Close()
	start := time.Now()
	if _, err := s.Recv(); !errors.Is(err, ErrLinkDown) {
		t.Errorf("the opener's Recv = %v, want ErrLinkDown", err)
	}
	if err := <-served; err == nil {
		t.Error("the server's Recv returned no error")
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the streams failed %v after the link ended", took)
	}
	if _, err := a.OpenStream(context.Background(), []byte{0, 0, 0}); !errors.Is(err, ErrLinkDown) {
		t.Errorf("OpenStream after = %v, want ErrLinkDown", err)
	}
}

// Many streams at once, each with its own messages: none gets another's.
func TestStreamsConcurrent(t *testing.T) {
	a, _ := pair(t, nil, streamFunc(echoStream))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errs := make(chan error, 32)
	for g := range 32 {
		go func() {
			errs <- func() error {
				head, _ := AppendProtoCall(nil, MethodRef{}, nil)
				s, err := a.OpenStream(ctx, head)
				if err != nil {
					return err
				}
				for i := range 50 {
					msg := bytes.Repeat([]byte{byte(g), byte(i)}, 1+(g*131+i*17)%5000)
					if err := s.Send(msg); err != nil {
						return err
					}
					got, err := s.Recv()
					if err != nil || !bytes.Equal(got, append([]byte("re:"), msg...)) {
						return fmt.Errorf("stream %d message %d: %d bytes back, %v", g, i, len(got), err)
					}
				}
				s.CloseSend()
				if _, err := s.Recv(); err != io.EOF {
					return fmt.Errorf("stream %d: %v at the end", g, err)
				}
				return nil
			}()
		}()
	}
	for range 32 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
