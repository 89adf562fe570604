package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ErrFrameTooLarge means a frame length is negative or above the limit.
var ErrFrameTooLarge = errors.New("wire: frame length out of range")

// ReadLength reads a 4-byte frame length and checks it against max.
func ReadLength(r io.Reader, max int) (int, error) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	n := int32(binary.BigEndian.Uint32(b[:]))
	if n < 0 || int(n) > max {
		return int(n), fmt.Errorf("%w: %d (limit %d)", ErrFrameTooLarge, n, max)
	}
	return int(n), nil
}

// ReadFrame reads one length-prefixed frame of at most max bytes, reusing
// buf when it is large enough.
func ReadFrame(r io.Reader, max int, buf []byte) ([]byte, error) {
	n, err := ReadLength(r, max)
	if err != nil {
		return nil, err
	}
	return ReadBody(r, n, buf)
}

// ReadBody reads the n-byte body of a frame whose length is already read.
func ReadBody(r io.Reader, n int, buf []byte) ([]byte, error) {
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// AppendFrame appends a frame holding the given records to dst.
func AppendFrame(dst []byte, recs ...Record) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	e := NewEncoder(dst)
	for _, r := range recs {
		if r != nil {
			r.Encode(e)
		}
	}
	dst = e.Bytes()
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
