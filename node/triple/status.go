package triple

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Status is the outcome of a call: its code, a message for people, and
// optionally the serialized google.rpc.Status a client reads from the
// grpc-status-details-bin trailer.
type Status struct {
	Code    Code
	Message string
	Details []byte
}

// Errorf returns a Status with code c and a formatted message.
func Errorf(c Code, format string, args ...any) *Status {
	return &Status{Code: c, Message: fmt.Sprintf(format, args...)}
}

// Error makes a Status usable as an error (a Stream's Send and Recv return
// one when the call ended).
func (s *Status) Error() string {
	return fmt.Sprintf("triple: %s: %s", s.Code, s.Message)
}

// ok says whether s is a success: nil or code OK.
func (s *Status) ok() bool { return s == nil || s.Code == OK }

// percentEncode encodes a grpc-message value as the gRPC spec says: bytes
// outside printable ASCII (0x20-0x7E) and '%' become %XX; invalid UTF-8 is
// replaced by U+FFFD first.
func percentEncode(msg string) string {
	clean := true
	for i := 0; i < len(msg); i++ {
		if c := msg[i]; c < ' ' || c > '~' || c == '%' {
			clean = false
			break
		}
	}
	if clean {
		return msg
	}
	msg = strings.ToValidUTF8(msg, string(utf8.RuneError))
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(msg) + len(msg)/2)
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c < ' ' || c > '~' || c == '%' {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
