package triple

import (
	"encoding/binary"
	"net/http"
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/dubbo-lab/dubbo/internal/testkit/h2raw"
)

// Our DATA respects the client's windows: with a stream window of 1000
// bytes, 1000 bytes arrive and no more until the client grants more.
func TestSendWindowRespected(t *testing.T) {
	_, addr := start(t, Config{}, hostile(t))
	c := h2raw.Dial(t, addr, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1000})
	c.Request(1, false, "/s/Ticks")
	c.Message(1, nil, true)
	quiet := func(v *h2raw.Conversation) bool {
		r := v.Streams[1]
		return r != nil && len(r.Data) > 1000 || h2raw.GoneAway(v)
	}
	v := c.Read(300*time.Millisecond, quiet)
	if got := len(v.Stream(1).Data); got != 1000 {
		t.Fatalf("received %d bytes with a 1000-byte window, want 1000 (read: %v)", got, v.Err)
	}
	if err := c.Framer.WriteWindowUpdate(1, 5000); err != nil {
		t.Fatal(err)
	}
	v = c.Read(300*time.Millisecond, func(v *h2raw.Conversation) bool {
		r := v.Streams[1]
		return r != nil && len(r.Data) > 5000 || h2raw.GoneAway(v)
	})
	if got := len(v.Stream(1).Data); got != 5000 {
		t.Fatalf("received %d more bytes after a 5000-byte update, want 5000", got)
	}
}

// A client that keeps the connection window shut while responses wait
// loses the connection after FrameTimeout; others are served meanwhile.
func TestConnectionWindowShut(t *testing.T) {
	_, addr := start(t, Config{FrameTimeout: 300 * time.Millisecond}, hostile(t))
	startNeighbour(t, addr)
	c := h2raw.Dial(t, addr)
	c.Request(1, false, "/s/Ticks")
	c.Message(1, nil, true)
	t0 := time.Now()
	total := 0
	v := c.Read(5*time.Second, func(v *h2raw.Conversation) bool {
		if r := v.Streams[1]; r != nil {
			total = len(r.Data)
		}
		return h2raw.GoneAway(v)
	})
	if total > 65535 {
		t.Errorf("received %d bytes with a 65535-byte connection window", total)
	}
	if v.GoAway == nil && h2raw.IsTimeout(v.Err) {
		t.Fatal("the connection outlived its shut window")
	}
	if d := time.Since(t0); d < 250*time.Millisecond || d > 3*time.Second {
		t.Errorf("closed after %v, want about 300ms", d)
	}
}

// Request bytes buffered for a stream are bounded by its window: a client
// that sends past it while the handler does not read has the stream reset
// with FLOW_CONTROL_ERROR.
func TestRecvWindowEnforced(t *testing.T) {
	_, addr := start(t, Config{}, hostile(t))
	startNeighbour(t, addr)
	c := h2raw.Dial(t, addr)
	c.Request(1, false, "/s/Queue")
	msg := make([]byte, 1000)
	go func() { // ends when the stream is reset and the test closes the connection
		for range 100 {
			if c.Framer.WriteData(1, false, h2raw.Frame(msg)) != nil {
				return
			}
		}
	}()
	v := c.Read(5*time.Second, h2raw.Ended(1))
	if r := v.Stream(1); r.RST != http2.ErrCodeFlowControl {
		t.Errorf("stream ended with %+v, want RST_STREAM FLOW_CONTROL_ERROR", r)
	}
}

// Requests that are not gRPC, or malformed, get grpc-go's answers.
func TestBadRequests(t *testing.T) {
	_, addr := start(t, Config{}, hostile(t))
	startNeighbour(t, addr)
	for _, c := range []struct {
		name   string
		fields []string
		http   int           // :status of a trailers-only answer
		code   int           // its grpc-status
		rst    http2.ErrCode // or a reset
	}{
		{"content-type", []string{":method", "POST", ":scheme", "http", ":path", "/s/Echo", "content-type", "application/json"}, http.StatusUnsupportedMediaType, int(InvalidArgument), 0},
		{"no content-type", []string{":method", "POST", ":scheme", "http", ":path", "/s/Echo"}, http.StatusUnsupportedMediaType, int(InvalidArgument), 0},
		{"GET", []string{":method", "GET", ":scheme", "http", ":path", "/s/Echo", "content-type", "application/grpc"}, http.StatusMethodNotAllowed, int(Internal), 0},
		{"grpc-timeout", h2raw.RequestFields("/s/Echo", "grpc-timeout", "123456789S"), http.StatusBadRequest, int(Internal), 0},
		{"grpc-timeout unit", h2raw.RequestFields("/s/Echo", "grpc-timeout", "10x"), http.StatusBadRequest, int(Internal), 0},
		{"-bin value", h2raw.RequestFields("/s/Echo", "x-id-bin", "!!!"), http.StatusBadRequest, int(Internal), 0},
		{"encoding", h2raw.RequestFields("/s/Echo", "grpc-encoding", "snappy"), http.StatusOK, int(Unimplemented), 0},
		{"unknown method", h2raw.RequestFields("/s/Nope"), http.StatusOK, int(Unimplemented), 0},
		{"path", h2raw.RequestFields("Echo"), http.StatusOK, int(Unimplemented), 0},
		{"te", h2raw.RequestFields("/s/Echo", "te", "gzip"), 0, 0, http2.ErrCodeProtocol},
		{"connection", h2raw.RequestFields("/s/Echo", "connection", "keep-alive"), 0, 0, http2.ErrCodeProtocol},
		{"pseudo", h2raw.RequestFields("/s/Echo", ":protocol", "websocket"), 0, 0, http2.ErrCodeProtocol},
		{"upper case", h2raw.RequestFields("/s/Echo", "X-Upper", "1"), 0, 0, http2.ErrCodeProtocol},
		{"no path", []string{":method", "POST", ":scheme", "http", "content-type", "application/grpc"}, 0, 0, http2.ErrCodeProtocol},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc := h2raw.Dial(t, addr)
			if err := rc.Framer.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: rc.Block(c.fields...), EndHeaders: true}); err != nil {
				t.Fatal(err)
			}
			r := rc.Read(5*time.Second, h2raw.Ended(1)).Stream(1)
			if c.rst != 0 {
				if r.RST != c.rst {
					t.Errorf("got %+v, want RST_STREAM %v", r, c.rst)
				}
				return
			}
			if got := h2raw.Field(r.Headers, ":status"); got != strconv.Itoa(c.http) || r.Status() != c.code || !r.Ended {
				t.Errorf(":status %s grpc-status %d (ended %v), want %d and %d; message %q",
					got, r.Status(), r.Ended, c.http, c.code, h2raw.Field(r.Headers, "grpc-message"))
			}
			if c.name == "encoding" && h2raw.Field(r.Headers, "grpc-accept-encoding") != "gzip" {
				t.Errorf("grpc-accept-encoding = %q, want gzip", h2raw.Field(r.Headers, "grpc-accept-encoding"))
			}
			if r.RST != http2.ErrCodeNo {
				t.Errorf("no RST_STREAM NO_ERROR after an answer to an unfinished request")
			}
		})
	}
}

// The server answers DeadlineExceeded itself when a handler outlives the
// call's grpc-timeout (an HTTP/2 client without a timer of its own still
// gets its answer).
func TestServerAnswersDeadline(t *testing.T) {
	_, addr := start(t, Config{}, hostile(t))
	c := h2raw.Dial(t, addr)
	c.Request(1, false, "/s/Hold", "grpc-timeout", "100m")
	c.Message(1, []byte("x"), true)
	t0 := time.Now()
	r := c.Read(5*time.Second, h2raw.Ended(1)).Stream(1)
	if r.Status() != int(DeadlineExceeded) {
		t.Errorf("grpc-status %d, want %d: %+v", r.Status(), DeadlineExceeded, r)
	}
	if d := time.Since(t0); d < 90*time.Millisecond || d > 2*time.Second {
		t.Errorf("answered after %v, want about 100ms", d)
	}
}

// On the wire: a request in gzip gets grpc-encoding: gzip and compressed
// messages back; a compressed message without grpc-encoding is refused.
func TestGzipOnTheWire(t *testing.T) {
	_, addr := start(t, Config{}, router{"s/Echo": echo})
	c := h2raw.Dial(t, addr)
	c.Request(1, false, "/s/Echo", "grpc-encoding", "gzip", "grpc-accept-encoding", "gzip")
	z := &gzipCodec{}
	msg := z.compress(nil, []byte("squeeze"))
	if err := c.Framer.WriteData(1, true, append(binary.BigEndian.AppendUint32([]byte{1}, uint32(len(msg))), msg...)); err != nil {
		t.Fatal(err)
	}
	r := c.Read(5*time.Second, h2raw.Ended(1)).Stream(1)
	if h2raw.Field(r.Headers, "grpc-encoding") != "gzip" || len(r.Data) < 5 || r.Data[0] != 1 {
		t.Fatalf("response not compressed: headers %v, data %q", r.Headers, r.Data)
	}
	got, err := z.decompress(r.Data[5:], 1<<20)
	if err != nil || string(got) != "echo:squeeze" {
		t.Errorf("response %q (%v)", got, err)
	}

	c.Request(3, false, "/s/Echo")
	if err := c.Framer.WriteData(3, true, append(binary.BigEndian.AppendUint32([]byte{1}, uint32(len(msg))), msg...)); err != nil {
		t.Fatal(err)
	}
	if r := c.Read(5*time.Second, h2raw.Ended(3)).Stream(3); r.Status() != int(Internal) {
		t.Errorf("compressed flag without grpc-encoding: grpc-status %d, want %d", r.Status(), Internal)
	}
}

// A client that opens its windows wide but never reads the socket: the
// server stops reading its requests once 256 KiB of answers wait, and
// closes the connection when a write stays blocked for FrameTimeout.
func TestClientNotReading(t *testing.T) {
	s, addr := start(t, Config{FrameTimeout: 300 * time.Millisecond}, router{"s/Echo": echo})
	startNeighbour(t, addr)
	c := h2raw.Dial(t, addr, http2.Setting{ID: http2.SettingInitialWindowSize, Val: maxWindow})
	if err := c.Framer.WriteWindowUpdate(0, maxWindow-65535); err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, 60<<10)
	sent := make(chan int, 1)
	go func() { // ends when a write fails: the server closed the connection
		id := uint32(1)
		for ; id < 1<<20; id += 2 {
			if c.Send(id, false, "/s/Echo") != nil {
				break
			}
			if c.Data(id, h2raw.Frame(msg), true) != nil {
				break
			}
		}
		sent <- int(id / 2)
	}()
	select {
	case n := <-sent:
		t.Logf("the server closed the connection after %d calls", n)
	case <-time.After(20 * time.Second):
		t.Fatal("the connection of a client that does not read is still open")
	}
	waitIdle(t, s, 1)
}
