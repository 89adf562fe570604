//go:build unix

package storage

import (
	"testing"
)

func TestDirIsLocked(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, false)
	if l2, err := OpenLog(dir, LogOptions{Logger: quiet}); err == nil {
		l2.Close()
		t.Fatal("second OpenLog on the same dir succeeded")
	}
	mustClose(t, l)
	mustClose(t, mustOpen(t, dir, false))
}
