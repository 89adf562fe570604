package watch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

const every = 20 * time.Millisecond

// binaryWatch runs Binary on path until the test ends; each change comes
// on the channel.
func binaryWatch(t *testing.T, path string) <-chan struct{} {
	t.Helper()
	changes := make(chan struct{}, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Binary(ctx, path, every, func() { changes <- struct{}{} })
	}()
	t.Cleanup(func() { cancel(); <-done })
	time.Sleep(2 * every) // Binary has seen the file as it is
	return changes
}

// changesWithin counts the changes seen within d.
func changesWithin(changes <-chan struct{}, d time.Duration) int {
	n := 0
	timeout := time.After(d)
	for {
		select {
		case <-changes:
			n++
		case <-timeout:
			return n
		}
	}
}

func write(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // WriteFile keeps an existing file's mode
		t.Fatal(err)
	}
}

func replace(t *testing.T, path, data string) {
	t.Helper()
	write(t, path+".tmp", data, 0o755)
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// TestBinary: each way a build or a user puts a new binary in place is one
// change, seen once the file is whole and executable; nothing else is one.
func TestBinary(t *testing.T) {
	for _, tt := range []struct {
		name   string
		before bool // the file exists when the watch starts
		act    func(t *testing.T, path string)
		want   int
	}{
		{"untouched", true, func(*testing.T, string) {}, 0},
		{"renamed over", true, func(t *testing.T, path string) { replace(t, path, "v2") }, 1},
		{"rewritten in place", true, func(t *testing.T, path string) { write(t, path, "v2, longer", 0o755) }, 1},
		{"appears", false, func(t *testing.T, path string) { replace(t, path, "v1") }, 1},
		{"removed", true, func(t *testing.T, path string) { os.Remove(path) }, 0},
		{"removed, then back", true, func(t *testing.T, path string) {
			os.Remove(path)
			time.Sleep(5 * every)
			replace(t, path, "v2")
		}, 1},
		{"not executable until chmod", true, func(t *testing.T, path string) {
			write(t, path, "v2, being written", 0o644)
			time.Sleep(5 * every)
			if err := os.Chmod(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}, 1},
		{"written in pieces", true, func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for range 5 {
				f.WriteString("piece ")
				time.Sleep(every / 2)
			}
		}, 1},
		{"replaced twice, far apart", true, func(t *testing.T, path string) {
			replace(t, path, "v2")
			time.Sleep(10 * every)
			replace(t, path, "v3")
		}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "plugin")
			if tt.before {
				write(t, path, "v1", 0o755)
			}
			changes := binaryWatch(t, path)
			tt.act(t, path)
			if got := changesWithin(changes, 10*every); got != tt.want {
				t.Errorf("%d changes, want %d", got, tt.want)
			}
		})
	}
}
