package protocol

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

const fuzzLimit = 64 << 10

func FuzzDecodeFrame(f *testing.F) {
	enc := NewEncoder(0)
	seeds := [][]byte{unhex(f, b10Request), unhex(f, b10Response)}
	for _, m := range []any{Heartbeat(1), ReadOnlyEvent(2)} {
		b, _ := enc.AppendRequest(nil, m.(*Request))
		seeds = append(seeds, b)
	}
	exc, _ := enc.AppendResponse(nil, &Response{ID: 3, Exception: &Exception{Message: "boom"}})
	seeds = append(seeds, exc)
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := NewDecoder(bytes.NewReader(data), fuzzLimit)
		for {
			fr, err := dec.ReadFrame()
			if errors.Is(err, ErrPayloadTooLarge) {
				if fr.BodyLen <= fuzzLimit {
					t.Fatalf("payload error for %d bytes", fr.BodyLen)
				}
				if dec.SkipBody(fr.Header) != nil {
					return
				}
				continue
			}
			if err != nil {
				if err != io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrBadMagic) && !errors.Is(err, ErrBadHeader) {
					t.Fatalf("unexpected error category: %v", err)
				}
				return
			}
			if len(fr.Body) != fr.BodyLen {
				t.Fatalf("body %d bytes, header says %d", len(fr.Body), fr.BodyLen)
			}
			var derr error
			if fr.Request {
				_, derr = dec.DecodeRequest(fr)
			} else {
				_, derr = dec.DecodeResponse(fr)
			}
			if derr != nil && !errors.Is(derr, ErrMalformedBody) && !errors.Is(derr, ErrUnsupportedSerialization) {
				t.Fatalf("unexpected error category: %v", derr)
			}
		}
	})
}

// FuzzDecodeBody feeds arbitrary bodies behind valid headers, where the
// hessian scanner and library do the work.
func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{b10Request, b10Response} {
		b := unhex(f, s)
		f.Add(b[2], b[3], b[HeaderSize:])
	}
	f.Add(byte(0x02), byte(20), unhex(f, `93 43 1f "java.lang.IllegalStateException" 94
			14 "suppressedExceptions" 0a "stackTrace" 05 "cause" 0d "detailMessage"
			60 70 1f "java.util.Collections$EmptyList" 70 1c "[java.lang.StackTraceElement"
			51 90 0a "no greeter" 48 05 "dubbo" 05 "2.0.2" 5a`))
	f.Fuzz(func(t *testing.T, flags, status byte, body []byte) {
		h := Header{ID: 1, Request: flags&flagRequest != 0, TwoWay: flags&flagTwoWay != 0, Event: flags&flagEvent != 0,
			Serialization: SerializationHessian2, Status: Status(status), BodyLen: len(body)}
		var bd BodyDecoder
		var err error
		if h.Request {
			_, err = bd.DecodeRequest(Frame{h, body})
		} else {
			_, err = bd.DecodeResponse(Frame{h, body})
		}
		if err != nil && !errors.Is(err, ErrMalformedBody) {
			t.Fatalf("unexpected error category: %v", err)
		}
	})
}
