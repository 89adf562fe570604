package protocol

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// Frame layout constants (PROTOCOLS.md B.1).
const (
	HeaderSize = 16
	magicHigh  = 0xda
	magicLow   = 0xbb

	flagRequest       = 0x80
	flagTwoWay        = 0x40
	flagEvent         = 0x20
	serializationMask = 0x1f
)

// SerializationHessian2 is the only serialization this codec speaks (B.2).
const SerializationHessian2 byte = 2

// DefaultPayload is Dubbo's default payload limit, 8 MiB (B.7).
const DefaultPayload = 8 << 20

// Header is the fixed 16-byte frame header.
type Header struct {
	ID            int64 // opaque; may be negative (Java starts at a random value)
	Request       bool  // set on requests, clear on responses
	TwoWay        bool  // requests only: the caller waits for a response
	Event         bool  // heartbeat or read-only/writable event
	Serialization byte  // low 5 bits of the flags
	Status        Status
	BodyLen       int
}

func (h Header) flags() byte {
	f := h.Serialization & serializationMask
	if h.Request {
		f |= flagRequest
	}
	if h.TwoWay {
		f |= flagTwoWay
	}
	if h.Event {
		f |= flagEvent
	}
	return f
}

// appendTo appends the 16 header bytes to dst.
func (h Header) appendTo(dst []byte) []byte {
	dst = append(dst, magicHigh, magicLow, h.flags(), byte(h.Status))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.ID))
	return binary.BigEndian.AppendUint32(dst, uint32(h.BodyLen))
}

// ParseHeader decodes the first HeaderSize bytes of b.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d bytes, want %d", ErrBadHeader, len(b), HeaderSize)
	}
	if b[0] != magicHigh || b[1] != magicLow {
		return Header{}, fmt.Errorf("%w: got % x", ErrBadMagic, b[:2])
	}
	f := b[2]
	h := Header{
		Request:       f&flagRequest != 0,
		TwoWay:        f&flagTwoWay != 0,
		Event:         f&flagEvent != 0,
		Serialization: f & serializationMask,
		Status:        Status(b[3]),
		ID:            int64(binary.BigEndian.Uint64(b[4:12])),
		BodyLen:       int(int32(binary.BigEndian.Uint32(b[12:16]))),
	}
	if h.BodyLen < 0 {
		return h, fmt.Errorf("%w: frame %d has negative body length %d", ErrBadHeader, h.ID, h.BodyLen)
	}
	return h, nil
}

// Status is the response status byte (PROTOCOLS.md B.3).
type Status byte

// Response statuses. Those marked consumer-side are never on the wire; a
// consumer uses them to report local failures in the same terms.
const (
	StatusOK                      Status = 20
	StatusSerializationError      Status = 25 // response over the payload limit
	StatusClientTimeout           Status = 30 // consumer-side
	StatusServerTimeout           Status = 31 // consumer-side
	StatusChannelInactive         Status = 35 // consumer-side
	StatusBadRequest              Status = 40
	StatusBadResponse             Status = 50
	StatusServiceNotFound         Status = 60 // never sent by Java; it sends 70
	StatusServiceError            Status = 70
	StatusServerError             Status = 80
	StatusClientError             Status = 90 // consumer-side
	StatusServerThreadpoolExhaust Status = 100
)

var statusNames = map[Status]string{
	StatusOK:                      "OK",
	StatusSerializationError:      "SERIALIZATION_ERROR",
	StatusClientTimeout:           "CLIENT_TIMEOUT",
	StatusServerTimeout:           "SERVER_TIMEOUT",
	StatusChannelInactive:         "CHANNEL_INACTIVE",
	StatusBadRequest:              "BAD_REQUEST",
	StatusBadResponse:             "BAD_RESPONSE",
	StatusServiceNotFound:         "SERVICE_NOT_FOUND",
	StatusServiceError:            "SERVICE_ERROR",
	StatusServerError:             "SERVER_ERROR",
	StatusClientError:             "CLIENT_ERROR",
	StatusServerThreadpoolExhaust: "SERVER_THREADPOOL_EXHAUSTED_ERROR",
}

// String is the Java constant name, or the number for unknown values.
func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return "STATUS_" + strconv.Itoa(int(s))
}
