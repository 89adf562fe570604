package protocol

import (
	"bytes"
	"testing"
)

func sayHello(id int64) *Request {
	return &Request{
		ID: id, TwoWay: true, Path: "org.example.Greeter", Version: "1.0.0", Method: "sayHello",
		ParamDesc: "Ljava/lang/String;", Args: []any{"world"},
		Attachments: map[string]any{"path": "org.example.Greeter", "interface": "org.example.Greeter",
			"version": "1.0.0", "timeout": "1000"},
	}
}

// BenchmarkEncodeDecodeRequest is one sayHello("world") request through the
// encoder and back through the streaming decoder.
func BenchmarkEncodeDecodeRequest(b *testing.B) {
	enc := NewEncoder(0)
	var rd bytes.Reader
	dec := NewDecoder(&rd, 0)
	req := sayHello(1)
	var buf []byte
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var err error
		if buf, err = enc.AppendRequest(buf[:0], req); err != nil {
			b.Fatal(err)
		}
		rd.Reset(buf)
		dec.r.Reset(&rd)
		f, err := dec.ReadFrame()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := dec.DecodeRequest(f); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkEncodeDecodeResponse is the "Hello, world" answer, with the
// dubbo attachment, both ways.
func BenchmarkEncodeDecodeResponse(b *testing.B) {
	enc := NewEncoder(0)
	var rd bytes.Reader
	dec := NewDecoder(&rd, 0)
	resp := &Response{ID: 1, Value: "Hello, world"}
	var buf []byte
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var err error
		if buf, err = enc.AppendResponse(buf[:0], resp); err != nil {
			b.Fatal(err)
		}
		rd.Reset(buf)
		dec.r.Reset(&rd)
		f, err := dec.ReadFrame()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := dec.DecodeResponse(f); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}
