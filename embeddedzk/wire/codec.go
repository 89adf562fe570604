// Package wire is the ZooKeeper client protocol's byte layer: the jute
// binary encoding, every request and response record as a struct with
// Encode/Decode, the op, error, event and state codes, and length-prefixed
// frames. It knows nothing about the data tree or sessions.
//
// Each op code has one row in the op table (ops.go): its name, the tag the
// four-letter word cons prints, whether clients send it, its request
// record, whether the server runs it as a read or a write, and whether it
// may stand in multi or multiRead. Adding an op is a row there, its records
// here, and its handling in the server (a read's case in conn.read, a
// write's in tree.Execute).
//
// Decoding never panics: every read is bounds-checked and the first failure
// sticks in the Decoder, so a record's Decode can read all its fields and the
// caller checks Err once.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrShortBuffer means a record ended before all its fields were read.
var ErrShortBuffer = errors.New("wire: short buffer")

// ErrBadLength means a string, buffer or vector length is negative (other
// than the null marker -1) or larger than what is left in the frame.
var ErrBadLength = errors.New("wire: bad length")

// Decoder reads jute values from a byte slice.
type Decoder struct {
	buf []byte
	off int
	err error
}

// NewDecoder returns a Decoder reading b from its start.
func NewDecoder(b []byte) *Decoder { return &Decoder{buf: b} }

// Err is the first error met, if any.
func (d *Decoder) Err() error { return d.err }

// Remaining is the number of unread bytes.
func (d *Decoder) Remaining() int { return len(d.buf) - d.off }

// Offset is the number of bytes read so far.
func (d *Decoder) Offset() int { return d.off }

func (d *Decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *Decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.buf)-d.off {
		d.fail(ErrShortBuffer)
		return nil
	}
	b := d.buf[d.off : d.off+n]
	d.off += n
	return b
}

// Byte reads one byte.
func (d *Decoder) Byte() byte {
	b := d.take(1)
	if b == nil {
		return 0
	}
	return b[0]
}

// Bool reads a boolean; any non-zero byte is true, as in the Java reader.
func (d *Decoder) Bool() bool { return d.Byte() != 0 }

// Int32 reads a big-endian int.
func (d *Decoder) Int32() int32 {
	b := d.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

// Int64 reads a big-endian long.
func (d *Decoder) Int64() int64 {
	b := d.take(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// length reads a length prefix; -1 reports null.
func (d *Decoder) length() (n int, null bool) {
	l := d.Int32()
	if d.err != nil {
		return 0, false
	}
	if l == -1 {
		return 0, true
	}
	if l < 0 || int(l) > d.Remaining() {
		d.fail(fmt.Errorf("%w: %d with %d bytes left", ErrBadLength, l, d.Remaining()))
		return 0, false
	}
	return int(l), false
}

// Buffer reads a jute buffer; null (-1) comes back as nil, empty as a
// non-nil empty slice. The result is a copy.
func (d *Decoder) Buffer() []byte {
	n, null := d.length()
	if null || d.err != nil {
		return nil
	}
	b := d.take(n)
	out := make([]byte, n)
	copy(out, b)
	return out
}

// String reads a jute ustring; null reads as "".
func (d *Decoder) String() string {
	n, null := d.length()
	if null || d.err != nil {
		return ""
	}
	return string(d.take(n))
}

// StringVector reads a vector<ustring>; null reads as nil.
func (d *Decoder) StringVector() []string {
	n, null := d.vectorLen(4)
	if null || d.err != nil {
		return nil
	}
	out := make([]string, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, d.String())
	}
	return out
}

// vectorLen reads a vector count, rejecting counts that cannot fit in the
// rest of the frame given each element's minimum size.
func (d *Decoder) vectorLen(minElem int) (n int, null bool) {
	l := d.Int32()
	if d.err != nil {
		return 0, false
	}
	if l == -1 {
		return 0, true
	}
	if l < 0 || int64(l)*int64(minElem) > int64(d.Remaining()) {
		d.fail(fmt.Errorf("%w: vector of %d with %d bytes left", ErrBadLength, l, d.Remaining()))
		return 0, false
	}
	return int(l), false
}

// Encoder appends jute values to a byte slice.
type Encoder struct {
	buf []byte
}

// NewEncoder returns an Encoder appending to b (which may be nil).
func NewEncoder(b []byte) *Encoder { return &Encoder{buf: b} }

// Bytes is everything written so far.
func (e *Encoder) Bytes() []byte { return e.buf }

// Len is the number of bytes written so far.
func (e *Encoder) Len() int { return len(e.buf) }

// Byte writes one byte.
func (e *Encoder) Byte(b byte) { e.buf = append(e.buf, b) }

// Bool writes 1 or 0.
func (e *Encoder) Bool(b bool) {
	if b {
		e.Byte(1)
	} else {
		e.Byte(0)
	}
}

// Int32 writes a big-endian int.
func (e *Encoder) Int32(v int32) { e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(v)) }

// Int64 writes a big-endian long.
func (e *Encoder) Int64(v int64) { e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v)) }

// Buffer writes a jute buffer; nil is written as null (-1), which every
// client decodes (go-zookeeper as nil, Java as null).
func (e *Encoder) Buffer(b []byte) {
	if b == nil {
		e.Int32(-1)
		return
	}
	e.Int32(int32(len(b)))
	e.buf = append(e.buf, b...)
}

// String writes a ustring. It never writes null: go-zookeeper cannot decode it.
func (e *Encoder) String(s string) {
	e.Int32(int32(len(s)))
	e.buf = append(e.buf, s...)
}

// StringVector writes a vector<ustring>; nil is written as empty, never null.
func (e *Encoder) StringVector(v []string) {
	e.Int32(int32(len(v)))
	for _, s := range v {
		e.String(s)
	}
}
