package protocol

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// unhex turns a spaced hex dump, with quoted ASCII strings, into bytes.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	var out []byte
	for s != "" {
		s = strings.TrimLeft(s, " \t\n")
		if s == "" {
			break
		}
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"') + 1
			out = append(out, s[1:end]...)
			s = s[end+1:]
			continue
		}
		tok := s
		if i := strings.IndexAny(s, " \t\n"); i >= 0 {
			tok, s = s[:i], s[i:]
		} else {
			s = ""
		}
		b, err := hex.DecodeString(tok)
		if err != nil {
			t.Fatalf("bad hex %q: %v", tok, err)
		}
		out = append(out, b...)
	}
	return out
}

const demoService = "org.apache.dubbo.demo.DemoService"

// PROTOCOLS.md B.10, request (header + body).
const b10Request = `da bb c2 00 00 00 00 00 00 00 00 01 00 00 00 c3
05 32 2e 30 2e 32
30 21 "org.apache.dubbo.demo.DemoService"
05 30 2e 30 2e 30
08 73 61 79 48 65 6c 6c 6f
12 4c 6a 61 76 61 2f 6c 61 6e 67 2f 53 74 72 69 6e 67 3b
05 77 6f 72 6c 64
48
04 70 61 74 68 30 21 "org.apache.dubbo.demo.DemoService"
09 69 6e 74 65 72 66 61 63 65 30 21 "org.apache.dubbo.demo.DemoService"
07 76 65 72 73 69 6f 6e 05 30 2e 30 2e 30
07 74 69 6d 65 6f 75 74 04 31 30 30 30
5a`

const b10Response = `da bb 02 14 00 00 00 00 00 00 00 01 00 00 00 1b
94
0b 48 65 6c 6c 6f 20 77 6f 72 6c 64
48 05 64 75 62 62 6f 05 32 2e 30 2e 32 5a`

func b10Req() *Request {
	return &Request{
		ID: 1, TwoWay: true, Serialization: SerializationHessian2,
		DubboVersion: "2.0.2", Path: demoService, Version: "0.0.0", Method: "sayHello",
		ParamDesc: "Ljava/lang/String;", Args: []any{"world"},
		Attachments: map[string]any{"path": demoService, "interface": demoService, "version": "0.0.0", "timeout": "1000"},
	}
}

func readOne(t testing.TB, b []byte) Frame {
	t.Helper()
	f, err := NewDecoder(bytes.NewReader(b), 0).ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestWorkedExampleB10(t *testing.T) {
	raw := unhex(t, b10Request)
	if len(raw) != HeaderSize+0xc3 {
		t.Fatalf("test data: %d bytes", len(raw))
	}
	var bd BodyDecoder
	got, err := bd.DecodeRequest(readOne(t, raw))
	if err != nil {
		t.Fatal(err)
	}
	want := b10Req()
	want.Size = len(raw) // decoding records the frame's length
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded\n%#v\nwant\n%#v", got, want)
	}

	// Our encoding of the same request decodes identically and has the
	// same length (only the attachment order may differ).
	ours, err := NewEncoder(0).AppendRequest(nil, b10Req())
	if err != nil {
		t.Fatal(err)
	}
	if len(ours) != len(raw) || !bytes.Equal(ours[:HeaderSize+0x45], raw[:HeaderSize+0x45]) {
		t.Errorf("encoding differs from B.10 before the attachments:\n% x\n% x", ours, raw)
	}
	again, err := bd.DecodeRequest(readOne(t, ours))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, want) {
		t.Errorf("round trip = %#v", again)
	}

	resp, err := bd.DecodeResponse(readOne(t, unhex(t, b10Response)))
	if err != nil {
		t.Fatal(err)
	}
	wantResp := &Response{ID: 1, Status: StatusOK, Serialization: 2, Value: "Hello world",
		Attachments: map[string]any{"dubbo": "2.0.2"}, Size: len(unhex(t, b10Response))}
	if !reflect.DeepEqual(resp, wantResp) {
		t.Errorf("response = %#v", resp)
	}
	// A Java provider's answer is byte-exact with ours.
	enc, err := NewEncoder(0).AppendResponse(nil, &Response{ID: 1, Value: "Hello world"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, unhex(t, b10Response)) {
		t.Errorf("response bytes\n% x\nwant\n% x", enc, unhex(t, b10Response))
	}
}

func TestEventsByteExact(t *testing.T) {
	enc := NewEncoder(0)
	tests := []struct {
		name string
		got  func() ([]byte, error)
		want string
	}{
		{"heartbeat request", func() ([]byte, error) { return enc.AppendRequest(nil, Heartbeat(7)) },
			"da bb e2 00 00 00 00 00 00 00 00 07 00 00 00 01 4e"},
		{"heartbeat response", func() ([]byte, error) { return enc.AppendResponse(nil, ResponseTo(Heartbeat(7))) },
			"da bb 22 14 00 00 00 00 00 00 00 07 00 00 00 01 4e"},
		{"read-only event", func() ([]byte, error) { return enc.AppendRequest(nil, ReadOnlyEvent(-2)) },
			"da bb a2 00 ff ff ff ff ff ff ff fe 00 00 00 02 01 52"},
	}
	for _, tt := range tests {
		got, err := tt.got()
		if err != nil {
			t.Fatal(err)
		}
		if want := unhex(t, tt.want); !bytes.Equal(got, want) {
			t.Errorf("%s:\n got % x\nwant % x", tt.name, got, want)
		}
	}

	var bd BodyDecoder
	hb, err := bd.DecodeRequest(readOne(t, unhex(t, "da bb e2 00 00 00 00 00 00 00 00 07 00 00 00 01 4e")))
	if err != nil || !hb.IsHeartbeat() || !hb.TwoWay || hb.ID != 7 {
		t.Errorf("heartbeat = %+v, %v", hb, err)
	}
	ro, err := bd.DecodeRequest(readOne(t, unhex(t, "da bb a2 00 00 00 00 00 00 00 00 03 00 00 00 02 01 52")))
	if err != nil || ro.IsHeartbeat() || ro.TwoWay || ro.EventData != EventReadOnly {
		t.Errorf("read-only event = %+v, %v", ro, err)
	}
	// dubbo-go answers heartbeats with body N N.
	r, err := bd.DecodeResponse(readOne(t, unhex(t, "da bb 22 14 00 00 00 00 00 00 00 07 00 00 00 02 4e 4e")))
	if err != nil || !r.Event || r.Value != nil || r.Status != StatusOK {
		t.Errorf("dubbo-go heartbeat response = %+v, %v", r, err)
	}
}

func TestRequestRoundTrip(t *testing.T) {
	tests := []*Request{
		b10Req(),
		{ID: -5, TwoWay: true, Serialization: 2, DubboVersion: "2.0.2", Path: "org.example.Greeter", Version: "1.0.0",
			Method: "add", ParamDesc: "II", Args: []any{int32(2), int32(3)},
			Attachments: map[string]any{"group": "g", "timeout": "1000"}},
		{ID: 9, Serialization: 2, DubboVersion: "2.0.2", Path: "org.example.Greeter", Version: "", Method: "ping",
			Attachments: map[string]any{}}, // oneway, no arguments
		{ID: 10, TwoWay: true, Serialization: 2, DubboVersion: "2.0.2", Path: "org.example.Greeter", Method: MethodEcho,
			ParamDesc: EchoDescriptor, Args: []any{int64(42)}, Attachments: map[string]any{}},
		{ID: 11, TwoWay: true, Serialization: 2, DubboVersion: "2.0.2", Path: "org.example.Greeter", Method: MethodInvoke,
			ParamDesc: GenericDescriptor,
			Args: []any{"echoMap", []string{"java.util.Map"},
				[]any{map[any]any{"a": int32(1), "nested": []any{"x", true, nil, 1.5}}}},
			Attachments: map[string]any{"generic": "true"}},
	}
	enc := NewEncoder(0)
	var buf []byte
	for _, r := range tests {
		var err error
		n := len(buf)
		if buf, err = enc.AppendRequest(buf, r); err != nil {
			t.Fatal(err)
		}
		r.Size = len(buf) - n // what decoding records
	}
	// All frames appended to one buffer come back in order from one stream.
	dec := NewDecoder(bytes.NewReader(buf), 0)
	for _, want := range tests {
		f, err := dec.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		got, err := dec.DecodeRequest(f)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip\n got %#v\nwant %#v", got, want)
		}
	}
	if _, err := dec.ReadFrame(); err != io.EOF {
		t.Errorf("after the last frame: %v, want io.EOF", err)
	}
}

func TestResponseRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   *Response
		want *Response // nil = same as in
		typ  byte      // response type byte on the wire
	}{
		{"value", &Response{ID: 1, Value: "Hello, world", Attachments: map[string]any{"k": "v"}},
			&Response{ID: 1, Status: StatusOK, Serialization: 2, Value: "Hello, world", Attachments: map[string]any{"k": "v", "dubbo": "2.0.2"}}, 0x94},
		{"null", &Response{ID: 2},
			&Response{ID: 2, Status: StatusOK, Serialization: 2, Attachments: map[string]any{"dubbo": "2.0.2"}}, 0x95},
		{"exception", &Response{ID: 3, Exception: &Exception{Class: "java.lang.IllegalArgumentException", Message: "bad name"}},
			&Response{ID: 3, Status: StatusOK, Serialization: 2, Exception: &Exception{Class: "java.lang.IllegalArgumentException", Message: "bad name"}, Attachments: map[string]any{"dubbo": "2.0.2"}}, 0x93},
		{"unknown exception class is wrapped", &Response{ID: 4, Exception: &Exception{Class: "com.acme.Oops", Message: "boom"}},
			&Response{ID: 4, Status: StatusOK, Serialization: 2, Exception: &Exception{Class: "java.lang.RuntimeException", Message: "com.acme.Oops: boom"}, Attachments: map[string]any{"dubbo": "2.0.2"}}, 0x93},
		{"legacy value", &Response{ID: 5, Legacy: true, Value: int64(7)},
			&Response{ID: 5, Status: StatusOK, Serialization: 2, Legacy: true, Value: int64(7)}, 0x91},
		{"legacy null", &Response{ID: 6, Legacy: true},
			&Response{ID: 6, Status: StatusOK, Serialization: 2, Legacy: true}, 0x92},
		{"legacy exception", &Response{ID: 7, Legacy: true, Exception: &Exception{Message: "fail"}},
			&Response{ID: 7, Status: StatusOK, Serialization: 2, Legacy: true, Exception: &Exception{Class: "java.lang.RuntimeException", Message: "fail"}}, 0x90},
		{"service error", &Response{ID: 8, Status: StatusServiceError, ErrorMessage: "Not found exported service"},
			&Response{ID: 8, Status: StatusServiceError, Serialization: 2, ErrorMessage: "Not found exported service"}, 0},
	}
	enc := NewEncoder(0)
	var bd BodyDecoder
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := enc.AppendResponse(nil, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if tt.typ != 0 && b[HeaderSize] != tt.typ {
				t.Errorf("response type byte %02x, want %02x", b[HeaderSize], tt.typ)
			}
			got, err := bd.DecodeResponse(readOne(t, b))
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Size = len(b) // decoding records the frame's length
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("\n got %#v %+v\nwant %#v %+v", got, got.Exception, tt.want, tt.want.Exception)
			}
		})
	}
}

func TestResponseToFollowsConsumerVersion(t *testing.T) {
	for _, tt := range []struct {
		version string
		legacy  bool
	}{{"2.0.2", false}, {"2.0.99", false}, {"2.5.3", true}, {"2.6.2", true}, {"3.0.0", true}, {"", true}, {"x.y", true}} {
		if got := ResponseTo(&Request{DubboVersion: tt.version}).Legacy; got != tt.legacy {
			t.Errorf("version %q: Legacy = %v, want %v", tt.version, got, tt.legacy)
		}
	}
}

func TestDecodeForeignBodies(t *testing.T) {
	hdr := func(flags, status byte, body []byte) []byte {
		h := Header{ID: 1, Request: flags&0x80 != 0, TwoWay: flags&0x40 != 0, Serialization: flags & 0x1f,
			Status: Status(status), BodyLen: len(body)}
		return append(h.appendTo(nil), body...)
	}
	reqPrefix := `05 "2.0.2" 13 "org.example.Greeter" 00 07 "$invoke"
		30 38 "Ljava/lang/String;[Ljava/lang/String;[Ljava/lang/Object;" 08 "sayHello"`
	var bd BodyDecoder

	t.Run("java generic call with compact typed lists", func(t *testing.T) {
		body := unhex(t, reqPrefix+` 71 07 "[string" 10 "java.lang.String" 71 07 "[object" 05 "world"
			48 07 "generic" 04 "true" 5a`)
		r, err := bd.DecodeRequest(readOne(t, hdr(0xc2, 0, body)))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Args) != 3 || r.Args[0] != "sayHello" || r.Attachment("generic") != "true" {
			t.Fatalf("request = %#v", r)
		}
		if got := reflect.ValueOf(r.Args[1]); got.Kind() != reflect.Slice || got.Len() != 1 || got.Index(0).Interface() != "java.lang.String" {
			t.Errorf("types = %#v", r.Args[1])
		}
		if got := reflect.ValueOf(r.Args[2]); got.Kind() != reflect.Slice || got.Len() != 1 || got.Index(0).Interface() != "world" {
			t.Errorf("args = %#v", r.Args[2])
		}
	})

	t.Run("dubbo-go generic call with V lists", func(t *testing.T) {
		body := unhex(t, reqPrefix+` 56 07 "[string" 91 10 "java.lang.String" 56 07 "[object" 91 05 "world"
			48 07 "generic" 04 "true" 5a`)
		r, err := bd.DecodeRequest(readOne(t, hdr(0xc2, 0, body)))
		if err != nil {
			t.Fatal(err)
		}
		if reflect.ValueOf(r.Args[1]).Index(0).Interface() != "java.lang.String" || reflect.ValueOf(r.Args[2]).Index(0).Interface() != "world" {
			t.Errorf("args = %#v", r.Args)
		}
	})

	t.Run("java exception with self-referencing cause", func(t *testing.T) {
		// hessian-lite order (B.9): suppressedExceptions, stackTrace, cause, detailMessage;
		// cause = Q 0, the exception itself.
		body := unhex(t, `93 43 1f "java.lang.IllegalStateException" 94
			14 "suppressedExceptions" 0a "stackTrace" 05 "cause" 0d "detailMessage"
			60 70 1f "java.util.Collections$EmptyList" 70 1c "[java.lang.StackTraceElement"
			51 90 0a "no greeter" 48 05 "dubbo" 05 "2.0.2" 5a`)
		r, err := bd.DecodeResponse(readOne(t, hdr(0x02, 20, body)))
		if err != nil {
			t.Fatal(err)
		}
		want := &Exception{Class: "java.lang.IllegalStateException", Message: "no greeter"}
		if !reflect.DeepEqual(r.Exception, want) || r.Attachments["dubbo"] != "2.0.2" {
			t.Errorf("exception = %#v, attachments %v", r.Exception, r.Attachments)
		}
	})

	t.Run("unknown exception class without message", func(t *testing.T) {
		body := unhex(t, `90 43 0d "com.acme.Oops" 94 0d "detailMessage" 05 "cause" 0a "stackTrace"
			14 "suppressedExceptions" 60 4e 51 90 78 78`)
		r, err := bd.DecodeResponse(readOne(t, hdr(0x02, 20, body)))
		if err != nil {
			t.Fatal(err)
		}
		if want := (&Exception{Class: "com.acme.Oops", Message: "com.acme.Oops"}); !reflect.DeepEqual(r.Exception, want) || !r.Legacy {
			t.Errorf("exception = %#v", r.Exception)
		}
	})

	t.Run("dubbo-go response with trailing N", func(t *testing.T) {
		body := unhex(t, `94 0c "Hello, world" 48 05 "dubbo" 05 "2.0.2" 5a 4e`)
		r, err := bd.DecodeResponse(readOne(t, hdr(0x02, 20, body)))
		if err != nil || r.Value != "Hello, world" {
			t.Errorf("response = %#v, %v", r, err)
		}
	})

	t.Run("status 70 with message", func(t *testing.T) {
		r, err := bd.DecodeResponse(readOne(t, hdr(0x02, 70, unhex(t, `0b "no provider"`))))
		if err != nil || r.Status != StatusServiceError || r.ErrorMessage != "no provider" {
			t.Errorf("response = %#v, %v", r, err)
		}
	})

	t.Run("request without attachments", func(t *testing.T) {
		body := unhex(t, `05 "2.5.3" 01 "p" 00 01 "m" 00`)
		r, err := bd.DecodeRequest(readOne(t, hdr(0xc2, 0, body)))
		if err != nil || r.Method != "m" || r.Attachments != nil || r.DubboVersion != "2.5.3" {
			t.Errorf("request = %#v, %v", r, err)
		}
	})
}

func TestDecodeErrors(t *testing.T) {
	frame := func(flags byte, body string) Frame {
		b := unhex(t, body)
		return Frame{Header: Header{ID: 1, Request: flags&0x80 != 0, TwoWay: true, Serialization: flags & 0x1f, BodyLen: len(b), Status: StatusOK}, Body: b}
	}
	var bd BodyDecoder
	tests := []struct {
		name string
		f    Frame
		want error
	}{
		{"fastjson2 request", frame(0x80|23, `4e`), ErrUnsupportedSerialization},
		{"missing arguments", frame(0xc2, `05 "2.0.2" 01 "p" 00 01 "m" 02 "II" 91`), ErrMalformedBody},
		{"bad descriptor", frame(0xc2, `05 "2.0.2" 01 "p" 00 01 "m" 01 "X"`), ErrMalformedBody},
		{"path not a string", frame(0xc2, `05 "2.0.2" 91 00 01 "m" 00`), ErrMalformedBody},
		{"truncated string", frame(0xc2, `05 "2.0"`), ErrMalformedBody},
		{"list longer than body", frame(0xc2, `05 "2.0.2" 01 "p" 00 01 "m" 01 "I" 58 49 7f ff ff ff 90`), ErrMalformedBody},
		{"non-string attachment key", frame(0xc2, `05 "2.0.2" 01 "p" 00 01 "m" 00 48 91 91 5a`), ErrMalformedBody},
		{"deep nesting", frame(0xc2, `05 "2.0.2" 01 "p" 00 01 "m" 12 "Ljava/lang/Object;"`+strings.Repeat(" 57", 1000)), ErrMalformedBody},
	}
	for _, tt := range tests {
		if _, err := bd.DecodeRequest(tt.f); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
	respTests := []struct {
		name string
		f    Frame
	}{
		{"empty OK body", frame(0x02, ``)},
		{"unknown response type", frame(0x02, `96 4e`)},
		{"value missing", frame(0x02, `94`)},
		{"type not an int", frame(0x02, `01 "x"`)},
	}
	for _, tt := range respTests {
		if _, err := bd.DecodeResponse(tt.f); !errors.Is(err, ErrMalformedBody) {
			t.Errorf("%s: err = %v, want ErrMalformedBody", tt.name, err)
		}
	}
}

func TestPayloadLimit(t *testing.T) {
	big := &Request{ID: 3, TwoWay: true, Path: "p", Method: "m", ParamDesc: "Ljava/lang/String;", Args: []any{strings.Repeat("x", 200)}}
	if out, err := NewEncoder(100).AppendRequest([]byte("keep"), big); !errors.Is(err, ErrPayloadTooLarge) || string(out) != "keep" {
		t.Errorf("encode over limit: %q, %v", out, err)
	}
	frame, err := NewEncoder(0).AppendRequest(nil, big)
	if err != nil {
		t.Fatal(err)
	}
	small, err := NewEncoder(0).AppendRequest(nil, b10Req())
	if err != nil {
		t.Fatal(err)
	}
	// The decoder reports the oversized body from the header alone, then
	// skips it and goes on with the next frame on the same stream.
	dec := NewDecoder(bufio.NewReader(bytes.NewReader(append(frame, small...))), 200)
	h, err := dec.ReadHeader()
	if !errors.Is(err, ErrPayloadTooLarge) || h.ID != 3 || !strings.Contains(err.Error(), "exceeds limit 200") {
		t.Fatalf("header = %+v, err = %v", h, err)
	}
	if err := dec.SkipBody(h); err != nil {
		t.Fatal(err)
	}
	f, err := dec.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	if r, err := dec.DecodeRequest(f); err != nil || r.Method != "sayHello" {
		t.Errorf("next frame: %+v, %v", r, err)
	}
}

func TestHeaderErrors(t *testing.T) {
	tests := []struct {
		in   string
		want error
	}{
		{"47 45 54 20 2f 20 48 54 54 50 2f 31 2e 31 0d 0a", ErrBadMagic}, // "GET / HTTP/1.1"
		{"da bb c2 00 00 00 00 00 00 00 00 01 80 00 00 00", ErrBadHeader},
	}
	for _, tt := range tests {
		_, err := NewDecoder(bytes.NewReader(unhex(t, tt.in)), 0).ReadFrame()
		if !errors.Is(err, tt.want) {
			t.Errorf("% s: err = %v, want %v", tt.in, err, tt.want)
		}
	}
	_, err := NewDecoder(bytes.NewReader(unhex(t, "da bb c2 00 00 00 00 00 00 00 00 01 00 00 00 05 4e")), 0).ReadFrame()
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short body: %v", err)
	}
}

func TestStatusString(t *testing.T) {
	if StatusOK.String() != "OK" || StatusServerThreadpoolExhaust.String() != "SERVER_THREADPOOL_EXHAUSTED_ERROR" || Status(7).String() != "STATUS_7" {
		t.Error("Status.String")
	}
}
