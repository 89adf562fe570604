package triple

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
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
		"s/Wait": asyncUnary(func(ctx context.Context, _ *Call, _ []byte) ([]byte, Metadata, *Status) {
			<-ctx.Done()
			return nil, nil, Errorf(Canceled, "%v", ctx.Err())
		}),
		"s/Hold": asyncUnary(func(context.Context, *Call, []byte) ([]byte, Metadata, *Status) {
			<-release
			return nil, nil, nil
		}),
		"s/Ticks": streamFunc{ServerStream, func(ctx context.Context, _ *Call, s Stream) *Status {
			msg := bytes.Repeat([]byte("t"), 1024)
			for ctx.Err() == nil {
				if err := s.Send(msg); err != nil {
					return nil
				}
			}
			return nil
		}},
		"s/Queue": streamFunc{ClientStream, func(ctx context.Context, _ *Call, s Stream) *Status {
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
	c := rawDial(t, addr)
	c.request(1, false, "/s/Echo")
	if err := c.fr.WriteData(1, false, []byte{0, 0, 0, 4, 1}); err != nil { // 1025 bytes declared
		t.Fatal(err)
	}
	v := c.read(5*time.Second, ended(1))
	r := v.stream(1)
	if r.status() != int(ResourceExhausted) {
		t.Errorf("grpc-status = %d, want %d (ResourceExhausted); %+v", r.status(), ResourceExhausted, r)
	}
	if !strings.Contains(field(r.headers, "grpc-message"), "1025") {
		t.Errorf("grpc-message = %q", field(r.headers, "grpc-message"))
	}
}

// Streams past MaxConcurrentStreams are refused with REFUSED_STREAM; a
// client that goes on opening them loses the connection.
func TestHeadersFlood(t *testing.T) {
	const maxStreams = 10
	_, addr := start(t, Config{MaxConcurrentStreams: maxStreams}, hostile(t))
	startNeighbour(t, addr)
	c := rawDial(t, addr)
	id := uint32(1)
	for range maxStreams {
		c.request(id, false, "/s/Wait")
		id += 2
	}
	first := id
	for range 3 * maxStreams {
		// The server may end the connection before the flood is all
		// written (that is the point): then the writes fail.
		if err := c.send(id, false, "/s/Wait"); err != nil {
			break
		}
		id += 2
	}
	v := c.read(5*time.Second, goneAway)
	for i := uint32(1); i < first; i += 2 {
		if r := v.streams[i]; r != nil {
			t.Errorf("stream %d within the limit answered: %+v", i, r)
		}
	}
	refused := 0
	for i := first; i < id; i += 2 {
		if r := v.streams[i]; r != nil && r.rst == http2.ErrCodeRefusedStream {
			refused++
		}
	}
	if refused < maxStreams {
		t.Errorf("%d streams refused, want at least %d", refused, maxStreams)
	}
	if v.goAway == nil || v.goAway.ErrCode != http2.ErrCodeEnhanceYourCalm {
		t.Fatalf("want GOAWAY ENHANCE_YOUR_CALM, got %+v (read: %v)", v.goAway, v.err)
	}
}

// A client that opens streams past the limit before it has seen our
// SETTINGS (HTTP/2 lets it) gets them refused and keeps its connection.
func TestStreamsBeforeSettings(t *testing.T) {
	const maxStreams = 10
	_, addr := start(t, Config{MaxConcurrentStreams: maxStreams}, hostile(t))
	c := rawDialAck(t, addr, false)
	for id := uint32(1); id < 6*maxStreams; id += 2 {
		c.request(id, false, "/s/Wait")
	}
	v := c.read(500*time.Millisecond, goneAway)
	if goneAway(v) {
		t.Fatalf("the connection ended: GOAWAY %+v (read: %v)", v.goAway, v.err)
	}
	refused := 0
	for _, r := range v.streams {
		if r.rst == http2.ErrCodeRefusedStream {
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
			rc := rawDial(t, addr)
			errc := make(chan error, 1)
			go func() { // ends when a write fails: the server hung up
				for id := uint32(1); id < 1<<20; id += 2 {
					err := rc.send(id, false, c.path)
					if err == nil && c.complete {
						err = rc.fr.WriteData(id, true, grpcFrame([]byte("x")))
					}
					if err == nil {
						err = rc.fr.WriteRSTStream(id, http2.ErrCodeCancel)
					}
					if err != nil {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
			v := rc.read(10*time.Second, goneAway)
			if v.goAway == nil || v.goAway.ErrCode != http2.ErrCodeEnhanceYourCalm || !strings.Contains(string(v.goAway.DebugData()), c.wantDebug) {
				t.Fatalf("want GOAWAY ENHANCE_YOUR_CALM %q, got %+v (read: %v)", c.wantDebug, v.goAway, v.err)
			}
			t.Logf("GOAWAY after stream %d: %s", v.goAway.LastStreamID, v.goAway.DebugData())
			rc.nc.Close()
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
		c := rawDial(t, addr)
		c.request(1, true, "/s/Echo", "x-big", strings.Repeat("ab", 2200))
		v := c.read(5*time.Second, ended(1))
		r := v.stream(1)
		if got := field(r.headers, ":status"); got != "431" || r.status() != int(ResourceExhausted) {
			t.Errorf(":status %s grpc-status %d, want 431 and %d", got, r.status(), ResourceExhausted)
		}
		// The connection goes on.
		c.request(3, false, "/s/Echo")
		c.message(3, []byte("after"), true)
		if r := c.read(5*time.Second, ended(3)).stream(3); r.status() != 0 || !bytes.HasSuffix(r.data, []byte("echo:after")) {
			t.Errorf("the next call: %+v", r)
		}
	})
	for _, c := range []struct {
		name string
		send func(c *rawClient) error
	}{
		{"far past the limit", func(c *rawClient) error {
			return c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, EndHeaders: true,
				BlockFragment: c.block(requestFields("/s/Echo", "x-big", strings.Repeat("q", 3*limit))...)})
		}},
		{"endless CONTINUATION", func(c *rawClient) error {
			if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: c.block(requestFields("/s/Echo")...)}); err != nil {
				return err
			}
			for i := 0; ; i++ {
				if err := c.fr.WriteContinuation(1, false, c.block("x-more", strings.Repeat("z", 200))); err != nil {
					return err
				}
			}
		}},
		{"empty CONTINUATION", func(c *rawClient) error {
			if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: c.block(requestFields("/s/Echo")...)}); err != nil {
				return err
			}
			for {
				if err := c.fr.WriteContinuation(1, false, nil); err != nil {
					return err
				}
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, addr := start(t, Config{MaxHeaderListSize: limit}, hostile(t))
			startNeighbour(t, addr)
			rc := rawDial(t, addr)
			go func() { _ = c.send(rc) }() // ends when the server hangs up
			v := rc.read(5*time.Second, goneAway)
			if v.goAway == nil || v.goAway.ErrCode != http2.ErrCodeEnhanceYourCalm {
				t.Fatalf("want GOAWAY ENHANCE_YOUR_CALM, got %+v (read: %v)", v.goAway, v.err)
			}
		})
	}
}

// Floods of frames that carry no call end the connection, after at most
// a hundred or so answers.
func TestControlFloods(t *testing.T) {
	for _, c := range []struct {
		name string
		send func(c *rawClient, i int) error
	}{
		{"PING", func(c *rawClient, i int) error { return c.fr.WritePing(false, [8]byte{byte(i)}) }},
		{"SETTINGS", func(c *rawClient, i int) error { return c.fr.WriteSettings() }},
		{"empty DATA", func(c *rawClient, i int) error {
			if i == 0 {
				if err := c.send(1, false, "/s/Wait"); err != nil {
					return err
				}
			}
			return c.fr.WriteData(1, false, nil)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, addr := start(t, Config{}, hostile(t))
			startNeighbour(t, addr)
			rc := rawDial(t, addr)
			go func() { // ends when the server hangs up
				for i := 0; i < 100000; i++ {
					if c.send(rc, i) != nil {
						return
					}
				}
			}()
			v := rc.read(10*time.Second, goneAway)
			if v.goAway == nil || v.goAway.ErrCode != http2.ErrCodeEnhanceYourCalm {
				t.Fatalf("want GOAWAY ENHANCE_YOUR_CALM, got %+v (read: %v)", v.goAway, v.err)
			}
			if v.pings > 2*maxStrikes || v.acks > 2*maxStrikes {
				t.Errorf("answered %d PINGs and %d SETTINGS", v.pings, v.acks)
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
		c := rawDial(t, addr)
		c.request(1, false, "/s/Echo")
		if err := c.fr.WriteData(1, false, []byte{0, 0, 0, 0, 100, 1, 2, 3}); err != nil { // 3 of 100 bytes
			t.Fatal(err)
		}
		t0 := time.Now()
		v := c.read(5*time.Second, ended(1))
		r := v.stream(1)
		if r.status() != int(DeadlineExceeded) {
			t.Errorf("grpc-status %d, want %d: %+v (read: %v, GOAWAY %+v)", r.status(), DeadlineExceeded, r, v.err, v.goAway)
		}
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("answered after %v", d)
		}
	})
	t.Run("frame", func(t *testing.T) {
		_, addr := start(t, cfg, hostile(t))
		startNeighbour(t, addr)
		c := rawDial(t, addr)
		c.read(time.Second, func(v *conversation) bool { return v.acks > 0 })
		// A DATA frame header declaring 100 bytes, and 10 of them.
		if _, err := c.nc.Write([]byte{0, 0, 100, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		v := c.read(5*time.Second, func(v *conversation) bool { return v.err != nil })
		if isTimeout(v.err) {
			t.Fatal("the connection outlived its stalled frame")
		}
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("closed after %v", d)
		}
	})
}
