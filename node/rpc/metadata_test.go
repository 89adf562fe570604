package rpc_test

import (
	"slices"
	"testing"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

func TestMetadataGet(t *testing.T) {
	md := rpc.Metadata{{Key: "x-user", Value: "ann"}, {Key: "trace-bin", Value: "\x00\xff"}, {Key: "x-user", Value: "bob"}}
	tests := []struct {
		key    string
		first  string
		values []string
	}{
		{"x-user", "ann", []string{"ann", "bob"}},
		{"trace-bin", "\x00\xff", []string{"\x00\xff"}},
		{"X-User", "", nil}, // keys are lower-case: no folding
		{"none", "", nil},
	}
	for _, tt := range tests {
		if got := md.Get(tt.key); got != tt.first {
			t.Errorf("Get(%q) = %q, want %q", tt.key, got, tt.first)
		}
		if got := md.Values(tt.key); !slices.Equal(got, tt.values) {
			t.Errorf("Values(%q) = %q, want %q", tt.key, got, tt.values)
		}
	}
}
