package rpc_test

import (
	"strings"
	"testing"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Each kind has its name, the one gRPC's documentation uses, both ways,
// and is the kind of the method whose sides stream as it says.
func TestMethodKind(t *testing.T) {
	tests := []struct {
		kind                         rpc.MethodKind
		name                         string
		clientStreams, serverStreams bool
	}{
		{rpc.Unary, "unary", false, false},
		{rpc.ServerStream, "server-streaming", false, true},
		{rpc.ClientStream, "client-streaming", true, false},
		{rpc.BidiStream, "bidi-streaming", true, true},
	}
	for _, tt := range tests {
		if got := tt.kind.String(); got != tt.name {
			t.Errorf("%d: String() = %q, want %q", tt.kind, got, tt.name)
		}
		if b, err := tt.kind.MarshalText(); err != nil || string(b) != tt.name {
			t.Errorf("%v: MarshalText() = %q, %v", tt.kind, b, err)
		}
		var k rpc.MethodKind
		if err := k.UnmarshalText([]byte(tt.name)); err != nil || k != tt.kind {
			t.Errorf("UnmarshalText(%q) = %v, %v", tt.name, k, err)
		}
		if got := rpc.MethodKindOf(tt.clientStreams, tt.serverStreams); got != tt.kind {
			t.Errorf("MethodKindOf(%v, %v) = %v, want %v", tt.clientStreams, tt.serverStreams, got, tt.kind)
		}
	}
}

// A name that is not a kind is refused with the names that are; a value
// that is not one has no name to write.
func TestMethodKindUnknown(t *testing.T) {
	var k rpc.MethodKind
	if err := k.UnmarshalText([]byte("server_stream")); err == nil || !strings.Contains(err.Error(), "unary, server-streaming, client-streaming or bidi-streaming") {
		t.Errorf("UnmarshalText(server_stream): %v", err)
	}
	if b, err := rpc.MethodKind(9).MarshalText(); err == nil {
		t.Errorf("MarshalText(9) = %q, want an error", b)
	}
	if got := rpc.MethodKind(9).String(); got != "kind(9)" {
		t.Errorf("String() = %q", got)
	}
}
