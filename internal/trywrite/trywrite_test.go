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

// A write deadline that a blocking write set earlier, and that has passed
// since, does not fail a write the socket can take: the bytes are left to
// the caller (who writes them blocking, with a fresh deadline). Before,
// the connection failed with "raw-write: i/o timeout" whenever its last
// blocking write was a heartbeat timeout ago.
func TestStaleDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.SetWriteDeadline(time.Now().Add(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Write([]byte("blocking write, within its deadline")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	w := New(a)
	if n, err := w.Write([]byte("later")); err != nil || n != 0 {
		t.Fatalf("Write after the deadline passed = %d, %v; want 0, nil (left to the caller)", n, err)
	}
	if err := a.SetWriteDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if n, err := w.Write([]byte("later")); err != nil || n != 5 {
		t.Fatalf("Write = %d, %v; want 5, nil", n, err)
	}
}
