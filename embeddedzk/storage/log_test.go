package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// payload is the record the tests write for zxid; lengths vary with zxid.
func payload(zxid int64) []byte {
	return fmt.Appendf(nil, "txn %d %s", zxid, make([]byte, zxid%7))
}

func mustOpen(t testing.TB, dir string, fsync bool) *Log {
	t.Helper()
	l, err := OpenLog(dir, LogOptions{Fsync: fsync, Logger: quiet})
	if err != nil {
		t.Fatalf("OpenLog: %v", err)
	}
	return l
}

// appendRange appends zxids from..to and waits until they are durable.
func appendRange(t testing.TB, l *Log, from, to int64) {
	t.Helper()
	for z := from; z <= to; z++ {
		if err := l.Append(z, payload(z)); err != nil {
			t.Fatalf("Append(%d): %v", z, err)
		}
	}
	if err := l.WaitDurable(context.Background(), to); err != nil {
		t.Fatalf("WaitDurable(%d): %v", to, err)
	}
}

// replayed returns the zxids Replay yields, checking every payload.
func replayed(t testing.TB, l *Log, after int64) []int64 {
	t.Helper()
	var got []int64
	err := l.Replay(after, func(zxid int64, rec []byte) error {
		if string(rec) != string(payload(zxid)) {
			return fmt.Errorf("zxid %d: payload %q, want %q", zxid, rec, payload(zxid))
		}
		got = append(got, zxid)
		return nil
	})
	if err != nil {
		t.Fatalf("Replay(%d): %v", after, err)
	}
	return got
}

func seq(from, to int64) []int64 {
	var s []int64
	for z := from; z <= to; z++ {
		s = append(s, z)
	}
	return s
}

func logFiles(t testing.TB, dir string) []string {
	t.Helper()
	refs, err := listFiles(dir, logPrefix)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range refs {
		names = append(names, r.name)
	}
	return names
}

func mustClose(t testing.TB, l *Log) {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestRoundTripAcrossRolls(t *testing.T) {
	for _, fsync := range []bool{false, true} {
		t.Run(fmt.Sprintf("fsync=%v", fsync), func(t *testing.T) {
			dir := t.TempDir()
			l := mustOpen(t, dir, fsync)
			appendRange(t, l, 1, 100)
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
			appendRange(t, l, 101, 250)
			// Two rolls with nothing between them make one new file.
			l.Roll()
			l.Roll()
			appendRange(t, l, 251, 300)
			if got := l.DurableZxid(); got != 300 {
				t.Errorf("DurableZxid = %d, want 300", got)
			}
			mustClose(t, l)

			want := []string{fileName(logPrefix, 1), fileName(logPrefix, 101), fileName(logPrefix, 251)}
			if got := logFiles(t, dir); !slices.Equal(got, want) {
				t.Errorf("log files = %v, want %v", got, want)
			}
			l = mustOpen(t, dir, fsync)
			defer mustClose(t, l)
			if got := l.DurableZxid(); got != 300 {
				t.Errorf("DurableZxid after reopen = %d, want 300", got)
			}
			if got := replayed(t, l, 0); !slices.Equal(got, seq(1, 300)) {
				t.Errorf("replayed %d records (%v...), want 1..300", len(got), got[:min(len(got), 5)])
			}
		})
	}
}

func TestReplayAfterZxid(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, false)
	appendRange(t, l, 1, 10)
	l.Roll()
	appendRange(t, l, 11, 20)
	l.Roll()
	appendRange(t, l, 21, 30)
	mustClose(t, l)

	tests := []struct {
		after int64
		want  []int64
	}{
		{after: 0, want: seq(1, 30)},
		{after: 5, want: seq(6, 30)},
		{after: 10, want: seq(11, 30)},
		{after: 11, want: seq(12, 30)},
		{after: 29, want: seq(30, 30)},
		{after: 30, want: nil},
		{after: 1000, want: nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.after), func(t *testing.T) {
			l := mustOpen(t, dir, false)
			defer mustClose(t, l)
			if got := replayed(t, l, tt.after); !slices.Equal(got, tt.want) {
				t.Errorf("Replay(%d) = %v, want %v", tt.after, got, tt.want)
			}
		})
	}
}

func TestReplaySkipsFilesBeforeAfterZxid(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, false)
	appendRange(t, l, 1, 10)
	l.Roll()
	appendRange(t, l, 11, 20)
	mustClose(t, l)
	// Damage the first file: replay from 10 must not need it.
	flipByte(t, filepath.Join(dir, fileName(logPrefix, 1)), logHeaderSize+recordHeaderSize+2)

	l = mustOpen(t, dir, false)
	defer mustClose(t, l)
	if got := replayed(t, l, 10); !slices.Equal(got, seq(11, 20)) {
		t.Errorf("Replay(10) = %v, want 11..20", got)
	}
}

func TestAppendErrors(t *testing.T) {
	l := mustOpen(t, t.TempDir(), false)
	appendRange(t, l, 5, 5)
	tests := []struct {
		name string
		zxid int64
		rec  []byte
	}{
		{"same zxid", 5, []byte("x")},
		{"lower zxid", 4, []byte("x")},
		{"zero zxid", 0, []byte("x")},
		{"too large", 6, make([]byte, MaxRecordSize+1)},
	}
	for _, tt := range tests {
		if err := l.Append(tt.zxid, tt.rec); err == nil {
			t.Errorf("%s: Append(%d) succeeded", tt.name, tt.zxid)
		}
	}
	if err := l.Append(6, nil); err != nil {
		t.Errorf("Append(6, empty) after rejected appends: %v", err)
	}
	mustClose(t, l)
	if err := l.Append(7, []byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close = %v, want ErrClosed", err)
	}
	if err := l.Roll(); !errors.Is(err, ErrClosed) {
		t.Errorf("Roll after Close = %v, want ErrClosed", err)
	}
}

func TestAppendCopiesRecord(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, false)
	buf := payload(1)
	l.Append(1, buf)
	copy(buf, "garbage garbage")
	l.WaitDurable(context.Background(), 1)
	mustClose(t, l)
	l = mustOpen(t, dir, false)
	defer mustClose(t, l)
	if got := replayed(t, l, 0); !slices.Equal(got, []int64{1}) {
		t.Errorf("replayed %v", got)
	}
}

func TestReplayAfterAppendIsRefused(t *testing.T) {
	l := mustOpen(t, t.TempDir(), false)
	defer mustClose(t, l)
	appendRange(t, l, 1, 1)
	if err := l.Replay(0, func(int64, []byte) error { return nil }); err == nil {
		t.Error("Replay after Append succeeded")
	}
}

func TestReplayStopsAtCallbackError(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, false)
	appendRange(t, l, 1, 10)
	mustClose(t, l)
	l = mustOpen(t, dir, false)
	defer mustClose(t, l)
	stop := errors.New("stop")
	calls := 0
	err := l.Replay(0, func(zxid int64, _ []byte) error {
		calls++
		if zxid == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 3 {
		t.Errorf("Replay = %v after %d calls, want the callback's error after 3", err, calls)
	}
}

func TestWaitDurable(t *testing.T) {
	l := mustOpen(t, t.TempDir(), true)
	appendRange(t, l, 1, 3)
	if err := l.WaitDurable(context.Background(), 2); err != nil {
		t.Errorf("WaitDurable for a durable zxid: %v", err)
	}

	// A zxid never appended cannot become durable: the context ends the wait.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := l.WaitDurable(ctx, 100); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitDurable(100) = %v, want DeadlineExceeded", err)
	}

	// Close wakes such a waiter with ErrClosed.
	got := make(chan error, 1)
	go func() { got <- l.WaitDurable(context.Background(), 100) }()
	time.Sleep(10 * time.Millisecond)
	mustClose(t, l)
	select {
	case err := <-got:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("WaitDurable across Close = %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake the waiter")
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

func TestCloseFlushesBufferedRecords(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, false)
	for z := int64(1); z <= 50; z++ {
		if err := l.Append(z, payload(z)); err != nil {
			t.Fatal(err)
		}
	}
	mustClose(t, l)
	if err := l.WaitDurable(context.Background(), 50); err != nil {
		t.Errorf("WaitDurable(50) after Close = %v, want nil: Close writes what was appended", err)
	}
	l = mustOpen(t, dir, false)
	defer mustClose(t, l)
	if got := replayed(t, l, 0); !slices.Equal(got, seq(1, 50)) {
		t.Errorf("replayed %v, want 1..50", got)
	}
}

func TestWriteErrorIsFailStop(t *testing.T) {
	l := mustOpen(t, t.TempDir(), true)
	appendRange(t, l, 1, 1)
	// Close the file under the flusher so that its next write fails.
	l.file.Close()
	if err := l.Append(2, payload(2)); err != nil {
		t.Fatalf("Append(2) before the failed write: %v", err)
	}
	err := l.WaitDurable(context.Background(), 2)
	if err == nil || !errors.Is(err, os.ErrClosed) {
		t.Fatalf("WaitDurable(2) = %v, want the write error", err)
	}
	if err := l.Append(3, payload(3)); err == nil {
		t.Error("Append after a write error succeeded")
	}
	if err := l.WaitDurable(context.Background(), 3); err == nil {
		t.Error("WaitDurable after a write error succeeded")
	}
	if got := l.DurableZxid(); got != 1 {
		t.Errorf("DurableZxid = %d, want 1", got)
	}
	if err := l.Close(); err == nil {
		t.Error("Close after a write error returned nil")
	}
}

func TestConcurrentAppendAndWait(t *testing.T) {
	const writers, each = 16, 200
	dir := t.TempDir()
	l := mustOpen(t, dir, true)
	var (
		mu   sync.Mutex // the server serialises zxid assignment and Append
		next int64
		wg   sync.WaitGroup
		errs = make(chan error, writers)
	)
	for range writers {
		wg.Go(func() {
			for range each {
				mu.Lock()
				next++
				z := next
				err := l.Append(z, payload(z))
				if z%500 == 0 {
					l.Roll()
				}
				mu.Unlock()
				if err == nil {
					err = l.WaitDurable(context.Background(), z)
				}
				if err == nil && l.DurableZxid() < z {
					err = fmt.Errorf("WaitDurable(%d) returned with DurableZxid %d", z, l.DurableZxid())
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	mustClose(t, l)
	l = mustOpen(t, dir, false)
	defer mustClose(t, l)
	if got := replayed(t, l, 0); !slices.Equal(got, seq(1, writers*each)) {
		t.Errorf("replayed %d records, want %d in order", len(got), writers*each)
	}
	if n := len(logFiles(t, dir)); n != writers*each/500+1 {
		t.Errorf("%d log files, want %d", n, writers*each/500+1)
	}
}
