package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/callctx"
	"github.com/dubbo-lab/dubbo/internal/fastpath"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// conns returns the two ends of a link's pipes.
func conns(t *testing.T) (a, b net.Conn) {
	t.Helper()
	a, child, err := NewLinkPipes()
	if err != nil {
		t.Fatal(err)
	}
	return a, child.Conn()
}

// pair returns two started links joined by pipes; a serves aInv, b
// serves bInv.
func pair(t *testing.T, aInv, bInv Invoker) (a, b *Link) {
	t.Helper()
	ca, cb := conns(t)
	a, b = NewLink(ca), NewLink(cb)
	a.Start(aInv)
	b.Start(bInv)
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// invokerFunc serves every call with f, inline or not.
type invokerFunc struct {
	f      func(ctx context.Context, call []byte) []byte
	inline bool
}

func (i invokerFunc) Prepare(call []byte) (Runner, bool) {
	return RunFunc(func(ctx context.Context) []byte { return i.f(ctx, call) }), i.inline
}

func echo(inline bool) Invoker {
	return invokerFunc{f: func(_ context.Context, call []byte) []byte { return append([]byte("re:"), call...) }, inline: inline}
}

func TestLinkCallsBothWays(t *testing.T) {
	for _, inline := range []bool{false, true} {
		a, b := pair(t, echo(inline), echo(inline))
		for _, c := range []struct {
			from *Link
			msg  string
		}{{a, "from a"}, {b, "from b"}, {a, ""}} {
			got, err := c.from.Call(context.Background(), []byte(c.msg))
			if err != nil || string(got) != "re:"+c.msg {
				t.Errorf("inline=%v: Call(%q) = %q, %v", inline, c.msg, got, err)
			}
		}
	}
}

// An inline call that calls back through the link needs the reader to get
// its reply: the link hands the reading to another goroutine first.
func TestLinkInlineCallOut(t *testing.T) {
	var b atomic.Pointer[Link] // set once the pair is up; the socket orders it for us, not for the race detector
	callsOut := invokerFunc{inline: true, f: func(ctx context.Context, call []byte) []byte {
		reply, err := b.Load().Call(ctx, []byte("inner"))
		if err != nil {
			return []byte("error: " + err.Error())
		}
		return append(append([]byte(nil), call...), reply...)
	}}
	a, bl := pair(t, echo(false), callsOut)
	b.Store(bl)
	for i := range 5 { // the reader keeps working after each hand-over
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		got, err := a.Call(ctx, []byte("outer+"))
		cancel()
		if err != nil || string(got) != "outer+re:inner" {
			t.Fatalf("call %d = %q, %v", i, got, err)
		}
	}
}

func TestLinkCancel(t *testing.T) {
	canceled := make(chan error, 1)
	slow := invokerFunc{f: func(ctx context.Context, _ []byte) []byte {
		<-ctx.Done()
		canceled <- ctx.Err()
		return nil
	}}
	a, _ := pair(t, nil, slow)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := a.Call(ctx, []byte("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Call = %v, want context.Canceled", err)
	}
	select {
	case err := <-canceled:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("handler's ctx ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context did not end after the caller gave up")
	}

	// The deadline travels with the call.
	deadline := make(chan time.Duration, 1)
	a2, _ := pair(t, nil, invokerFunc{f: func(ctx context.Context, _ []byte) []byte {
		dl, ok := ctx.Deadline()
		if !ok {
			dl = time.Now()
		}
		deadline <- time.Until(dl)
		return nil
	}})
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := a2.Call(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if left := <-deadline; left < 50*time.Second || left > time.Minute {
		t.Errorf("the handler's deadline was %v away, want about a minute", left)
	}
}

// A caller of CallAsync that gives up (its deadline passes, its context is
// cancelled) gets that error although no reply comes, and the other side's
// handler sees its context end; the link finds such callers by itself,
// without the caller asking for Done (which would arm a timer per call).
func TestLinkCallAsyncGivesUp(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	ended := make(chan error, 1)
	handler := invokerFunc{f: func(ctx context.Context, call []byte) []byte {
		if string(call) == "ignore" {
			<-release // no reply while the test runs
			return nil
		}
		<-ctx.Done()
		ended <- ctx.Err()
		return []byte("late")
	}}
	a, _ := pair(t, nil, handler)

	got := make(chan error, 1)
	ctx := callctx.New(context.Background(), time.Now().Add(30*time.Millisecond))
	a.CallAsync(ctx, []byte("ignore"), func(_ []byte, err error) { got <- err })
	select {
	case err := <-got:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("past the deadline: done got %v, want %v", err, context.DeadlineExceeded)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("done not called 5s after the deadline")
	}

	cancelled, cancel := context.WithCancel(context.Background())
	a.CallAsync(cancelled, []byte("x"), func(_ []byte, err error) { got <- err })
	time.AfterFunc(30*time.Millisecond, cancel)
	select {
	case err := <-got:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled: done got %v, want %v", err, context.Canceled)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("done not called 5s after the caller cancelled")
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the handler's context ended with %v, want the cancel the caller sent", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context did not end after the caller cancelled")
	}
}

func TestLinkTooBig(t *testing.T) {
	a, _ := pair(t, nil, echo(false))
	if _, err := a.Call(context.Background(), make([]byte, maxFramed+1)); !errors.Is(err, ErrTooBig) {
		t.Fatalf("Call = %v, want ErrTooBig", err)
	}
	// The link still works.
	if got, err := a.Call(context.Background(), []byte("ok")); err != nil || string(got) != "re:ok" {
		t.Fatalf("Call after = %q, %v", got, err)
	}
}

// Calls waiting when the other side goes away fail at once.
func TestLinkDown(t *testing.T) {
	started := make(chan struct{})
	hang := invokerFunc{f: func(ctx context.Context, _ []byte) []byte {
		close(started)
		<-ctx.Done()
		return nil
	}}
	a, b := pair(t, nil, hang)
	errc := make(chan error, 1)
	go func() {
		_, err := a.Call(context.Background(), []byte("x"))
		errc <- err
	}()
	<-started
	b.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrLinkDown) {
			t.Errorf("Call = %v, want ErrLinkDown", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not fail when the other side closed")
	}
	if _, err := a.Call(context.Background(), []byte("y")); !errors.Is(err, ErrLinkDown) {
		t.Errorf("Call after = %v, want ErrLinkDown", err)
	}
}

// A sender never waits for the other side to read: the node's sender is a
// consumer connection's reader.
func TestLinkSendDoesNotBlock(t *testing.T) {
	ca, cb := conns(t)
	defer cb.Close() // the other end is never read
	a := NewLink(ca)
	a.Start(nil)
	defer a.Close()
	call := bytes.Repeat([]byte("x"), 1<<20)
	var sent atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 8 { // 8 MiB, far more than a socket buffer
			a.CallAsync(context.Background(), call, func([]byte, error) {})
			sent.Add(1)
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("sending blocked after %d calls on a peer that does not read", sent.Load())
	}
}

func TestLinkCorruptFrame(t *testing.T) {
	ca, cb := conns(t)
	defer cb.Close()
	a := NewLink(ca)
	a.Start(echo(false))
	defer a.Close()
	cb.Write([]byte{0, 0, 0, 3, 'z', 1, 2}) // unknown frame kind
	select {
	case <-a.Done():
		if !errors.Is(a.Err(), ErrCorrupt) {
			t.Errorf("Err = %v, want ErrCorrupt", a.Err())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a corrupt frame did not end the link")
	}
}

// FuzzLinkFrames feeds arbitrary bytes to a link's reader: it serves what
// parses and ends the link on the rest, without panicking or hanging.
func FuzzLinkFrames(f *testing.F) {
	call := func(kind byte, rest ...byte) []byte {
		b := []byte{0, 0, 0, byte(1 + len(rest)), kind}
		return append(b, rest...)
	}
	f.Add(call(frameCall, 1, 0, 'h', 'i'))
	f.Add(append(call(frameCall, 2, 0x90, 0x4e, 'x'), call(frameCancel, 2)...))
	f.Add(call(frameReply, 7, 'r'))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 'c'})
	// Protobuf calls and streams: a unary call; a stream opened, fed two
	// messages and credit, half-closed; one canceled; frames of a stream
	// nobody opened.
	f.Add(call(frameProtoCall, 3, 0, 0, 0, 0, 'h', 'i'))
	f.Add(slices.Concat(call(frameOpen, 1, 0, 0, 0, 1, 0), call(frameSend, 1, 'a'), call(frameSend, 1), call(frameCredit, 1, 5),
		call(frameCloseSend, 1)))
	f.Add(slices.Concat(call(frameOpen, 4, 0x90, 0x4e, 1, 1, 0), call(frameCancel, 4), call(frameSend, 4, 'x')))
	f.Add(slices.Concat(call(frameMessage, 9, 'm'), call(frameHeader, 9, 0), call(frameEnd, 9, 0, 0), call(frameCreditUp, 9, 1)))
	f.Fuzz(func(t *testing.T, in []byte) {
		ca, cb := net.Pipe()
		defer cb.Close()
		l := NewLink(ca)
		l.Start(fuzzServer{})
		go io.Copy(io.Discard, cb) // the replies
		cb.Write(in)
		cb.Close()
		select {
		case <-l.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the link did not end when its peer closed")
		}
	})
}

// fuzzServer serves Dubbo and unary protobuf calls inline and streams as
// echoStream does.
type fuzzServer struct{}

func (fuzzServer) Prepare(call []byte) (Runner, bool) { return echo(true).Prepare(call) }

func (fuzzServer) PrepareProto(call []byte) (Runner, bool) {
	return protoEcho{inline: true}.PrepareProto(call)
}

func (fuzzServer) ServeStream(ctx context.Context, head []byte, s *Stream) (*Status, rpc.Metadata) {
	return echoStream(ctx, head, s)
}

// Under concurrency an inline server holds replies back while more calls
// are buffered and writes them together: none may be left behind.
func TestLinkConcurrentInline(t *testing.T) {
	a, _ := pair(t, nil, echo(true))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errs := make(chan error, 64)
	for g := range 64 {
		go func() {
			for i := range 200 {
				msg := []byte{byte(g), byte(i)}
				got, err := a.Call(ctx, msg)
				if err == nil && !bytes.Equal(got, append([]byte("re:"), msg...)) {
					err = errors.New("wrong reply " + string(got))
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 64 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

type countFlusher struct{ n atomic.Int32 }

func (f *countFlusher) FlushHeld() { f.n.Add(1) }

// Writes held back while the reader completes a burst of replies (the
// consumer responses of a provider) are flushed when the burst ends. The
// call's context is wrapped on its way to the link, as a filter or the
// provider's own timeout does: the Completer still reaches the reader.
func TestLinkCompleterFlushes(t *testing.T) {
	a, _ := pair(t, nil, echo(true))
	type filterKey struct{}
	for attempt := 0; ; attempt++ {
		f := &countFlusher{}
		var held atomic.Int32
		var wg sync.WaitGroup
		for i := range 500 {
			wg.Add(1)
			ctx, completer := fastpath.WithCompleter(callctx.New(context.Background(), time.Now().Add(10*time.Second)))
			wrapped, cancel := context.WithTimeout(context.WithValue(ctx, filterKey{}, i), 20*time.Second)
			a.CallAsync(wrapped, []byte{byte(i)}, func(_ []byte, err error) {
				defer cancel()
				if err == nil {
					if h := completer.Holder(); h != nil && h.Hold(f) {
						held.Add(1)
					}
				}
				wg.Done()
			})
		}
		wg.Wait()
		if held.Load() == 0 {
			if attempt == 5 {
				t.Fatal("no reply was completed within a burst in 5 rounds of 500 calls")
			}
			continue
		}
		deadline := time.Now().Add(5 * time.Second)
		for f.n.Load() == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d writes held while completing replies, never flushed", held.Load())
			}
			time.Sleep(time.Millisecond)
		}
		return
	}
}

// An inline call that blocks holds the link's other calls up for a few
// milliseconds at most: the watchdog hands the reading to a new goroutine.
func TestLinkInlineBlockedHandedOver(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	blocks := invokerFunc{inline: true, f: func(_ context.Context, call []byte) []byte {
		if string(call) == "block" {
			<-release
		}
		return append([]byte("re:"), call...)
	}}
	a, _ := pair(t, nil, blocks)
	blocked := make(chan error, 1)
	go func() {
		_, err := a.Call(context.Background(), []byte("block"))
		blocked <- err
	}()
	time.Sleep(20 * time.Millisecond) // the blocking call is on the reader by now
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := a.Call(ctx, []byte("quick"))
	if err != nil || string(got) != "re:quick" {
		t.Fatalf("Call = %q, %v", got, err)
	}
	if took := time.Since(start); took > 300*time.Millisecond {
		t.Errorf("a call behind a blocked inline one took %v", took)
	}
	select {
	case err := <-blocked:
		t.Fatalf("the blocked call returned early: %v", err)
	default:
	}
}

// A call and a reply over 1 MiB, then many concurrent ones: every reply
// must still be its own call's. (A write buffer that grew past 1 MiB once
// left the queue and the spare sharing one array, so frames queued during
// a write overwrote the bytes being sent.) A few rounds, since that showed
// only when a write overlapped the queueing of the next frames.
func TestLinkLargeCallThenConcurrent(t *testing.T) {
	for _, inline := range []bool{false, true} {
		t.Run(map[bool]string{false: "workers", true: "inline"}[inline], func(t *testing.T) {
			a, _ := pair(t, nil, echo(inline))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// Warm-up first: each side then has a spare write buffer.
			for i := range 10 {
				if _, err := a.Call(ctx, []byte{byte(i)}); err != nil {
					t.Fatal(err)
				}
			}
			big := bytes.Repeat([]byte("0123456789abcdef"), 2<<20/16)
			const rounds, callers, calls = 12, 64, 2
			for r := range rounds {
				got, err := a.Call(ctx, big)
				if err != nil || !bytes.Equal(got, append([]byte("re:"), big...)) {
					t.Fatalf("round %d: the 2 MiB call: %d bytes back, %v", r, len(got), err)
				}
				errs := make(chan error, callers)
				for g := range callers {
					go func() {
						for i := range calls {
							// Up to 64 KiB, so that writes fill the socket and
							// are taken in parts while more frames are queued.
							msg := fmt.Appendf(nil, "round %d caller %d call %d %s", r, g, i, bytes.Repeat([]byte{'x'}, (g*7919+i*613)%(64<<10)))
							got, err := a.Call(ctx, msg)
							if err == nil && !bytes.Equal(got, append([]byte("re:"), msg...)) {
								err = fmt.Errorf("call %.60q got reply %.60q", msg, got)
							}
							if err != nil {
								errs <- err
								return
							}
						}
						errs <- nil
					}()
				}
				for range callers {
					if err := <-errs; err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}

// After Retire a link sends nothing new: calls and streams are refused with
// ErrRetired at once, while those under way finish, and InFlight counts
// them down to 0.
func TestLinkRetire(t *testing.T) {
	release := make(chan struct{})
	slow := invokerFunc{f: func(_ context.Context, call []byte) []byte {
		<-release
		return append([]byte("re:"), call...)
	}}
	a, _ := pair(t, nil, slowAndStreams{slow})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	replies := make(chan string, 1)
	if err := a.CallAsync(ctx, []byte("under way"), func(reply []byte, err error) { replies <- fmt.Sprint(string(reply), " ", err) }); err != nil {
		t.Fatal(err)
	}
	s := openStream(t, ctx, a, nil)
	if n := a.InFlight(); n != 2 {
		t.Fatalf("InFlight = %d with a call and a stream under way, want 2", n)
	}
	a.Retire()

	if err := a.CallAsync(ctx, []byte("late"), func([]byte, error) { t.Error("done called for a refused call") }); err != ErrRetired {
		t.Errorf("CallAsync after Retire = %v, want ErrRetired", err)
	}
	if _, err := a.Call(ctx, []byte("late")); err != ErrRetired {
		t.Errorf("Call after Retire = %v, want ErrRetired", err)
	}
	head, _ := AppendProtoCall(nil, MethodRef{1, 2}, nil)
	if _, err := a.OpenStream(ctx, head); err != ErrRetired {
		t.Errorf("OpenStream after Retire = %v, want ErrRetired", err)
	}

	// What was under way goes on.
	if err := s.Send([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Recv(); err != nil || string(got) != "re:x" {
		t.Errorf("the stream under way: Recv = %q, %v", got, err)
	}
	s.CloseSend()
	if _, err := s.Recv(); err != io.EOF {
		t.Errorf("the stream under way ended with %v, want io.EOF", err)
	}
	close(release)
	if got := <-replies; got != "re:under way <nil>" {
		t.Errorf("the call under way got %q", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for a.InFlight() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("InFlight = %d after everything ended", a.InFlight())
		}
		time.Sleep(time.Millisecond)
	}
}

// slowAndStreams serves calls with its invokerFunc and streams with
// echoStream.
type slowAndStreams struct{ invokerFunc }

func (slowAndStreams) ServeStream(ctx context.Context, head []byte, s *Stream) (*Status, rpc.Metadata) {
	return echoStream(ctx, head, s)
}
