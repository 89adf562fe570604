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
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer:
		return &CreateRequest{}, true
	case OpCreateTTL:
		return &CreateTTLRequest{}, true
	case OpDelete, OpCheck:
		return &PathVersionRequest{}, true
	case OpExists, OpGetData, OpGetChildren, OpGetChildren2:
		return &PathWatchRequest{}, true
	case OpSetData:
		return &SetDataRequest{}, true
	case OpGetACL, OpSync, OpGetEphemerals, OpGetAllChildrenNumber:
		return &PathRequest{}, true
	case OpSetACL:
		return &SetACLRequest{}, true
	case OpMulti:
		return &MultiRequest{}, true
	case OpMultiRead:
		return &MultiRequest{Read: true}, true
	case OpReconfig:
		return &ReconfigRequest{}, true
	case OpCheckWatches, OpRemoveWatches:
		return &WatchesRequest{}, true
	case OpAuth:
		return &AuthPacket{}, true
	case OpSetWatches:
		return &SetWatches{}, true
	case OpSetWatches2:
		return &SetWatches{V2: true}, true
	case OpSASL:
		return &BufferRecord{}, true
	case OpAddWatch:
		return &AddWatchRequest{}, true
	case OpPing, OpCloseSession, OpWhoAmI:
		return nil, true
	}
	return nil, false
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
