//go:build unix

package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive flock on dir/LOCK. The kernel drops it when
// the process dies, so a crash never leaves the directory locked.
func lockDir(dir string) (io.Closer, error) {
	p := filepath.Join(dir, lockName)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("storage: lock data dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("storage: data dir %s is in use by another registry server; stop it or choose another data-dir: %w", dir, err)
		}
		return nil, fmt.Errorf("storage: lock %s: %w", p, err)
	}
	return f, nil
}
