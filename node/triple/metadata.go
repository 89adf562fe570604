package triple

import (
	"encoding/base64"
	"strings"
)

// A call's metadata is an rpc.Metadata. In HTTP/2 and HTTP/1.1 headers
// its keys are lower-cased on the way out, and -bin values are
// base64-encoded on the wire, decoded on the way in.

// isBinaryKey says whether a metadata key carries base64 values.
func isBinaryKey(key string) bool { return strings.HasSuffix(key, "-bin") }

// decodeBinary decodes a -bin value: gRPC senders may pad or not.
func decodeBinary(v string) (string, error) {
	if len(v)%4 == 0 {
		b, err := base64.StdEncoding.DecodeString(v)
		return string(b), err
	}
	b, err := base64.RawStdEncoding.DecodeString(v)
	return string(b), err
}

// encodeBinary encodes a -bin value, unpadded as grpc-go sends it.
func encodeBinary(v string) string { return base64.RawStdEncoding.EncodeToString([]byte(v)) }

// reservedKey says whether a request header belongs to the transport
// (HTTP/2 pseudo headers, gRPC's own headers, hop-by-hop headers) rather
// than to the call's custom metadata. user-agent stays: grpc-go hands it
// to handlers as metadata too.
func reservedKey(key string) bool {
	if key == "" || key[0] == ':' {
		return true
	}
	switch key {
	case "content-type", "te", "grpc-timeout", "grpc-encoding", "grpc-accept-encoding",
		"grpc-message", "grpc-status", "grpc-status-details-bin", "grpc-message-type",
		"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host",
		"content-length", "content-encoding", "accept-encoding":
		return true
	}
	return false
}
