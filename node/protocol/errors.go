package protocol

import "errors"

// Error categories; every error from this package wraps one of them with
// the frame id and details, so callers decide with errors.Is.
var (
	// ErrBadMagic: the stream is not the dubbo protocol (or lost sync). Close
	// the connection.
	ErrBadMagic = errors.New("dubbo: bad magic, not a dubbo frame")
	// ErrBadHeader: a header field is impossible (negative body length).
	// Close the connection.
	ErrBadHeader = errors.New("dubbo: bad frame header")
	// ErrPayloadTooLarge: a body exceeds the payload limit. When reading, the
	// header is returned and the body is still unread: SkipBody keeps the
	// connection usable. When writing, nothing was written.
	ErrPayloadTooLarge = errors.New("dubbo: payload too large")
	// ErrUnsupportedSerialization: the frame uses a serialization other than
	// hessian2. The frame was consumed; answer it with an error status.
	ErrUnsupportedSerialization = errors.New("dubbo: unsupported serialization")
	// ErrMalformedBody: the body is not what the protocol prescribes. The
	// frame was consumed; answer a request with StatusBadRequest.
	ErrMalformedBody = errors.New("dubbo: malformed body")
	// ErrEncode: a value cannot be written as hessian2.
	ErrEncode = errors.New("dubbo: cannot encode")
)
