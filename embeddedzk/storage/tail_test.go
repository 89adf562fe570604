package storage

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// recordOffset is where zxid's record starts in a file whose first zxid is
// first, for files written by appendRange.
func recordOffset(first, zxid int64) int64 {
	off := int64(logHeaderSize)
	for z := first; z < zxid; z++ {
		off += recordHeaderSize + int64(len(payload(z)))
	}
	return off
}

func flipByte(t testing.TB, p string, off int64) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x40
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendBytes(t testing.TB, p string, extra []byte) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(extra); err != nil {
		t.Fatal(err)
	}
}

func truncate(t testing.TB, p string, size int64) {
	t.Helper()
	if err := os.Truncate(p, size); err != nil {
		t.Fatal(err)
	}
}

// TestTornTailIsCut damages the newest log file the ways a crash or a bad
// disk can, and checks that reopening keeps exactly the good prefix, that
// appending continues, and that the result survives another reopen.
func TestTornTailIsCut(t *testing.T) {
	// Files: log.1 holds 1..5, log.6 holds 6..10.
	last := recordOffset(6, 10)
	end := recordOffset(6, 11)
	tests := []struct {
		name   string
		damage func(t *testing.T, newest string)
		want   int64 // last zxid that survives
	}{
		{"truncated mid payload", func(t *testing.T, p string) { truncate(t, p, end-2) }, 9},
		{"truncated mid header", func(t *testing.T, p string) { truncate(t, p, last+5) }, 9},
		{"garbage appended", func(t *testing.T, p string) { appendBytes(t, p, []byte("this is not a record, it is junk")) }, 10},
		{"zeros appended", func(t *testing.T, p string) { appendBytes(t, p, make([]byte, 4096)) }, 10},
		{"byte flipped in last payload", func(t *testing.T, p string) { flipByte(t, p, end-1) }, 9},
		{"byte flipped in last checksum", func(t *testing.T, p string) { flipByte(t, p, last) }, 9},
		{"byte flipped in last zxid", func(t *testing.T, p string) { flipByte(t, p, last+9) }, 9},
		{"last length above limit", func(t *testing.T, p string) {
			for i := range int64(4) {
				flipByte(t, p, last+4+i)
			}
		}, 9},
		{"byte flipped in an earlier record of the newest file", func(t *testing.T, p string) { flipByte(t, p, recordOffset(6, 8)+20) }, 7},
		{"newest file has only its header", func(t *testing.T, p string) { truncate(t, p, logHeaderSize) }, 5},
		{"newest file has a torn header", func(t *testing.T, p string) { truncate(t, p, 3) }, 5},
		{"newest file is zeros", func(t *testing.T, p string) {
			truncate(t, p, 0)
			appendBytes(t, p, make([]byte, 100))
		}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l := mustOpen(t, dir, true)
			appendRange(t, l, 1, 5)
			l.Roll()
			appendRange(t, l, 6, 10)
			mustClose(t, l)
			tt.damage(t, filepath.Join(dir, fileName(logPrefix, 6)))

			var logs bytes.Buffer
			l, err := OpenLog(dir, LogOptions{Fsync: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatalf("OpenLog after damage: %v", err)
			}
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), fileName(logPrefix, 6)) {
				t.Errorf("no warning naming the cut file; log:\n%s", logs.String())
			}
			if got := l.DurableZxid(); got != tt.want {
				t.Errorf("DurableZxid = %d, want %d", got, tt.want)
			}
			if got := replayed(t, l, 0); !slices.Equal(got, seq(1, tt.want)) {
				t.Fatalf("replayed %v, want 1..%d", got, tt.want)
			}
			// The server reassigns the lost zxids; they must append cleanly.
			appendRange(t, l, tt.want+1, tt.want+5)
			mustClose(t, l)

			l = mustOpen(t, dir, true)
			defer mustClose(t, l)
			if got := replayed(t, l, 0); !slices.Equal(got, seq(1, tt.want+5)) {
				t.Errorf("after append and reopen replayed %v, want 1..%d", got, tt.want+5)
			}
		})
	}
}

// TestCorruptionBeforeGoodDataIsAnError checks that damage in an older file
// is reported with file and offset instead of silently dropping the
// acknowledged records after it.
func TestCorruptionBeforeGoodDataIsAnError(t *testing.T) {
	bad := recordOffset(1, 3)
	tests := []struct {
		name   string
		damage func(t *testing.T, p string)
	}{
		{"flipped byte", func(t *testing.T, p string) { flipByte(t, p, bad+recordHeaderSize) }},
		{"truncated", func(t *testing.T, p string) { truncate(t, p, bad+7) }},
		{"length above limit", func(t *testing.T, p string) { flipByte(t, p, bad+7) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l := mustOpen(t, dir, false)
			appendRange(t, l, 1, 5)
			l.Roll()
			appendRange(t, l, 6, 10)
			mustClose(t, l)
			older := filepath.Join(dir, fileName(logPrefix, 1))
			tt.damage(t, older)

			l = mustOpen(t, dir, false)
			defer mustClose(t, l)
			var got []int64
			err := l.Replay(0, func(z int64, _ []byte) error { got = append(got, z); return nil })
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Replay = %v, want ErrCorrupt", err)
			}
			if msg := err.Error(); !strings.Contains(msg, older) || !strings.Contains(msg, fmt.Sprintf("offset %d", bad)) {
				t.Errorf("error %q does not name %s and offset %d", msg, older, bad)
			}
			if !slices.Equal(got, seq(1, 2)) {
				t.Errorf("replayed %v before the damage, want [1 2]", got)
			}
		})
	}
}

func TestForeignLogFileIsNotCut(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, fileName(logPrefix, 1))
	content := []byte("hello, this is somebody else's file")
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	if l, err := OpenLog(dir, LogOptions{Logger: quiet}); err == nil {
		l.Close()
		t.Fatal("OpenLog accepted a file that is not a log")
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, content) {
		t.Error("OpenLog changed a file that is not a log")
	}
}
