package triple

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// rawClient speaks HTTP/2 frame by frame (x/net's Framer), to send what
// no well-behaved client would.
type rawClient struct {
	t   testing.TB
	nc  net.Conn
	fr  *http2.Framer
	hb  bytes.Buffer
	enc *hpack.Encoder
}

// rawDial connects, sends the preface and SETTINGS, and acknowledges the
// server's SETTINGS.
func rawDial(t testing.TB, addr string, settings ...http2.Setting) *rawClient {
	t.Helper()
	return rawDialAck(t, addr, true, settings...)
}

// rawDialAck is rawDial; without ack it does not wait for the server's
// SETTINGS nor acknowledge them.
func rawDialAck(t testing.TB, addr string, ack bool, settings ...http2.Setting) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := &rawClient{t: t, nc: nc, fr: http2.NewFramer(nc, nc)}
	c.enc = hpack.NewEncoder(&c.hb)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.fr.MaxHeaderListSize = 1 << 20
	if _, err := io.WriteString(nc, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := c.fr.WriteSettings(settings...); err != nil {
		t.Fatal(err)
	}
	if !ack {
		return c
	}
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the server's SETTINGS: %v", err)
		}
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			break
		}
	}
	if err := c.fr.WriteSettingsAck(); err != nil {
		t.Fatal(err)
	}
	return c
}

// block encodes a header block.
func (c *rawClient) block(fields ...string) []byte {
	c.hb.Reset()
	for i := 0; i+1 < len(fields); i += 2 {
		_ = c.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]}) // to a bytes.Buffer
	}
	return append([]byte(nil), c.hb.Bytes()...)
}

// requestFields are a gRPC request's headers for path, then extra ones.
func requestFields(path string, extra ...string) []string {
	return append([]string{":method", "POST", ":scheme", "http", ":path", path, ":authority", "test",
		"content-type", "application/grpc", "te", "trailers"}, extra...)
}

// request opens stream id with a gRPC request's headers.
func (c *rawClient) request(id uint32, endStream bool, path string, extra ...string) {
	c.t.Helper()
	if err := c.send(id, endStream, path, extra...); err != nil {
		c.t.Fatal(err)
	}
}

// send is request for goroutines other than the test's: it returns the
// error.
func (c *rawClient) send(id uint32, endStream bool, path string, extra ...string) error {
	return c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.block(requestFields(path, extra...)...),
		EndStream: endStream, EndHeaders: true})
}

// message sends one gRPC message on stream id.
func (c *rawClient) message(id uint32, msg []byte, endStream bool) {
	c.t.Helper()
	if err := c.fr.WriteData(id, endStream, grpcFrame(msg)); err != nil {
		c.t.Fatal(err)
	}
}

// data sends b on stream id in DATA frames of at most 16 KiB.
func (c *rawClient) data(id uint32, b []byte, endStream bool) error {
	for len(b) > 16384 {
		if err := c.fr.WriteData(id, false, b[:16384]); err != nil {
			return err
		}
		b = b[16384:]
	}
	return c.fr.WriteData(id, endStream, b)
}

func grpcFrame(msg []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg))), msg...)
}

// response is what the server sent on one stream.
type response struct {
	headers, trailers []hpack.HeaderField
	data              []byte
	rst               http2.ErrCode
	reset, ended      bool
}

func field(fs []hpack.HeaderField, name string) string {
	for _, f := range fs {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// status is the response's grpc-status (from trailers, or headers for a
// trailers-only response), -1 without one.
func (r *response) status() int {
	v := field(r.trailers, "grpc-status")
	if v == "" {
		v = field(r.headers, "grpc-status")
	}
	if v == "" {
		return -1
	}
	n, _ := strconv.Atoi(v)
	return n
}

// conversation is what the server sent on the connection.
type conversation struct {
	streams map[uint32]*response
	goAway  *http2.GoAwayFrame
	pings   int
	acks    int    // SETTINGS acks
	err     error  // how reading ended
	windows uint32 // connection WINDOW_UPDATE increments
}

func (v *conversation) stream(id uint32) *response {
	if v.streams[id] == nil {
		v.streams[id] = &response{}
	}
	return v.streams[id]
}

// read reads frames until done says so, the connection ends, or the
// timeout passes.
func (c *rawClient) read(timeout time.Duration, done func(v *conversation) bool) *conversation {
	c.t.Helper()
	v := &conversation{streams: map[uint32]*response{}}
	end := time.Now().Add(timeout)
	for !done(v) {
		_ = c.nc.SetReadDeadline(end)
		f, err := c.fr.ReadFrame()
		if err != nil {
			v.err = err
			return v
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			r := v.stream(f.StreamID)
			if r.headers == nil {
				r.headers = f.Fields
			} else {
				r.trailers = f.Fields
			}
			r.ended = r.ended || f.StreamEnded()
		case *http2.DataFrame:
			r := v.stream(f.StreamID)
			r.data = append(r.data, f.Data()...)
			r.ended = r.ended || f.StreamEnded()
		case *http2.RSTStreamFrame:
			r := v.stream(f.StreamID)
			r.reset, r.rst = true, f.ErrCode
		case *http2.GoAwayFrame:
			g := *f
			g.FrameHeader = f.FrameHeader
			v.goAway = &g
			v.goAway.DebugData()
		case *http2.PingFrame:
			if f.IsAck() {
				v.pings++
			}
		case *http2.SettingsFrame:
			if f.IsAck() {
				v.acks++
			}
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				v.windows += f.Increment
			}
		}
	}
	return v
}

// goneAway says whether the server sent GOAWAY or closed the connection.
func goneAway(v *conversation) bool { return v.goAway != nil || v.err != nil && !isTimeout(v.err) }

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// ended says whether stream id was answered whole or reset.
func ended(id uint32) func(v *conversation) bool {
	return func(v *conversation) bool {
		r := v.streams[id]
		return r != nil && (r.ended || r.reset) || goneAway(v)
	}
}

// neighbour is a healthy grpc-go client on a connection of its own that
// calls in a loop while a test misbehaves on another: every call must
// succeed, each within a second.
type neighbour struct {
	calls, fails atomic.Int64
	slowest      atomic.Int64
	stop         chan struct{}
	done         sync.WaitGroup
	firstErr     atomic.Value
}

func startNeighbour(t *testing.T, addr string) *neighbour {
	cc := dial(t, addr)
	n := &neighbour{stop: make(chan struct{})}
	n.done.Add(1)
	go func() {
		defer n.done.Done()
		for {
			select {
			case <-n.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			t0 := time.Now()
			resp, err := invoke(ctx, cc, "/s/Echo", []byte("hi"))
			cancel()
			if d := int64(time.Since(t0)); d > n.slowest.Load() {
				n.slowest.Store(d)
			}
			if err == nil && string(resp) != "echo:hi" {
				err = errors.New("wrong answer " + string(resp))
			}
			if err != nil {
				n.fails.Add(1)
				n.firstErr.CompareAndSwap(nil, err.Error())
			}
			n.calls.Add(1)
			time.Sleep(time.Millisecond)
		}
	}()
	t.Cleanup(func() { n.check(t) })
	return n
}

// check stops the neighbour and fails t unless it was served throughout.
func (n *neighbour) check(t *testing.T) {
	select {
	case <-n.stop:
		return
	default:
	}
	// Served after the attack too.
	for before, end := n.calls.Load(), time.Now().Add(5*time.Second); n.calls.Load() < before+3 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	close(n.stop)
	n.done.Wait()
	if n.calls.Load() == 0 {
		t.Error("the neighbour made no call")
	}
	if f := n.fails.Load(); f > 0 {
		t.Errorf("the neighbour failed %d of %d calls: %v", f, n.calls.Load(), n.firstErr.Load())
	}
	if s := time.Duration(n.slowest.Load()); s > time.Second {
		t.Errorf("the neighbour's slowest call took %v", s)
	}
	t.Logf("neighbour: %d calls, slowest %v", n.calls.Load(), time.Duration(n.slowest.Load()))
}
