package rpc

import (
	"fmt"
	"strconv"
)

// MethodKind is the shape of a method: which of its sides send a stream of
// messages. Dubbo methods are Unary. (Not to be confused with the error
// kinds of errors.go.)
type MethodKind uint8

const (
	Unary        MethodKind = iota // one request, one response
	ServerStream                   // one request, a stream of responses
	ClientStream                   // a stream of requests, one response
	BidiStream                     // streams both ways
)

// methodKinds are the kinds' names, the words gRPC's documentation uses;
// the plugin description's JSON carries them too.
var methodKinds = [...]string{Unary: "unary", ServerStream: "server-streaming", ClientStream: "client-streaming", BidiStream: "bidi-streaming"}

// MethodKindOf is the kind of a method whose client and server sides
// stream or not, as a protobuf descriptor says (IsStreamingClient,
// IsStreamingServer).
func MethodKindOf(clientStreams, serverStreams bool) MethodKind {
	switch {
	case clientStreams && serverStreams:
		return BidiStream
	case clientStreams:
		return ClientStream
	case serverStreams:
		return ServerStream
	}
	return Unary
}

func (k MethodKind) String() string {
	if int(k) < len(methodKinds) {
		return methodKinds[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// MarshalText writes the kind's name.
func (k MethodKind) MarshalText() ([]byte, error) {
	if int(k) >= len(methodKinds) {
		return nil, fmt.Errorf("no method kind %d", k)
	}
	return []byte(methodKinds[k]), nil
}

// UnmarshalText reads a kind's name.
func (k *MethodKind) UnmarshalText(b []byte) error {
	for i, n := range methodKinds {
		if string(b) == n {
			*k = MethodKind(i)
			return nil
		}
	}
	return fmt.Errorf("%q is not a method kind (unary, server-streaming, client-streaming or bidi-streaming)", b)
}
