package triple

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/dubbo-lab/dubbo/internal/testkit/h2raw"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// hostile is the handler of the hostile-client tests: Echo for the
// neighbour, Wait that answers when its context ends, Hold that ignores
// its context until the test ends, Ticks that streams 1 KiB messages
// until its context ends, Queue that never reads its stream.
func hostile(t *testing.T) router {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return router{
		"s/Echo": echo,
		"s/Wait": asyncUnary(func(ctx context.Context, _ *Call, _ []byte) ([]byte, rpc.Metadata, *Status) {
			<-ctx.Done()
			return nil, nil, Errorf(Canceled, "%v", ctx.Err())
		}),
		"s/Hold": asyncUnary(func(context.Context, *Call, []byte) ([]byte, rpc.Metadata, *Status) {
			<-release
			return nil, nil, nil
		}),
		"s/Ticks": streamFunc{rpc.ServerStream, func(ctx context.Context, _ *Call, s Stream) *Status {
			msg := bytes.Repeat([]byte("t"), 1024)
			for ctx.Err() == nil {
				if err := s.Send(msg); err != nil {
					return nil
				}
			}
			return nil
		}},
		"s/Queue": streamFunc{rpc.ClientStream, func(ctx context.Context, _ *Call, s Stream) *Status {
			<-ctx.Done()
			return nil
		}},
	}
}

// A message declared longer than MaxMessage is refused from its 5-byte
// prefix, before any of its bytes arrive.
func TestDeclaredLengthPastLimit(t *testing.T) {
	_, addr := start(t, Config{MaxMessage: 1024}, hostile(t))
	startNeighbour(t, addr)
	c := h2raw.Dial(t, addr)
	c.Request(1, false, "/s/Echo")
	if err := c.Framer.WriteData(1, false, []byte{0, 0, 0, 4, 1}); err != nil { // 1025 bytes declared
		t.Fatal(err)
	}
	v := c.Read(5*time.Second, h2raw.Ended(1))
	r := v.Stream(1)
	if r.Status() != int(ResourceExhausted) {
		t.Errorf("grpc-status = %d, want %d (ResourceExhausted); %+v", r.Status(), ResourceExhausted, r)
	}
	if !strings.Contains(h2raw.Field(r.Headers, "grpc-message"), "1025") {
		t.Errorf("grpc-message = %q", h2raw.Field(r.Headers, "grpc-message"))
	}
}

// Streams past MaxConcurrentStreams are refused with REFUSED_STREAM; a
// client that goes on opening them loses the connection.
func TestHeadersFlood(t *testing.T) {
	const maxStreams = 10
	_, addr := start(t, Config{MaxConcurrentStreams: maxStreams}, hostile(t))
	startNeighbour(t, addr)
	c := h2raw.Dial(t, addr)
	id := uint32(1)
	for range maxStreams {
		c.Request(id, false, "/s/Wait")
		id += 2
	}
	first := id
	for range 3 * maxStreams {
		// The server may end the connection before the flood is all
		// written (that is the point): then the writes fail.
		if err := c.Send(id, false, "/s/Wait"); err != nil {
			break
		}
		id += 2
	}
	v := c.Read(5*time.Second, h2raw.GoneAway)
	for i := uint32(1); i < first; i += 2 {
		if r := v.Streams[i]; r != nil {
			t.Errorf("stream %d within the limit answered: %+v", i, r)
		}
	}
	refused := 0
	for i := first; i < id; i += 2 {
		if r := v.Streams[i]; r != nil && r.RST == http2.ErrCodeRefusedStream {
			refused++
		}
	}
	if refused < maxStreams {
		t.Errorf("%d streams refused, want at least %d", refused, maxStreams)
	}
	if v.GoAway == nil || v.GoAway.ErrCode != http2.ErrCodeEnhanceYourCalm {
		t.Fatalf("want GOAWAY ENHANCE_YOUR_CALM, got %+v (read: %v)", v.GoAway, v.Err)
	}
}

// A client that opens streams past the limit before it has seen our
// SETTINGS (HTTP/2 lets it) gets them refused and keeps its connection.
func TestStreamsBeforeSettings(t *testing.T) {
	const maxStreams = 10
	_, addr := start(t, Config{MaxConcurrentStreams: maxStreams}, hostile(t))
	c := h2raw.DialNoAck(t, addr)
	for id := uint32(1); id < 6*maxStreams; id += 2 {
		c.Request(id, false, "/s/Wait")
	}
	v := c.Read(500*time.Millisecond, h2raw.GoneAway)
	if h2raw.GoneAway(v) {
		t.Fatalf("the connection ended: GOAWAY %+v (read: %v)", v.GoAway, v.Err)
	}
	refused := 0
	for _, r := range v.Streams {
		if r.RST == http2.ErrCodeRefusedStream {
			refused++
		}
	}
	if refused != 2*maxStreams {
		t.Errorf("%d streams refused, want %d", refused, 2*maxStreams)
	}
}

// HTTP/2 rapid reset: a client that opens streams and resets them at once
// loses the connection; so does one that leaves handlers running for
// streams it reset.
func TestRapidReset(t *testing.T) {
	for _, c := range []struct {
		name, path string
		complete   bool // send the whole request before the reset
		wantDebug  string
	}{
		{"headers then reset", "/s/Echo", false, "rapid reset"},
		{"calls then reset", "/s/Hold", true, "handlers running"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, addr := start(t, Config{MaxConcurrentStreams: 10}, hostile(t))
			startNeighbour(t, addr)
			rc := h2raw.Dial(t, addr)
			errc := make(chan error, 1)
			go func() { // ends when a write fails: the server hung up
				for id := uint32(1); id < 1<<20; id += 2 {
					err := rc.Send(id, false, c.path)
					if err == nil && c.complete {
						err = rc.Framer.WriteData(id, true, h2raw.Frame([]byte("x")))
					}
					if err == nil {
						err = rc.Framer.WriteRSTStream(id, http2.ErrCodeCancel)
					}
					if err != nil {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
			v := rc.Read(10*time.Second, h2raw.GoneAway)
			if v.GoAway == nil || v.GoAway.ErrCode != http2.ErrCodeEnhanceYourCalm || !strings.Contains(string(v.GoAway.DebugData()), c.wantDebug) {
				t.Fatalf("want GOAWAY ENHANCE_YOUR_CALM %q, got %+v (read: %v)", c.wantDebug, v.GoAway, v.Err)
			}
			t.Logf("GOAWAY after stream %d: %s", v.GoAway.LastStreamID, v.GoAway.DebugData())
			rc.Conn.Close()
			<-errc
		})
	}
}

// Header blocks: past MaxHeaderListSize the call gets 431; far past it,
// or CONTINUATION frames without end, the connection ends.
func TestHeaderBlockLimits(t *testing.T) {
	const limit = 4096
	t.Run("431", func(t *testing.T) {
		_, addr := start(t, Config{MaxHeaderListSize: limit}, hostile(t))
		startNeighbour(t, addr)
		c := h2raw.Dial(t, addr)
		c.Request(1, true, "/s/Echo", "x-big", strings.Repeat("ab", 2200))
		v := c.Read(5*time.Second, h2raw.Ended(1))
		r := v.Stream(1)
		if got := h2raw.Field(r.Headers, ":status"); got != "431" || r.Status() != int(ResourceExhausted) {
			t.Errorf(":status %s grpc-status %d, want 431 and %d", got, r.Status(), ResourceExhausted)
		}
		// The connection goes on.
		c.Request(3, false, "/s/Echo")
		c.Message(3, []byte("after"), true)
		if r := c.Read(5*time.Second, h2raw.Ended(3)).Stream(3); r.Status() != 0 || !bytes.HasSuffix(r.Data, []byte("echo:after")) {
			t.Errorf("the next call: %+v", r)
		}
	})
	for _, c := range []struct {
		name string
		send func(c *h2raw.Client) error
	}{
		{"far past the limit", func(c *h2raw.Client) error {
			return c.Framer.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, EndHeaders: true,
				BlockFragment: c.Block(h2raw.RequestFields("/s/Echo", "x-big", strings.Repeat("q", 3*limit))...)})
		}},
		{"endless CONTINUATION", func(c *h2raw.Client) error {
			if err := c.Framer.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: c.Block(h2raw.RequestFields("/s/Echo")...)}); err != nil {
				return err
			}
			for i := 0; ; i++ {
				if err := c.Framer.WriteContinuation(1, false, c.Block("x-more", strings.Repeat("z", 200))); err != nil {
					return err
				}
			}
		}},
		{"empty CONTINUATION", func(c *h2raw.Client) error {
			if err := c.Framer.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: c.Block(h2raw.RequestFields("/s/Echo")...)}); err != nil {
				return err
			}
			for {
				if err := c.Framer.WriteContinuation(1, false, nil); err != nil {
					return err
				}
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, addr := start(t, Config{MaxHeaderListSize: limit}, hostile(t))
			startNeighbour(t, addr)
			rc := h2raw.Dial(t, addr)
			go func() { _ = c.send(rc) }() // ends when the server hangs up
			v := rc.Read(5*time.Second, h2raw.GoneAway)
			if v.GoAway == nil || v.GoAway.ErrCode != http2.ErrCodeEnhanceYourCalm {
				t.Fatalf("want GOAWAY ENHANCE_YOUR_CALM, got %+v (read: %v)", v.GoAway, v.Err)
			}
		})
	}
}

// An answer the reader makes at once (431, Unimplemented) to a request
// whose header block ends in CONTINUATION frames leaves at once, also
// when the frames came in one read and nothing follows them.
func TestAnswerAfterContinuation(t *testing.T) {
	const limit = 4096
	_, addr := start(t, Config{MaxHeaderListSize: limit}, hostile(t))
	for _, c := range []struct {
		name   string
		fields [][]string // one frame each
		http   string
		code   Code
	}{
		{"431", [][]string{h2raw.RequestFields("/s/Echo"), {"x-a", strings.Repeat("a", 3000)}, {"x-b", strings.Repeat("b", 1500)}}, "431", ResourceExhausted},
		{"unknown method", [][]string{h2raw.RequestFields("/s/Nope"), {"x-a", "1"}}, "200", Unimplemented},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc := h2raw.Dial(t, addr)
			var b bytes.Buffer
			fr := http2.NewFramer(&b, nil)
			for i, f := range c.fields {
				last := i == len(c.fields)-1
				if i == 0 {
					_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, EndStream: true, EndHeaders: last, BlockFragment: rc.Block(f...)})
				} else {
					_ = fr.WriteContinuation(1, last, rc.Block(f...))
				}
			}
			if _, err := rc.Conn.Write(b.Bytes()); err != nil {
				t.Fatal(err)
			}
			v := rc.Read(2*time.Second, h2raw.Ended(1))
			r := v.Stream(1)
			if got := h2raw.Field(r.Headers, ":status"); got != c.http || r.Status() != int(c.code) {
				t.Errorf(":status %q grpc-status %d, want %s and %d (read: %v)", got, r.Status(), c.http, c.code, v.Err)
			}
		})
	}
}

// Floods of frames that carry no call end the connection, after at most
// a hundred or so answers.
func TestControlFloods(t *testing.T) {
	for _, c := range []struct {
		name string
		send func(c *h2raw.Client, i int) error
	}{
		{"PING", func(c *h2raw.Client, i int) error { return c.Framer.WritePing(false, [8]byte{byte(i)}) }},
		{"SETTINGS", func(c *h2raw.Client, i int) error { return c.Framer.WriteSettings() }},
		{"empty DATA", func(c *h2raw.Client, i int) error {
			if i == 0 {
				if err := c.Send(1, false, "/s/Wait"); err != nil {
					return err
				}
			}
			return c.Framer.WriteData(1, false, nil)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, addr := start(t, Config{}, hostile(t))
			startNeighbour(t, addr)
			rc := h2raw.Dial(t, addr)
			go func() { // ends when the server hangs up
				for i := 0; i < 100000; i++ {
					if c.send(rc, i) != nil {
						return
					}
				}
			}()
			v := rc.Read(10*time.Second, h2raw.GoneAway)
			if v.GoAway == nil || v.GoAway.ErrCode != http2.ErrCodeEnhanceYourCalm {
				t.Fatalf("want GOAWAY ENHANCE_YOUR_CALM, got %+v (read: %v)", v.GoAway, v.Err)
			}
			if v.Pings > 2*maxStrikes || v.Acks > 2*maxStrikes {
				t.Errorf("answered %d PINGs and %d SETTINGS", v.Pings, v.Acks)
			}
		})
	}
}

// A request that has begun must arrive within FrameTimeout: a stalled
// unary request is answered with DeadlineExceeded, a stalled frame ends
// the connection.
func TestStalledRequests(t *testing.T) {
	cfg := Config{FrameTimeout: 300 * time.Millisecond}
	t.Run("request", func(t *testing.T) {
		_, addr := start(t, cfg, hostile(t))
		startNeighbour(t, addr)
		c := h2raw.Dial(t, addr)
		c.Request(1, false, "/s/Echo")
		if err := c.Framer.WriteData(1, false, []byte{0, 0, 0, 0, 100, 1, 2, 3}); err != nil { // 3 of 100 bytes
			t.Fatal(err)
		}
		t0 := time.Now()
		v := c.Read(5*time.Second, h2raw.Ended(1))
		r := v.Stream(1)
		if r.Status() != int(DeadlineExceeded) {
			t.Errorf("grpc-status %d, want %d: %+v (read: %v, GOAWAY %+v)", r.Status(), DeadlineExceeded, r, v.Err, v.GoAway)
		}
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("answered after %v", d)
		}
	})
	t.Run("frame", func(t *testing.T) {
		_, addr := start(t, cfg, hostile(t))
		startNeighbour(t, addr)
		c := h2raw.Dial(t, addr)
		c.Read(time.Second, func(v *h2raw.Conversation) bool { return v.Acks > 0 })
		// A DATA frame header declaring 100 bytes, and 10 of them.
		if _, err := c.Conn.Write([]byte{0, 0, 100, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		v := c.Read(5*time.Second, func(v *h2raw.Conversation) bool { return v.Err != nil })
		if h2raw.IsTimeout(v.Err) {
			t.Fatal("the connection outlived its stalled frame")
		}
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("closed after %v", d)
		}
	})
}
