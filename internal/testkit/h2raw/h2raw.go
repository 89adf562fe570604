// Package h2raw speaks HTTP/2 to a gRPC server frame by frame (x/net's
// Framer and HPACK), for tests that send what no well-behaved client
// would: a Client writes any frame through its Framer, and Read collects
// what the server answers, stream by stream, until a condition holds. The
// Triple server's own tests and the end-to-end hostile-client tests use
// it.
package h2raw

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Client is one HTTP/2 connection to the server. One goroutine may write
// frames while another reads.
type Client struct {
	Conn   net.Conn
	Framer *http2.Framer
	t      testing.TB // the test of a Client from Dial
	hb     bytes.Buffer
	enc    *hpack.Encoder
}

// Dial connects, sends the preface and SETTINGS, and acknowledges the
// server's SETTINGS; it fails t if it cannot, and the connection closes
// when the test ends.
func Dial(t testing.TB, addr string, settings ...http2.Setting) *Client {
	t.Helper()
	return dial(t, addr, true, settings)
}

// DialNoAck is Dial without waiting for the server's SETTINGS nor
// acknowledging them: the client has not seen the server's limits.
func DialNoAck(t testing.TB, addr string, settings ...http2.Setting) *Client {
	t.Helper()
	return dial(t, addr, false, settings)
}

func dial(t testing.TB, addr string, ack bool, settings []http2.Setting) *Client {
	t.Helper()
	c, err := Connect(addr, ack, settings...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Conn.Close() })
	c.t = t
	return c
}

// Connect is Dial for goroutines other than the test's: it returns the
// error, and the caller closes the connection. With ack it waits (5s at
// most) for the server's SETTINGS and acknowledges them.
func Connect(addr string, ack bool, settings ...http2.Setting) (*Client, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	c := &Client{Conn: nc, Framer: http2.NewFramer(nc, nc)}
	c.enc = hpack.NewEncoder(&c.hb)
	c.Framer.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.Framer.MaxHeaderListSize = 1 << 20
	if err := c.start(ack, settings); err != nil {
		nc.Close()
		return nil, fmt.Errorf("http/2 preface to %s: %w", addr, err)
	}
	return c, nil
}

func (c *Client) start(ack bool, settings []http2.Setting) error {
	if _, err := io.WriteString(c.Conn, http2.ClientPreface); err != nil {
		return err
	}
	if err := c.Framer.WriteSettings(settings...); err != nil {
		return err
	}
	if !ack {
		return nil
	}
	_ = c.Conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		f, err := c.Framer.ReadFrame()
		if err != nil {
			return fmt.Errorf("reading the server's SETTINGS: %w", err)
		}
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			break
		}
	}
	return c.Framer.WriteSettingsAck()
}

// Block encodes a header block of name, value pairs.
func (c *Client) Block(fields ...string) []byte {
	c.hb.Reset()
	for i := 0; i+1 < len(fields); i += 2 {
		_ = c.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]}) // to a bytes.Buffer
	}
	return append([]byte(nil), c.hb.Bytes()...)
}

// RequestFields are a gRPC request's headers for path, then extra ones.
func RequestFields(path string, extra ...string) []string {
	return append([]string{":method", "POST", ":scheme", "http", ":path", path, ":authority", "test",
		"content-type", "application/grpc", "te", "trailers"}, extra...)
}

// Request opens stream id with a gRPC request's headers; it fails the
// test of a Client from Dial if it cannot.
func (c *Client) Request(id uint32, endStream bool, path string, extra ...string) {
	c.t.Helper()
	if err := c.Send(id, endStream, path, extra...); err != nil {
		c.t.Fatal(err)
	}
}

// Send is Request for goroutines other than the test's: it returns the
// error.
func (c *Client) Send(id uint32, endStream bool, path string, extra ...string) error {
	return c.SendFields(id, endStream, RequestFields(path, extra...)...)
}

// SendFields opens stream id with the header fields given, in one
// HEADERS frame.
func (c *Client) SendFields(id uint32, endStream bool, fields ...string) error {
	return c.Framer.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.Block(fields...), EndStream: endStream, EndHeaders: true})
}

// Message sends one gRPC message on stream id; it fails the test of a
// Client from Dial if it cannot.
func (c *Client) Message(id uint32, msg []byte, endStream bool) {
	c.t.Helper()
	if err := c.Data(id, Frame(msg), endStream); err != nil {
		c.t.Fatal(err)
	}
}

// Data sends b on stream id in DATA frames of at most 16 KiB.
func (c *Client) Data(id uint32, b []byte, endStream bool) error {
	for len(b) > 16384 {
		if err := c.Framer.WriteData(id, false, b[:16384]); err != nil {
			return err
		}
		b = b[16384:]
	}
	return c.Framer.WriteData(id, endStream, b)
}

// Frame is msg with gRPC's 5-byte prefix (not compressed).
func Frame(msg []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg))), msg...)
}

// Response is what the server sent on one stream.
type Response struct {
	Headers, Trailers []hpack.HeaderField
	Data              []byte
	RST               http2.ErrCode // the code of its RST_STREAM, if Reset
	Reset, Ended      bool
}

// Field is the value of the first field called name, "" without one.
func Field(fs []hpack.HeaderField, name string) string {
	for _, f := range fs {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// Status is the response's grpc-status (from trailers, or headers for a
// trailers-only response), -1 without one.
func (r *Response) Status() int {
	v := Field(r.Trailers, "grpc-status")
	if v == "" {
		v = Field(r.Headers, "grpc-status")
	}
	if v == "" {
		return -1
	}
	n, _ := strconv.Atoi(v)
	return n
}

// Message is the response's grpc-message, from trailers or headers.
func (r *Response) Message() string {
	if v := Field(r.Trailers, "grpc-message"); v != "" {
		return v
	}
	return Field(r.Headers, "grpc-message")
}

// Conversation is what the server sent on the connection.
type Conversation struct {
	Streams map[uint32]*Response
	GoAway  *http2.GoAwayFrame
	Pings   int    // PING acks
	Acks    int    // SETTINGS acks
	Err     error  // how reading ended
	Windows uint32 // connection WINDOW_UPDATE increments
}

// Stream is what the server sent on stream id, made empty if nothing yet.
func (v *Conversation) Stream(id uint32) *Response {
	if v.Streams[id] == nil {
		v.Streams[id] = &Response{}
	}
	return v.Streams[id]
}

// Read reads frames until done says so, the connection ends, or the
// timeout passes.
func (c *Client) Read(timeout time.Duration, done func(v *Conversation) bool) *Conversation {
	v := &Conversation{Streams: map[uint32]*Response{}}
	end := time.Now().Add(timeout)
	for !done(v) {
		_ = c.Conn.SetReadDeadline(end)
		f, err := c.Framer.ReadFrame()
		if err != nil {
			v.Err = err
			return v
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			r := v.Stream(f.StreamID)
			if r.Headers == nil {
				r.Headers = f.Fields
			} else {
				r.Trailers = f.Fields
			}
			r.Ended = r.Ended || f.StreamEnded()
		case *http2.DataFrame:
			r := v.Stream(f.StreamID)
			r.Data = append(r.Data, f.Data()...)
			r.Ended = r.Ended || f.StreamEnded()
		case *http2.RSTStreamFrame:
			r := v.Stream(f.StreamID)
			r.Reset, r.RST = true, f.ErrCode
		case *http2.GoAwayFrame:
			g := *f
			g.FrameHeader = f.FrameHeader
			v.GoAway = &g
			v.GoAway.DebugData()
		case *http2.PingFrame:
			if f.IsAck() {
				v.Pings++
			}
		case *http2.SettingsFrame:
			if f.IsAck() {
				v.Acks++
			}
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				v.Windows += f.Increment
			}
		}
	}
	return v
}

// GoneAway says whether the server sent GOAWAY or closed the connection.
func GoneAway(v *Conversation) bool { return v.GoAway != nil || v.Err != nil && !IsTimeout(v.Err) }

// IsTimeout says whether err is a read or write deadline passing.
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Ended says whether stream id was answered whole or reset.
func Ended(id uint32) func(v *Conversation) bool {
	return func(v *Conversation) bool {
		r := v.Streams[id]
		return r != nil && (r.Ended || r.Reset) || GoneAway(v)
	}
}
