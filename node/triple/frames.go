package triple

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// frameBuf encodes frames, with x/net's Framer and HPACK encoder, into one
// byte slice that goes to the connection's Writer in one piece, so that a
// response's frames stay together and in order. Its HPACK encoder never
// adds to the dynamic table: every header block it makes stands alone, so
// any goroutine may encode one and blocks may go out in any order (the
// price is a few bytes per block, which the constant blocks, encoded once
// per server, make up for in CPU).
type frameBuf struct {
	b   []byte
	fr  *http2.Framer
	hb  bytes.Buffer
	enc *hpack.Encoder
	msg []byte // a message's 5-byte prefix and first bytes, joined
}

func newFrameBuf() *frameBuf {
	f := &frameBuf{}
	f.fr = http2.NewFramer(f, nil)
	f.enc = hpack.NewEncoder(&f.hb)
	f.enc.SetMaxDynamicTableSizeLimit(0)
	// The first field would carry the table size update that the limit
	// asks for; the peer's table is empty anyway, and stays so, since this
	// encoder never indexes. Spend the update on a field thrown away.
	_ = f.enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
	f.hb.Reset()
	return f
}

// Write appends what the Framer encodes.
func (f *frameBuf) Write(p []byte) (int, error) {
	f.b = append(f.b, p...)
	return len(p), nil
}

func (f *frameBuf) reset() { f.b = f.b[:0] }

// field adds one field to the block being encoded (after startBlock).
func (f *frameBuf) field(name, value string) {
	_ = f.enc.WriteField(hpack.HeaderField{Name: name, Value: value})
}

func (f *frameBuf) startBlock() { f.hb.Reset() }

func (f *frameBuf) blockBytes() []byte { return f.hb.Bytes() }

// headers writes a header block as HEADERS and, past maxFrame bytes,
// CONTINUATION frames.
func (f *frameBuf) headers(id uint32, block []byte, endStream bool, maxFrame int) {
	first := block[:min(len(block), maxFrame)]
	rest := block[len(first):]
	_ = f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndStream: endStream, EndHeaders: len(rest) == 0})
	for len(rest) > 0 {
		n := min(len(rest), maxFrame)
		_ = f.fr.WriteContinuation(id, n == len(rest), rest[:n])
		rest = rest[n:]
	}
}

// message writes one gRPC message (the 5-byte prefix and msg) as DATA
// frames of at most maxFrame bytes.
func (f *frameBuf) message(id uint32, msg []byte, compressed bool, maxFrame int) {
	var flag byte
	if compressed {
		flag = 1
	}
	// The prefix shares the first frame with the start of the message.
	n := min(len(msg), maxFrame-5)
	f.msg = append(binary.BigEndian.AppendUint32(append(f.msg[:0], flag), uint32(len(msg))), msg[:n]...)
	_ = f.fr.WriteData(id, false, f.msg)
	for rest := msg[n:]; len(rest) > 0; {
		m := min(len(rest), maxFrame)
		_ = f.fr.WriteData(id, false, rest[:m])
		rest = rest[m:]
	}
}

// data writes raw DATA bytes (part of an encoded message) in frames of at
// most maxFrame bytes.
func (f *frameBuf) data(id uint32, b []byte, maxFrame int) {
	for len(b) > 0 {
		m := min(len(b), maxFrame)
		_ = f.fr.WriteData(id, false, b[:m])
		b = b[m:]
	}
}

func (f *frameBuf) rst(id uint32, code http2.ErrCode) { _ = f.fr.WriteRSTStream(id, code) }

func (f *frameBuf) windowUpdate(id uint32, n uint32) { _ = f.fr.WriteWindowUpdate(id, n) }

// statusFields appends the trailer fields of st to the block being
// encoded: grpc-status, and grpc-message and grpc-status-details-bin when
// set.
func (f *frameBuf) statusFields(st *Status) {
	if st == nil {
		f.field("grpc-status", "0")
		return
	}
	f.field("grpc-status", strconv.FormatUint(uint64(st.Code.valid()), 10))
	if st.Message != "" {
		f.field("grpc-message", percentEncode(st.Message))
	}
	if len(st.Details) > 0 {
		f.field("grpc-status-details-bin", encodeBinary(string(st.Details)))
	}
}

// metadataFields appends md to the block being encoded: keys in lower
// case, -bin values base64-encoded; fields a client would take for the
// transport's own, or that are not valid header fields, are left out.
func (f *frameBuf) metadataFields(md rpc.Metadata) {
	for _, fd := range md {
		k, v, ok := wireField(fd)
		if ok {
			f.field(k, v)
		}
	}
}

// wireField is a metadata field as it goes on the wire, if it may.
func wireField(fd rpc.MetadataField) (key, value string, ok bool) {
	key = strings.ToLower(fd.Key)
	if reservedKey(key) || !validKey(key) {
		return "", "", false
	}
	if isBinaryKey(key) {
		return key, encodeBinary(fd.Value), true
	}
	return key, fd.Value, validValue(fd.Value)
}
