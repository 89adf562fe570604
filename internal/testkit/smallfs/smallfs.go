//go:build linux

// Package smallfs gives tests a real filesystem they can fill: a small
// tmpfs mounted on a temporary directory, so that writes fail with ENOSPC
// the way they do on a full disk, and succeed again once space is freed.
// Mounting needs root (CAP_SYS_ADMIN); without it the test is skipped, or
// fails when CI=true, as the other harnesses do for a missing component.
package smallfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/need"
)

// Mount mounts a tmpfs of size bytes on a new temporary directory and
// returns it. It is unmounted when the test ends, after the cleanups
// registered later (such as stopping a process that writes to it).
func Mount(t testing.TB, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		msg := fmt.Sprintf("smallfs: mount a %d-byte tmpfs on %s: %v (needs root, to fill a real filesystem)", size, dir, err)
		need.Missing(t, "%s", msg)
	}
	t.Cleanup(func() {
		// A process killed just before may still hold files for a moment.
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := syscall.Unmount(dir, 0)
			if err == nil {
				return
			}
			if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
				t.Errorf("smallfs: unmount %s: %v; detaching it", dir, err)
				syscall.Unmount(dir, syscall.MNT_DETACH)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	return dir
}

// Fill writes a file into dir until the filesystem is full (ENOSPC) and
// returns a function that removes it again. It fails the test if the
// filesystem does not fill within max bytes.
func Fill(t testing.TB, dir string, max int64) (free func()) {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatalf("smallfs: %v", err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for written := int64(0); ; {
		n, err := f.Write(chunk)
		written += int64(n)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatalf("smallfs: fill %s: %v", dir, err)
		}
		if written > max {
			t.Fatalf("smallfs: %s took %d bytes without filling up", dir, written)
		}
	}
	return func() {
		t.Helper()
		if err := os.Remove(p); err != nil {
			t.Fatalf("smallfs: free %s: %v", dir, err)
		}
	}
}
