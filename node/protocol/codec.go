package protocol

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	hessian "github.com/apache/dubbo-go-hessian2"
)

// Frame is a header and its raw body.
type Frame struct {
	Header
	Body []byte
}

// Decoder reads frames from a stream. Bodies up to SmallBody bytes are
// read into one reused buffer, so a Frame's Body is valid only until the
// next read; DecodeRequest and DecodeResponse copy what they keep. Not safe
// for concurrent use.
type Decoder struct {
	r     *bufio.Reader
	limit int
	hdr   [HeaderSize]byte
	body  []byte
	BodyDecoder
}

// SmallBody is the largest body read into the decoder's reused buffer. A
// larger one gets a buffer of its own that grows as its bytes arrive (a
// header alone commits no memory) and is dropped after use, so one large
// frame does not pin its size to the connection.
const SmallBody = 16 << 10

// firstChunk is the size a large body's buffer starts at.
const firstChunk = 64 << 10

// NewDecoder reads frames from r with bodies up to limit bytes (<= 0 means
// DefaultPayload). r is wrapped in a bufio.Reader unless it is one.
func NewDecoder(r io.Reader, limit int) *Decoder {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReader(r)
	}
	if limit <= 0 {
		limit = DefaultPayload
	}
	return &Decoder{r: br, limit: limit}
}

// ReadHeader reads the next header. A body over the limit is reported as
// ErrPayloadTooLarge together with the header, before any of the body is
// read, so the caller can answer and SkipBody.
func (d *Decoder) ReadHeader() (Header, error) {
	if _, err := io.ReadFull(d.r, d.hdr[:]); err != nil {
		return Header{}, err
	}
	h, err := ParseHeader(d.hdr[:])
	if err != nil {
		return h, err
	}
	if h.BodyLen > d.limit {
		return h, fmt.Errorf("%w: frame %d: body length %d exceeds limit %d", ErrPayloadTooLarge, h.ID, h.BodyLen, d.limit)
	}
	return h, nil
}

// ReadBody reads the body announced by h: up to SmallBody bytes into the
// reused buffer, a larger body into its own buffer, grown (doubling) as
// bytes arrive.
func (d *Decoder) ReadBody(h Header) ([]byte, error) {
	if h.BodyLen > d.limit {
		return nil, fmt.Errorf("%w: frame %d: body length %d exceeds limit %d", ErrPayloadTooLarge, h.ID, h.BodyLen, d.limit)
	}
	if h.BodyLen <= SmallBody {
		if cap(d.body) < h.BodyLen {
			d.body = make([]byte, h.BodyLen)
		}
		d.body = d.body[:h.BodyLen]
		if _, err := io.ReadFull(d.r, d.body); err != nil {
			return nil, fmt.Errorf("frame %d: reading %d-byte body: %w", h.ID, h.BodyLen, noEOF(err))
		}
		return d.body, nil
	}
	body := make([]byte, 0, min(h.BodyLen, max(firstChunk, d.r.Buffered())))
	for len(body) < h.BodyLen {
		if len(body) == cap(body) {
			body = slices.Grow(body, min(h.BodyLen, 2*cap(body))-len(body))
		}
		n, err := d.r.Read(body[len(body):min(cap(body), h.BodyLen)])
		body = body[:len(body)+n]
		if err != nil && len(body) < h.BodyLen {
			return nil, fmt.Errorf("frame %d: reading %d-byte body (%d read): %w", h.ID, h.BodyLen, len(body), noEOF(err))
		}
	}
	return body, nil
}

// SkipBody discards the body announced by h.
func (d *Decoder) SkipBody(h Header) error {
	if _, err := d.r.Discard(h.BodyLen); err != nil {
		return fmt.Errorf("frame %d: skipping %d-byte body: %w", h.ID, h.BodyLen, noEOF(err))
	}
	return nil
}

// ReadFrame reads a header and its body. On ErrPayloadTooLarge the returned
// frame has the header only and the body is still unread.
func (d *Decoder) ReadFrame() (Frame, error) {
	h, err := d.ReadHeader()
	if err != nil {
		return Frame{Header: h}, err
	}
	body, err := d.ReadBody(h)
	return Frame{Header: h, Body: body}, err
}

// A clean EOF between frames is io.EOF; inside one it is unexpected.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// BodyDecoder decodes frame bodies into requests and responses. It keeps a
// hessian decoder, scanner and string table between calls; the zero value
// is ready to use. Not safe for concurrent use.
//
// Values with a fast form (fast.go) are read directly until the first one
// that needs the library; from there on the library reads the rest of the
// body, so its reference table sees every value that can be referenced.
type BodyDecoder struct {
	hd   *hessian.Decoder
	scan scanner
	body []byte
	offs []int // where each value scanned so far starts
	next int   // index in offs of the next value to decode
	lib  bool  // hd is positioned at offs[next]
	strs interner
}

// start checks the serialization, scans the first n values of body and
// prepares the hessian decoder.
func (b *BodyDecoder) start(f Frame, n int) (int, error) {
	if f.Serialization != SerializationHessian2 {
		return 0, fmt.Errorf("%w: frame %d uses serialization id %d, only hessian2 (2) is supported",
			ErrUnsupportedSerialization, f.ID, f.Serialization)
	}
	b.body, b.offs, b.next, b.lib = f.Body, b.offs[:0], 0, false
	b.scan.reset(f.Body)
	return b.more(f, n)
}

// more scans up to n further values and reports how many are present. A
// body that ends cleanly between values is not an error here; a value cut
// short or malformed is.
func (b *BodyDecoder) more(f Frame, n int) (int, error) {
	for i := 0; i < n; i++ {
		if b.scan.atEnd() {
			return i, nil
		}
		b.offs = append(b.offs, b.scan.pos)
		if err := b.scan.next(); err != nil {
			return i, fmt.Errorf("%w: frame %d: value %d: %v", ErrMalformedBody, f.ID, i, err)
		}
	}
	return n, nil
}

// value decodes the next (already scanned) value.
func (b *BodyDecoder) value(f Frame, what string) (any, error) {
	if !b.lib {
		if v, _, ok := fastValue(b.body, b.offs[b.next], nil); ok {
			b.next++
			return v, nil
		}
	}
	return b.libValue(f, what)
}

// libValue decodes the next value with the library, which from now on
// decodes the rest of the body.
func (b *BodyDecoder) libValue(f Frame, what string) (v any, err error) {
	if !b.lib {
		if b.hd == nil {
			b.hd = hessian.NewDecoder(nil)
		}
		b.hd.Reset(b.body[b.offs[b.next]:])
		b.lib = true
	}
	b.next++
	defer func() {
		// The scan vouches for the structure, not for every type combination
		// the library accepts; never let a peer's bytes crash us.
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: frame %d: %s: decoder panic: %v", ErrMalformedBody, f.ID, what, r)
		}
	}()
	v, err = b.hd.Decode()
	if err != nil {
		return nil, fmt.Errorf("%w: frame %d: %s: %v", ErrMalformedBody, f.ID, what, err)
	}
	return v, nil
}

// string decodes a string field of the request header, interned.
func (b *BodyDecoder) string(f Frame, what string) (string, error) {
	if !b.lib {
		if s, _, ok := fastString(b.body, b.offs[b.next]); ok {
			b.next++
			return b.strs.get(s).(string), nil
		}
	}
	v, err := b.value(f, what)
	if err != nil {
		return "", err
	}
	if s, ok := StringValue(v); ok {
		return s, nil
	}
	return "", fmt.Errorf("%w: frame %d: %s: want string, got %T", ErrMalformedBody, f.ID, what, v)
}

// StringValue is a decoded hessian string field: a string, or "" for null
// (a Java String field may be null). ok is false for any other type.
func StringValue(v any) (s string, ok bool) {
	switch s := v.(type) {
	case string:
		return s, true
	case nil:
		return "", true
	}
	return "", false
}

func (b *BodyDecoder) attachments(f Frame) (map[string]any, error) {
	if !b.lib {
		if m, _, ok := fastMap(b.body, b.offs[b.next], &b.strs); ok {
			b.next++
			return m, nil
		}
	}
	v, err := b.value(f, "attachments")
	if err != nil {
		return nil, err
	}
	m, err := Attachments(v)
	if err != nil {
		return nil, fmt.Errorf("%w: frame %d: %v", ErrMalformedBody, f.ID, err)
	}
	return m, nil
}

// DecodeRequest decodes a request frame's body.
func (b *BodyDecoder) DecodeRequest(f Frame) (*Request, error) {
	if !f.Request {
		return nil, fmt.Errorf("%w: frame %d is a response, want a request", ErrMalformedBody, f.ID)
	}
	req := &Request{ID: f.ID, TwoWay: f.TwoWay, Event: f.Event, Serialization: f.Serialization, Size: HeaderSize + len(f.Body)}
	if f.Event {
		v, err := b.event(f)
		req.EventData = v
		return req, err
	}
	n, err := b.start(f, 5)
	if err != nil {
		return nil, err
	}
	if n < 5 {
		return nil, fmt.Errorf("%w: frame %d: request body has %d of its 5 leading strings", ErrMalformedBody, f.ID, n)
	}
	fields := [5]*string{&req.DubboVersion, &req.Path, &req.Version, &req.Method, &req.ParamDesc}
	names := [5]string{"dubbo version", "path", "version", "method", "parameter descriptor"}
	for i, p := range fields {
		if *p, err = b.string(f, names[i]); err != nil {
			return nil, err
		}
	}
	nargs, err := CountArgs(req.ParamDesc)
	if err != nil {
		return nil, fmt.Errorf("frame %d: %w", f.ID, err)
	}
	// Arguments, then the attachments map, which old consumers may omit.
	got, err := b.more(f, nargs+1)
	if err != nil {
		return nil, err
	}
	if got < nargs {
		return nil, fmt.Errorf("%w: frame %d: descriptor %q wants %d arguments, body has %d",
			ErrMalformedBody, f.ID, req.ParamDesc, nargs, got)
	}
	if nargs > 0 {
		req.Args = make([]any, nargs)
		for i := range req.Args {
			if req.Args[i], err = b.value(f, "argument"); err != nil {
				return nil, err
			}
		}
	}
	if got > nargs {
		if req.Attachments, err = b.attachments(f); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// event decodes an event body: null (heartbeat) or one value.
func (b *BodyDecoder) event(f Frame) (any, error) {
	n, err := b.start(f, 1)
	if err != nil || n == 0 {
		return nil, err
	}
	return b.value(f, "event data")
}

// DecodeResponse decodes a response frame's body. Trailing bytes after the
// last expected value are ignored (dubbo-go appends an N).
func (b *BodyDecoder) DecodeResponse(f Frame) (*Response, error) {
	if f.Request {
		return nil, fmt.Errorf("%w: frame %d is a request, want a response", ErrMalformedBody, f.ID)
	}
	resp := &Response{ID: f.ID, Status: f.Status, Event: f.Event, Serialization: f.Serialization, Size: HeaderSize + len(f.Body)}
	if f.Event {
		v, err := b.event(f)
		resp.Value = v
		return resp, err
	}
	if f.Status != StatusOK {
		n, err := b.start(f, 1)
		if err != nil {
			return nil, err
		}
		if n == 1 {
			v, err := b.value(f, "error message")
			if err != nil {
				return nil, err
			}
			if s, ok := v.(string); ok {
				resp.ErrorMessage = s
			} else if v != nil {
				// Not printed: decoded values may reference themselves.
				resp.ErrorMessage = fmt.Sprintf("(%T instead of an error message)", v)
			}
		}
		return resp, nil
	}
	n, err := b.start(f, 1)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: frame %d: empty response body", ErrMalformedBody, f.ID)
	}
	tv, err := b.value(f, "response type")
	if err != nil {
		return nil, err
	}
	typ, ok := tv.(int32)
	if !ok || typ < respWithException || typ > respNullValueWithAttachments {
		// The type only when it is not an int: a decoded value may
		// reference itself, and printing it would never end.
		if ok {
			return nil, fmt.Errorf("%w: frame %d: unknown response type %d", ErrMalformedBody, f.ID, typ)
		}
		return nil, fmt.Errorf("%w: frame %d: response type is a %T, not an int", ErrMalformedBody, f.ID, tv)
	}
	resp.Legacy = typ < respWithExceptionWithAttachments
	want := 0 // values after the type
	switch typ {
	case respValue, respWithException, respNullValueWithAttachments:
		want = 1
	case respValueWithAttachments, respWithExceptionWithAttachments:
		want = 2
	}
	valueAt := b.scan.pos
	if got, err := b.more(f, want); err != nil {
		return nil, err
	} else if got < want {
		return nil, fmt.Errorf("%w: frame %d: response type %d needs %d values, body has %d",
			ErrMalformedBody, f.ID, typ, want, got)
	}
	switch typ {
	case respValue, respValueWithAttachments:
		if resp.Value, err = b.value(f, "return value"); err != nil {
			return nil, err
		}
	case respWithException, respWithExceptionWithAttachments:
		v, err := b.value(f, "exception")
		if err != nil {
			return nil, err
		}
		resp.Exception = ExceptionOf(v, b.scan.classAt(valueAt))
	}
	if !resp.Legacy {
		if resp.Attachments, err = b.attachments(f); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// Encoder writes frames into a caller's buffer, so a transport can append
// many frames and write them with one call. Values with a fast form
// (fast.go) are written directly; the others go through a hessian encoder
// that keeps its reference table for the whole body. Not safe for
// concurrent use.
type Encoder struct {
	limit  int
	he     *hessian.Encoder
	heUsed bool // he holds library values of the body being written
}

// NewEncoder returns an Encoder that refuses bodies over limit bytes
// (<= 0 means DefaultPayload).
func NewEncoder(limit int) *Encoder {
	if limit <= 0 {
		limit = DefaultPayload
	}
	return &Encoder{limit: limit, he: hessian.NewEncoder()}
}

// encode appends v with the library.
func (e *Encoder) encode(dst []byte, v any, what string) ([]byte, error) {
	if !e.heUsed {
		e.he.ReuseBufferClean()
		e.heUsed = true
	}
	mark := len(e.he.Buffer())
	if err := e.he.Encode(v); err != nil {
		return dst, fmt.Errorf("%w %s (%T): %v", ErrEncode, what, v, err)
	}
	return append(dst, e.he.Buffer()[mark:]...), nil
}

// value appends v, by its fast form if it has one.
func (e *Encoder) value(dst []byte, v any, what string) ([]byte, error) {
	if out, ok := appendFastValue(dst, v); ok {
		return out, nil
	}
	return e.encode(dst, v, what)
}

// str appends s, by its fast form if it has one (without boxing it).
func (e *Encoder) str(dst []byte, s string, what string) ([]byte, error) {
	if out, ok := appendFastString(dst, s); ok {
		return out, nil
	}
	return e.encode(dst, s, what)
}

// begin appends h with a body length to be filled in by finish.
func (e *Encoder) begin(dst []byte, h Header) []byte {
	e.heUsed = false
	return h.appendTo(dst)
}

// finish fills in the length of the body that follows the header at
// dst[start:], enforcing the payload limit.
func (e *Encoder) finish(dst []byte, start int, h Header) ([]byte, error) {
	n := len(dst) - start - HeaderSize
	if n > e.limit {
		return dst[:start], fmt.Errorf("%w: frame %d: body length %d exceeds limit %d", ErrPayloadTooLarge, h.ID, n, e.limit)
	}
	binary.BigEndian.PutUint32(dst[start+12:], uint32(n))
	return dst, nil
}

func serialization(s byte) (byte, error) {
	switch s {
	case 0, SerializationHessian2:
		return SerializationHessian2, nil
	}
	return 0, fmt.Errorf("%w: serialization id %d, only hessian2 (2) is supported", ErrUnsupportedSerialization, s)
}

// AppendRequest appends r as a frame to dst. On error dst is returned
// unchanged.
func (e *Encoder) AppendRequest(dst []byte, r *Request) ([]byte, error) {
	ser, err := serialization(r.Serialization)
	if err != nil {
		return dst, err
	}
	h := Header{ID: r.ID, Request: true, TwoWay: r.TwoWay, Event: r.Event, Serialization: ser}
	start := len(dst)
	if r.Event {
		out, err := e.value(e.begin(dst, h), r.EventData, "event data")
		if err != nil {
			return dst[:start], err
		}
		return e.finish(out, start, h)
	}
	nargs, err := CountArgs(r.ParamDesc)
	if err != nil {
		return dst, fmt.Errorf("%w: request %d: %v", ErrEncode, r.ID, err)
	}
	if nargs != len(r.Args) {
		return dst, fmt.Errorf("%w: request %d: descriptor %q has %d parameters, got %d arguments",
			ErrEncode, r.ID, r.ParamDesc, nargs, len(r.Args))
	}
	version := r.DubboVersion
	if version == "" {
		version = DubboVersion
	}
	out := e.begin(dst, h)
	for _, s := range [...]string{version, r.Path, r.Version, r.Method, r.ParamDesc} {
		if out, err = e.str(out, s, "string"); err != nil {
			return dst[:start], err
		}
	}
	for i, a := range r.Args {
		if out, err = e.value(out, a, "argument"); err != nil {
			return dst[:start], fmt.Errorf("request %d, argument %d: %w", r.ID, i, err)
		}
	}
	if fast, ok := appendFastMap(out, r.Attachments, "", ""); ok {
		out = fast
	} else if out, err = e.encode(out, nonNilMap(r.Attachments), "attachments"); err != nil {
		return dst[:start], err
	}
	return e.finish(out, start, h)
}

// nonNilMap: Java reads the attachments with readObject(Map.class), so an
// empty map is safer than null.
func nonNilMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// AppendResponse appends r as a frame to dst. On error (for example
// ErrPayloadTooLarge, which a provider answers with StatusSerializationError)
// dst is returned unchanged.
func (e *Encoder) AppendResponse(dst []byte, r *Response) ([]byte, error) {
	ser, err := serialization(r.Serialization)
	if err != nil {
		return dst, err
	}
	status := r.Status
	if status == 0 {
		status = StatusOK
	}
	h := Header{ID: r.ID, Event: r.Event, Serialization: ser, Status: status}
	start := len(dst)
	out := e.begin(dst, h)
	switch {
	case r.Event:
		out, err = e.value(out, r.Value, "event data")
	case status != StatusOK:
		out, err = e.str(out, r.ErrorMessage, "error message")
	default:
		out, err = e.okBody(out, r)
	}
	if err != nil {
		return dst[:start], err
	}
	return e.finish(out, start, h)
}

func (e *Encoder) okBody(dst []byte, r *Response) ([]byte, error) {
	var typ int32
	switch {
	case r.Exception != nil:
		typ = respWithException
	case r.Value != nil:
		typ = respValue
	default:
		typ = respNullValue
	}
	if !r.Legacy {
		typ += respWithExceptionWithAttachments
	}
	dst = appendInt32(dst, typ)
	var err error
	switch {
	case r.Exception != nil:
		if dst, err = e.encode(dst, r.Exception.Throwable(), "exception"); err != nil {
			return dst, err
		}
	case r.Value != nil:
		if dst, err = e.value(dst, r.Value, "return value"); err != nil {
			return dst, err
		}
	}
	if r.Legacy {
		return dst, nil
	}
	// Java always adds the protocol version to response attachments.
	if out, ok := appendFastMap(dst, r.Attachments, "dubbo", DubboVersion); ok {
		return out, nil
	}
	att := make(map[string]any, len(r.Attachments)+1)
	for k, v := range r.Attachments {
		att[k] = v
	}
	att["dubbo"] = DubboVersion
	return e.encode(dst, att, "attachments")
}
