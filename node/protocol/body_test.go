package protocol

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"
	"testing/iotest"
)

// Bodies of every size class come back whole, however the stream splits
// them: the reused buffer, the first chunk of a large one, and its growth.
func TestReadBodySizes(t *testing.T) {
	for _, n := range []int{0, 1, SmallBody, SmallBody + 1, firstChunk, firstChunk + 1, 3*firstChunk + 7} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(i * 7)
		}
		frame := append(rawHeader(int64(n), n), body...)
		frame = append(frame, rawHeader(1, 1)...) // a next frame must stay unread
		frame = append(frame, 0x4e)
		dec := NewDecoder(bufio.NewReaderSize(iotest.HalfReader(bytes.NewReader(frame)), 4096), 1<<20)
		f, err := dec.ReadFrame()
		if err != nil || !bytes.Equal(f.Body, body) {
			t.Fatalf("%d-byte body: %d bytes back, equal %v, err %v", n, len(f.Body), bytes.Equal(f.Body, body), err)
		}
		if f, err := dec.ReadFrame(); err != nil || f.ID != 1 || !bytes.Equal(f.Body, []byte{0x4e}) {
			t.Fatalf("after a %d-byte body the next frame is %+v, %v", n, f, err)
		}
	}
}

// A header announcing 8 MiB followed by one byte costs about the first
// chunk, not the announced size, and the short body is an unexpected EOF.
func TestReadBodyGrowsAsBytesArrive(t *testing.T) {
	frame := append(rawHeader(9, 8<<20), 0x4e)
	dec := NewDecoder(bytes.NewReader(frame), DefaultPayload)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := dec.ReadFrame()
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err %v, want unexpected EOF", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Fatalf("reading 1 byte of an announced 8 MiB body allocated %d KiB", got>>10)
	}
}

// rawHeader is a two-way hessian2 request header announcing n body bytes.
func rawHeader(id int64, n int) []byte {
	h := Header{ID: id, Request: true, TwoWay: true, Serialization: SerializationHessian2, BodyLen: n}
	return h.appendTo(nil)
}
