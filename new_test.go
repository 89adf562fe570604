package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `dubbo new handler` refuses what it cannot write with a usage error,
// before it writes or connects to anything.
func TestNewHandlerRefuses(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("taken", 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"new", "handler"}, "accepts 1 arg"},
		{[]string{"new", "handler", "Hello"}, "not a valid name"},
		{[]string{"new", "handler", "taken"}, "already exists"},
		{[]string{"new", "handler", "x", "--interface", "a.B", "--proto", "x.proto"}, "give one of"},
		{[]string{"new", "handler", "x", "--registry", "zookeeper://127.0.0.1:1"}, "--registry is for --from-registry"},
		{[]string{"new", "handler", "x", "--from-registry", "a.B", "--registry", "http://x"}, "--registry"},
		{[]string{"new"}, "dubbo new handler NAME"},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		root := newRootCommand(&out, &errOut)
		root.SetArgs(tt.args)
		_, err := root.ExecuteContextC(context.Background())
		if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: err = %v (exit %d), want a usage error with %q", tt.args, err, exitCode(err), tt.want)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("refused commands wrote %v", entries)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "taken")); len(entries) != 0 {
		t.Errorf("the existing directory was written to: %v", entries)
	}
}
