package wire

import (
	"errors"
	"fmt"
)

// ErrUnknownOp means a request type the server does not implement.
var ErrUnknownOp = errors.New("wire: unknown op code")

// NewRequest returns an empty request record for op, or nil when op has no
// body (ping, closeSession, whoAmI). ok is false for op codes that are not
// client requests.
func NewRequest(op OpCode) (rec Record, ok bool) {
	info, known := ops[op]
	if !known || !info.Client {
		return nil, false
	}
	if info.Request == nil {
		return nil, true
	}
	return info.Request(), true
}

// DecodeRequest decodes the body of a request of type op. It returns
// ErrUnknownOp for op codes clients may not send, and a decoding error
// (wrapping ErrShortBuffer, ErrBadLength or ErrBadMultiOp) for malformed
// bodies. Trailing bytes are ignored, as the reference server does.
func DecodeRequest(op OpCode, body []byte) (Record, error) {
	rec, ok := NewRequest(op)
	if !ok {
		return nil, fmt.Errorf("%w: %d", ErrUnknownOp, int32(op))
	}
	if rec == nil {
		return nil, nil
	}
	d := NewDecoder(body)
	rec.Decode(d)
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("decode %s: %w", op, err)
	}
	return rec, nil
}
