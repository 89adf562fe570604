//go:build linux

package storage

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/smallfs"
)

// TestFullDiskIsRetried fills a real filesystem under an open log: writes
// fail with ENOSPC and Health says so, the records appended meanwhile are
// kept, and once space is freed the log recovers by itself and writes them
// in order, with no partial write left in the file.
func TestFullDiskIsRetried(t *testing.T) {
	dir := smallfs.Mount(t, 1<<20)
	var logs syncLog
	l, err := OpenLog(dir, LogOptions{Fsync: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendRange(t, l, 1, 100)
	free := smallfs.Fill(t, dir, 2<<20)

	// The log file's last page may still take a few records.
	z := int64(101)
	var werr error
	for ; z < 5000; z++ {
		if err := l.Append(z, payload(z)); err != nil {
			t.Fatalf("Append(%d) on a full disk: %v", z, err)
		}
		if werr = l.WaitDurable(context.Background(), z); werr != nil {
			break
		}
	}
	if !errors.Is(werr, syscall.ENOSPC) {
		t.Fatalf("WaitDurable(%d) on a full disk = %v, want ENOSPC", z, werr)
	}
	if err := l.Health(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Health on a full disk = %v, want ENOSPC", err)
	}
	failedAt := z
	// Records appended while writes fail are kept, in order.
	for z = failedAt + 1; z <= failedAt+10; z++ {
		if err := l.Append(z, payload(z)); err != nil {
			t.Fatalf("Append(%d) while writes fail: %v", z, err)
		}
	}
	last := z - 1
	// Still failing after several retries: nothing recovers by accident.
	time.Sleep(300 * time.Millisecond)
	if l.Health() == nil || l.DurableZxid() >= failedAt {
		t.Fatalf("recovered with the disk still full (durable %d)", l.DurableZxid())
	}

	free()
	deadline := time.Now().Add(10 * time.Second)
	for l.Health() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("still failing 10s after space was freed: %v", l.Health())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := l.WaitDurable(context.Background(), last); err != nil {
		t.Fatalf("WaitDurable(%d) after recovery: %v", last, err)
	}
	appendRange(t, l, last+1, last+5)
	mustClose(t, l)
	for _, want := range []string{"cannot write the transaction log", "writable again"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}

	// Every failed write was undone: no torn tail to cut on reopen.
	var reopen bytes.Buffer
	l, err = OpenLog(dir, LogOptions{Logger: slog.New(slog.NewTextHandler(&reopen, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, l)
	if got := replayed(t, l, 0); !slices.Equal(got, seq(1, last+5)) {
		t.Errorf("replayed %d records, want 1..%d in order", len(got), last+5)
	}
	if strings.Contains(reopen.String(), "torn") {
		t.Errorf("a partial write was left in the file:\n%s", reopen.String())
	}
}

// syncLog is a log sink the flusher goroutine and the test share.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncLog) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
