package triple

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/dubbo-lab/dubbo/internal/testkit/h2raw"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// fuzzServer serves the fuzz targets: unary and streaming echoes.
func fuzzServer(f *testing.F, cfg Config) (*Server, string) {
	echoStream := streamFunc{rpc.BidiStream, func(_ context.Context, _ *Call, s Stream) *Status {
		for {
			msg, err := s.Recv()
			if err == io.EOF {
				return nil
			}
			var st *Status
			if errors.As(err, &st) {
				return st
			}
			if err != nil {
				return Errorf(Internal, "%v", err)
			}
			if err := s.Send(msg); err != nil {
				return nil
			}
		}
	}}
	return start(f, cfg, router{"s/Echo": echo, "s/Async": asyncUnary(echo), "s/Stream": echoStream})
}

// waitIdle waits until the server holds no more than keep connections
// (those of a neighbour).
func waitIdle(t *testing.T, s *Server, keep int64) {
	for end := time.Now().Add(5 * time.Second); s.open.Load() > keep; {
		if time.Now().After(end) {
			t.Fatalf("the server still holds %d connections after the client left", s.open.Load()-keep)
		}
		time.Sleep(time.Millisecond)
	}
}

// FuzzConn feeds arbitrary bytes, after a valid client preface, through a
// real connection: the server must neither crash nor hang on to the
// connection once the client is done, and must go on serving.
func FuzzConn(f *testing.F) {
	for _, seed := range connSeeds() {
		f.Add(seed)
	}
	s, addr := fuzzServer(f, Config{MaxMessage: 1 << 16, FrameTimeout: time.Second, MaxConcurrentStreams: 8, MaxHeaderListSize: 4096})
	f.Fuzz(func(t *testing.T, in []byte) {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		go func() { // ends when the connection does
			_, _ = io.WriteString(nc, http2.ClientPreface)
			_, _ = nc.Write(in)
			_ = nc.(*net.TCPConn).CloseWrite()
		}()
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.Copy(io.Discard, nc); err != nil && !isReset(err) {
			t.Fatalf("the server kept the connection after the client ended it: %v", err)
		}
		nc.Close()
		waitIdle(t, s, 0)
	})
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

// connSeeds are the seed inputs of FuzzConn: frames a client sends after
// its preface, each input on a fresh HPACK context.
func connSeeds() [][]byte {
	type frames func(fr *http2.Framer, block func(fields ...string) []byte)
	build := func(w frames) []byte {
		var buf, hb bytes.Buffer
		fr := http2.NewFramer(&buf, nil)
		enc := hpack.NewEncoder(&hb)
		block := func(fields ...string) []byte {
			hb.Reset()
			for i := 0; i+1 < len(fields); i += 2 {
				_ = enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
			}
			return append([]byte(nil), hb.Bytes()...)
		}
		w(fr, block)
		return buf.Bytes()
	}
	call := func(path string, extra ...string) func(fr *http2.Framer, block func(...string) []byte, id uint32, end bool) {
		return func(fr *http2.Framer, block func(...string) []byte, id uint32, end bool) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block(h2raw.RequestFields(path, extra...)...), EndHeaders: true, EndStream: end})
		}
	}
	z := &gzipCodec{}
	gz := z.compress(nil, []byte("compressed hello"))
	return [][]byte{
		build(func(fr *http2.Framer, block func(...string) []byte) {
			_ = fr.WriteSettings()
			call("/s/Echo")(fr, block, 1, false)
			_ = fr.WriteData(1, true, h2raw.Frame([]byte("hello")))
		}),
		build(func(fr *http2.Framer, block func(...string) []byte) {
			_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 10}, http2.Setting{ID: http2.SettingMaxFrameSize, Val: 20000})
			call("/s/Stream", "grpc-timeout", "1S", "x-id-bin", "AAE")(fr, block, 1, false)
			_ = fr.WriteData(1, false, h2raw.Frame([]byte("one")))
			_ = fr.WriteData(1, false, h2raw.Frame([]byte("two"))[:4])
			_ = fr.WriteData(1, true, h2raw.Frame([]byte("two"))[4:])
			_ = fr.WriteWindowUpdate(1, 1000)
			_ = fr.WriteWindowUpdate(0, 1000)
		}),
		build(func(fr *http2.Framer, block func(...string) []byte) {
			_ = fr.WriteSettings()
			call("/s/Async", "grpc-encoding", "gzip")(fr, block, 1, false)
			_ = fr.WriteData(1, true, append(binary.BigEndian.AppendUint32([]byte{1}, uint32(len(gz))), gz...))
			_ = fr.WriteRSTStream(1, http2.ErrCodeCancel)
		}),
		build(func(fr *http2.Framer, block func(...string) []byte) {
			_ = fr.WriteSettings()
			b := block(h2raw.RequestFields("/s/Echo", "x-a", "1", "x-b", "2")...)
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:5]})
			_ = fr.WriteContinuation(1, false, b[5:9])
			_ = fr.WriteContinuation(1, true, b[9:])
			_ = fr.WriteData(1, false, []byte{0, 0, 0, 0, 2, 'h'})
			_ = fr.WriteDataPadded(1, true, []byte{'i'}, make([]byte, 7))
		}),
		build(func(fr *http2.Framer, block func(...string) []byte) {
			_ = fr.WriteSettings()
			_ = fr.WritePing(false, [8]byte{1, 2, 3})
			_ = fr.WritePriority(3, http2.PriorityParam{StreamDep: 1, Weight: 9})
			for id := uint32(1); id < 40; id += 2 {
				call("/s/Stream")(fr, block, id, false)
				_ = fr.WriteRSTStream(id, http2.ErrCodeCancel)
			}
			_ = fr.WriteGoAway(0, http2.ErrCodeNo, nil)
		}),
		build(func(fr *http2.Framer, block func(...string) []byte) {
			_ = fr.WriteSettings()
			call("/s/Echo", "content-type", "text/plain")(fr, block, 1, true)
			call("/s/Nope")(fr, block, 3, true)
			call("/s/Echo", "grpc-timeout", "99999999999H")(fr, block, 5, true)
			_ = fr.WriteData(7, true, nil)
		}),
		build(func(fr *http2.Framer, block func(...string) []byte) {
			_ = fr.WriteSettings()
			call("/s/Echo")(fr, block, 1, false)
			_ = fr.WriteData(1, false, []byte{0, 0, 0x10, 0, 0}) // 1 MiB declared
			_ = fr.WriteRawFrame(0xff, 0, 0, []byte("unknown"))
			_ = fr.WriteData(1, true, []byte{2, 0, 0, 0, 0})
		}),
		{0, 0, 0, 4, 0, 0, 0, 0, 0},                         // an empty SETTINGS
		{0, 0x40, 0, 0, 0, 0, 0, 0, 0},                      // a frame past the size limit
		{0, 0, 8, 6, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}, // PING on a stream
		{},
	}
}

// FuzzMessages checks the gRPC message framing (5-byte prefix,
// compressed flag, lengths split across DATA frames at any point) against
// a model: a streaming echo sends back a prefix of the messages the model
// finds, all of them when the model finds no error, and ends with the
// model's status.
func FuzzMessages(f *testing.F) {
	z := &gzipCodec{}
	gz := z.compress(nil, []byte("compressed"))
	bomb := z.compress(nil, make([]byte, 10000))
	for _, seed := range []struct {
		data []byte
		cuts []byte
		gzip bool
	}{
		{append(h2raw.Frame([]byte("one")), h2raw.Frame([]byte("two"))...), []byte{3, 9}, false},
		{h2raw.Frame(nil), nil, false},
		{append(binary.BigEndian.AppendUint32([]byte{1}, uint32(len(gz))), gz...), []byte{1, 1, 1}, true},
		{append(binary.BigEndian.AppendUint32([]byte{1}, uint32(len(bomb))), bomb...), nil, true},
		{[]byte{1, 0, 0, 0, 1, 'x'}, nil, false},
		{[]byte{7, 0, 0, 0, 0}, nil, true},
		{[]byte{0, 0, 1, 0, 0, 'x'}, nil, false},
		{[]byte{0, 0, 0}, nil, false},
	} {
		f.Add(seed.data, seed.cuts, seed.gzip)
	}
	const limit = 4096
	_, addr := fuzzServer(f, Config{MaxMessage: limit})
	f.Fuzz(func(t *testing.T, data, cuts []byte, gzip bool) {
		if len(data) > 60000 {
			return // within the stream window: a stream that waits is another test
		}
		c := h2raw.Dial(t, addr)
		extra := []string{}
		if gzip {
			extra = append(extra, "grpc-encoding", "gzip")
		}
		c.Request(1, false, "/s/Stream", extra...)
		rest := data
		for _, cut := range cuts {
			n := min(int(cut), len(rest))
			if n == 0 {
				continue // a flood of empty DATA frames is abuse, and another test
			}
			if err := c.Framer.WriteData(1, false, rest[:n]); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
		}
		for len(rest) > 16384 {
			if err := c.Framer.WriteData(1, false, rest[:16384]); err != nil {
				t.Fatal(err)
			}
			rest = rest[16384:]
		}
		if err := c.Framer.WriteData(1, true, rest); err != nil {
			t.Fatal(err)
		}
		r := c.Read(10*time.Second, h2raw.Ended(1)).Stream(1)
		want, codes := messagesModel(data, gzip, limit)
		if !slices.Contains(codes, Code(r.Status())) {
			t.Fatalf("grpc-status %d, want one of %v (%s)", r.Status(), codes, h2raw.Field(append(r.Headers, r.Trailers...), "grpc-message"))
		}
		code := codes[0]
		got, err := splitMessages(r.Data, z)
		if err != nil {
			t.Fatalf("the server's messages: %v", err)
		}
		if len(got) > len(want) || code == OK && len(got) != len(want) {
			t.Fatalf("echoed %d messages, the model found %d", len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("message %d: echoed %q, want %q", i, got[i], want[i])
			}
		}
	})
}

// messagesModel reads gRPC messages the simple way: the messages, and
// the statuses a server may answer the stream with. Framing errors are
// found by the connection's reader as the bytes arrive, a message that
// does not inflate when the handler reads it: when both happen, either may
// end the stream first.
func messagesModel(data []byte, gzip bool, limit int) ([][]byte, []Code) {
	var msgs [][]byte
	framing := OK
	for len(data) > 0 {
		if len(data) < 5 {
			framing = Internal
			break
		}
		flag, n := data[0], binary.BigEndian.Uint32(data[1:5])
		if flag > 1 || flag == 1 && !gzip {
			framing = Internal
			break
		}
		if n > uint32(limit) {
			framing = ResourceExhausted
			break
		}
		if uint32(len(data)-5) < n {
			framing = Internal
			break
		}
		msgs = append(msgs, data[:5+n])
		data = data[5+n:]
	}
	z := &gzipCodec{}
	for i, m := range msgs {
		msg := m[5:]
		if m[0] == 1 {
			out, err := z.decompress(msg, limit)
			if err != nil {
				code := Internal
				if errors.Is(err, errTooLarge) {
					code = ResourceExhausted
				}
				if framing == OK {
					return msgs[:i], []Code{code}
				}
				return msgs[:i], []Code{code, framing}
			}
			msg = out
		}
		msgs[i] = msg
	}
	return msgs, []Code{framing}
}

// splitMessages reads the messages of a response body.
func splitMessages(b []byte, z *gzipCodec) ([][]byte, error) {
	var msgs [][]byte
	for len(b) > 0 {
		if len(b) < 5 {
			return nil, errors.New("a truncated prefix")
		}
		n := binary.BigEndian.Uint32(b[1:5])
		if uint32(len(b)-5) < n {
			return nil, errors.New("a truncated message of " + strconv.Itoa(int(n)))
		}
		msg := b[5 : 5+n]
		if b[0] == 1 {
			var err error
			if msg, err = z.decompress(msg, 1<<20); err != nil {
				return nil, err
			}
		}
		msgs = append(msgs, msg)
		b = b[5+n:]
	}
	return msgs, nil
}

// FuzzParseTimeout checks grpc-timeout parsing: what it accepts is 1 to 8
// digits and a unit, and reads back to the same duration.
func FuzzParseTimeout(f *testing.F) {
	for _, s := range []string{"1S", "100m", "99999999H", "0n", "5u", "1", "S", "123456789S", "1x", "-1S", "+1S", "1 S"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, err := parseTimeout(v)
		if err != nil {
			return
		}
		if len(v) < 2 || len(v) > 9 || d < 0 {
			t.Fatalf("accepted %q as %v", v, d)
		}
		n, perr := strconv.ParseUint(v[:len(v)-1], 10, 64)
		if perr != nil {
			t.Fatalf("accepted %q, whose digits are not a number: %v", v, perr)
		}
		unit := map[byte]time.Duration{'H': time.Hour, 'M': time.Minute, 'S': time.Second, 'm': time.Millisecond, 'u': time.Microsecond, 'n': time.Nanosecond}[v[len(v)-1]]
		if want := time.Duration(n) * unit; n <= uint64(1<<63-1)/uint64(unit) && d != want {
			t.Fatalf("%q = %v, want %v", v, d, want)
		}
	})
}
