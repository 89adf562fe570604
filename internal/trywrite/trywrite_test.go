package trywrite

import (
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// A peer that does not read gets what its socket buffer takes, and the
// writer is not held up.
func TestWriteDoesNotBlock(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	fa, fb := os.NewFile(uintptr(fds[0]), "a"), os.NewFile(uintptr(fds[1]), "b")
	defer fb.Close()
	a, err := net.FileConn(fa)
	fa.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	w := New(a)
	b := make([]byte, 64<<20)
	start := time.Now()
	n, err := w.Write(b)
	if err != nil || n <= 0 || n >= len(b) {
		t.Fatalf("Write = %d, %v; want part of %d bytes", n, err, len(b))
	}
	if n2, err := w.Write(b); err != nil || n2 != 0 {
		t.Errorf("Write on a full socket = %d, %v; want 0, nil", n2, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	a.Close()
	if _, err := w.Write(b); err == nil {
		t.Error("Write on a closed connection succeeded")
	}
}
