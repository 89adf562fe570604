package wire

import (
	"encoding/binary"
	"fmt"

	"google.golang.org/grpc/codes"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Protobuf calls carry their messages as the bytes the caller sent: the
// node never decodes them. A unary call (a 'u' frame, after its id and
// timeout) is
//
//	service, method   uvarints: the method's indices in the Description
//	metadata          uvarint length, then the block (AppendMetadata)
//	request           the rest
//
// and its reply (an 'r' frame) is
//
//	code              uvarint, 0 (OK) to 16
//	trailer metadata  uvarint length, then the block
//	OK:               the response message, the rest
//	otherwise:        message (uvarint length, bytes), details (the rest:
//	                  a serialized google.rpc.Status, or nothing)
//
// A metadata block (an rpc.Metadata; -bin values go as they are, not
// base64) is a uvarint count, then for each entry its key and its value,
// each a uvarint length and the bytes.

// Status is the outcome of a protobuf call that failed: a gRPC code, a
// message for people, and optionally details, a serialized
// google.rpc.Status (grpc-status-details-bin). A call that succeeded has
// none (nil).
type Status struct {
	Code    codes.Code
	Message string
	Details []byte
}

// Error says the code and the message.
func (s *Status) Error() string { return fmt.Sprintf("%v: %s", s.Code, s.Message) }

// maxCode is the last gRPC code; a peer's code past it is Unknown.
const maxCode = codes.Unauthenticated

// MethodRef names a method of a described service by its indices in the
// Description: cheaper to send and to find than names.
type MethodRef struct{ Service, Method uint32 }

// Bounds on a metadata block, so that a peer cannot make the other side
// allocate without limit: HTTP/2's usual header list limit is 64 KiB.
const (
	maxMetadataBytes   = 256 << 10
	maxMetadataEntries = 1024
)

// ErrMetadata is the error of metadata past the bounds a link carries.
var ErrMetadata = fmt.Errorf("metadata larger than %d bytes or %d entries", maxMetadataBytes, maxMetadataEntries)

// AppendMetadata appends md as a block with its length before it; no
// metadata is an empty block.
func AppendMetadata(b []byte, md rpc.Metadata) ([]byte, error) {
	if len(md) == 0 {
		return append(b, 0), nil
	}
	if len(md) > maxMetadataEntries {
		return b, ErrMetadata
	}
	size := uvarintLen(uint64(len(md)))
	for _, f := range md {
		size += uvarintLen(uint64(len(f.Key))) + len(f.Key) + uvarintLen(uint64(len(f.Value))) + len(f.Value)
	}
	if size > maxMetadataBytes {
		return b, ErrMetadata
	}
	b = binary.AppendUvarint(b, uint64(size))
	b = binary.AppendUvarint(b, uint64(len(md)))
	for _, f := range md {
		b = appendBytes(b, f.Key)
		b = appendBytes(b, f.Value)
	}
	return b, nil
}

// ParseMetadata decodes a block AppendMetadata wrote (without its length
// before it); an empty block is nil.
func ParseMetadata(b []byte) (rpc.Metadata, error) {
	if len(b) == 0 {
		return nil, nil
	}
	n, pos, ok := uvarintAt(b, 0)
	if !ok || n > maxMetadataEntries || n > uint64(len(b)) {
		return nil, fmt.Errorf("%w: bad metadata count", ErrCorrupt)
	}
	md := make(rpc.Metadata, n)
	for i := range md {
		var k, v string
		if k, pos, ok = bytesAt(b, pos); !ok {
			return nil, fmt.Errorf("%w: bad metadata key", ErrCorrupt)
		}
		if v, pos, ok = bytesAt(b, pos); !ok {
			return nil, fmt.Errorf("%w: bad metadata value", ErrCorrupt)
		}
		md[i] = rpc.MetadataField{Key: k, Value: v}
	}
	if pos != len(b) {
		return nil, fmt.Errorf("%w: %d bytes after the metadata", ErrCorrupt, len(b)-pos)
	}
	if len(md) == 0 {
		return nil, nil
	}
	return md, nil
}

// AppendProtoCall appends the head of a unary protobuf call, which the
// request message follows.
func AppendProtoCall(b []byte, ref MethodRef, md rpc.Metadata) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(ref.Service))
	b = binary.AppendUvarint(b, uint64(ref.Method))
	return AppendMetadata(b, md)
}

// ParseProtoCall splits a unary protobuf call: md is its metadata block
// (for ParseMetadata, when someone asks), req its request message.
func ParseProtoCall(b []byte) (ref MethodRef, md, req []byte, err error) {
	ref, pos, ok := refAt(b, 0)
	if !ok {
		return ref, nil, nil, fmt.Errorf("%w: bad method reference", ErrCorrupt)
	}
	if md, pos, ok = blockAt(b, pos, maxMetadataBytes); !ok {
		return ref, nil, nil, fmt.Errorf("%w: bad metadata length", ErrCorrupt)
	}
	return ref, md, b[pos:], nil
}

// AppendProtoOK appends the head of a successful reply, which the
// response message follows.
func AppendProtoOK(b []byte, trailer rpc.Metadata) ([]byte, error) {
	return AppendMetadata(append(b, byte(codes.OK)), trailer)
}

// AppendProtoError appends a failed reply with status st (its code is not
// OK). Metadata past the bounds is left out rather than failing the reply.
func AppendProtoError(b []byte, st *Status, trailer rpc.Metadata) []byte {
	code := st.Code
	if code == codes.OK || code > maxCode {
		code = codes.Unknown
	}
	b = append(b, byte(code))
	withMD, err := AppendMetadata(b, trailer)
	if err != nil {
		withMD = append(b, 0)
	}
	return appendStatusRest(withMD, st)
}

func appendStatusRest(b []byte, st *Status) []byte {
	return append(appendBytes(b, st.Message), st.Details...)
}

// ParseProtoReply splits a unary protobuf reply: the response message and
// trailer of a call that succeeded (st nil), or its status and trailer.
func ParseProtoReply(b []byte) (resp []byte, trailer rpc.Metadata, st *Status, err error) {
	code, pos, ok := uvarintAt(b, 0)
	if !ok || code > uint64(maxCode) {
		return nil, nil, nil, fmt.Errorf("%w: bad status code", ErrCorrupt)
	}
	var md []byte
	if md, pos, ok = blockAt(b, pos, maxMetadataBytes); !ok {
		return nil, nil, nil, fmt.Errorf("%w: bad trailer length", ErrCorrupt)
	}
	if trailer, err = ParseMetadata(md); err != nil {
		return nil, nil, nil, err
	}
	if code == uint64(codes.OK) {
		return b[pos:], trailer, nil, nil
	}
	st = &Status{Code: codes.Code(code)}
	if st.Message, pos, ok = bytesAt(b, pos); !ok {
		return nil, nil, nil, fmt.Errorf("%w: bad status message", ErrCorrupt)
	}
	if pos < len(b) {
		st.Details = b[pos:]
	}
	return nil, trailer, st, nil
}

// StatusReply is the reply of a unary call that failed with code and
// msg, before reaching a handler.
func StatusReply(code codes.Code, msg string) []byte {
	return AppendProtoError(nil, &Status{Code: code, Message: msg}, nil)
}

func appendBytes(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// uvarintAt reads a uvarint at pos.
func uvarintAt(b []byte, pos int) (v uint64, next int, ok bool) {
	if pos > len(b) {
		return 0, pos, false
	}
	v, n := binary.Uvarint(b[pos:])
	if n <= 0 {
		return 0, pos, false
	}
	return v, pos + n, true
}

// bytesAt reads a length and that many bytes at pos.
func bytesAt(b []byte, pos int) (s string, next int, ok bool) {
	block, next, ok := blockAt(b, pos, len(b))
	return string(block), next, ok
}

// blockAt reads a length of at most limit and that many bytes at pos.
func blockAt(b []byte, pos, limit int) (block []byte, next int, ok bool) {
	n, pos, ok := uvarintAt(b, pos)
	if !ok || n > uint64(limit) || n > uint64(len(b)-pos) {
		return nil, pos, false
	}
	return b[pos : pos+int(n)], pos + int(n), true
}

// refAt reads a MethodRef at pos.
func refAt(b []byte, pos int) (ref MethodRef, next int, ok bool) {
	s, pos, ok := uvarintAt(b, pos)
	if !ok || s > 1<<31 {
		return ref, pos, false
	}
	m, pos, ok := uvarintAt(b, pos)
	if !ok || m > 1<<31 {
		return ref, pos, false
	}
	return MethodRef{uint32(s), uint32(m)}, pos, true
}
