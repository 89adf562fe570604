package protocol

import (
	"fmt"
	"testing"
)

// The serialization table names what the codec implements; other names,
// Dubbo's or misspelt, are refused saying only hessian2 is implemented.
func TestCheckSerialization(t *testing.T) {
	tests := []struct {
		name, want string
	}{
		{"", ""},
		{"hessian2", ""},
		{"fastjson2", `serialization "fastjson2" is Dubbo's but not implemented here; only hessian2 is`},
		{"hesian2", `unknown serialization "hesian2"; only hessian2 is implemented`},
	}
	for _, tt := range tests {
		err := CheckSerialization(tt.name)
		if got := fmt.Sprint(err); tt.want == "" && err != nil || tt.want != "" && got != tt.want {
			t.Errorf("CheckSerialization(%q) = %v, want %q", tt.name, err, tt.want)
		}
	}
	if got := SerializationNames(); len(got) != 1 || got[0] != "hessian2" {
		t.Errorf("SerializationNames() = %v", got)
	}
}
