package storage

import (
	"bytes"
	"encoding/binary"
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

// writeLog writes dir/log.<first> by hand: a version header, then each
// write's records with the first one marked as a write start (version 2;
// version 1 files have no marks). It returns the file's path.
func writeLog(t testing.TB, dir string, version uint32, writes ...[]int64) string {
	t.Helper()
	b := logFileHeader()
	binary.LittleEndian.PutUint32(b[4:], version)
	for _, w := range writes {
		start := len(b)
		for _, z := range w {
			b = appendRecord(b, z, payload(z))
		}
		if version >= 2 {
			markWriteStart(b[start:])
		}
	}
	p := filepath.Join(dir, fileName(logPrefix, writes[0][0]))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func overwrite(t testing.TB, p string, off int64, with []byte) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	copy(b[off:], with)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// the files most tests start from: log.1 holds writes 1..5 one record
// each, log.6 holds writes [6] [7] [8 9 10]: a group commit of three.
func standardLogs(t testing.TB, dir string) (older, newest string) {
	older = writeLog(t, dir, logVersion, []int64{1}, []int64{2}, []int64{3}, []int64{4}, []int64{5})
	newest = writeLog(t, dir, logVersion, []int64{6}, []int64{7}, []int64{8, 9, 10})
	return older, newest
}

// TestTornTailIsCut damages the last write of the newest log file the ways
// a crash or a bad disk can, and checks that reopening keeps exactly the
// good prefix, that appending continues, and that the result survives
// another reopen.
func TestTornTailIsCut(t *testing.T) {
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
		// Pages of one write reach the disk in any order when power fails:
		// the records after the hole are of the same write, never acknowledged.
		{"hole in the first record of the last write", func(t *testing.T, p string) {
			overwrite(t, p, recordOffset(6, 8), make([]byte, 16))
		}, 7},
		{"byte flipped mid last write", func(t *testing.T, p string) { flipByte(t, p, recordOffset(6, 9)+20) }, 8},
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
			_, newest := standardLogs(t, dir)
			tt.damage(t, newest)

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

// TestMidLogCorruptionStopsStart damages the newest file before its last
// write: intact writes after the damage prove it is not a crash's torn
// tail, so OpenLog refuses and changes nothing.
func TestMidLogCorruptionStopsStart(t *testing.T) {
	rec7 := recordOffset(6, 7)
	tests := []struct {
		name   string
		files  func(t *testing.T, dir string) string // returns the file to damage
		damage func(t *testing.T, p string)
		off    int64
		intact int
	}{
		{"byte flipped in a payload", standardFiles, func(t *testing.T, p string) { flipByte(t, p, rec7+20) }, rec7, 3},
		// The case: 16 bytes overwritten, length included, so the
		// next record must be found by scanning.
		{"16 bytes overwritten at a record", standardFiles, func(t *testing.T, p string) {
			overwrite(t, p, rec7, []byte("0123456789abcdef"))
		}, rec7, 3},
		{"16 zero bytes at a record", standardFiles, func(t *testing.T, p string) { overwrite(t, p, rec7, make([]byte, 16)) }, rec7, 3},
		{"first record of the file", standardFiles, func(t *testing.T, p string) {
			flipByte(t, p, logHeaderSize+recordHeaderSize)
		}, logHeaderSize, 4},
		{"version 1 file: no write marks, any intact record counts", func(t *testing.T, dir string) string {
			writeLog(t, dir, 1, []int64{1}, []int64{2}, []int64{3}, []int64{4}, []int64{5})
			return writeLog(t, dir, 1, []int64{6, 7, 8, 9, 10})
		}, func(t *testing.T, p string) { flipByte(t, p, recordOffset(6, 9)+20) }, recordOffset(6, 9), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := tt.files(t, dir)
			tt.damage(t, p)
			before, _ := os.ReadFile(p)

			l, err := OpenLog(dir, LogOptions{Fsync: true, Logger: quiet})
			if err == nil {
				l.Close()
				t.Fatal("OpenLog accepted a log damaged before its last write")
			}
			var cerr *CorruptError
			if !errors.As(err, &cerr) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("OpenLog = %v, want a *CorruptError", err)
			}
			if cerr.File != p || cerr.Offset != tt.off || cerr.Intact != tt.intact || cerr.LastIntact != 10 {
				t.Errorf("CorruptError = %+v, want file %s offset %d, %d intact up to zxid 10", cerr, p, tt.off, tt.intact)
			}
			for _, want := range []string{p, fmt.Sprintf("offset %d", tt.off), "not a torn write"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if after, _ := os.ReadFile(p); !bytes.Equal(before, after) {
				t.Error("OpenLog changed the damaged file")
			}
		})
	}
}

func standardFiles(t *testing.T, dir string) string {
	_, newest := standardLogs(t, dir)
	return newest
}

// TestRecoverTruncateMovesDamageAside opens damaged logs with
// RecoverTruncate: the damaged part and later files are kept byte for byte
// in side files, the log goes on from the last good record, and the result
// reopens cleanly without the option.
func TestRecoverTruncateMovesDamageAside(t *testing.T) {
	for _, tt := range []struct {
		name     string
		damaged  func(older, newest string) (string, int64) // file and offset
		keep     int64                                      // last zxid kept
		sideBase []string                                   // side file names
	}{
		{"in the newest file", func(_, newest string) (string, int64) { return newest, recordOffset(6, 7) }, 6,
			[]string{fileName(logPrefix, 6) + fmt.Sprintf(".damaged-%d", recordOffset(6, 7))}},
		{"in an older file", func(older, _ string) (string, int64) { return older, recordOffset(1, 3) }, 2,
			[]string{fileName(logPrefix, 1) + fmt.Sprintf(".damaged-%d", recordOffset(1, 3)), fileName(logPrefix, 6) + ".damaged"}},
		{"first record of an older file", func(older, _ string) (string, int64) { return older, logHeaderSize }, 0,
			[]string{fileName(logPrefix, 1) + fmt.Sprintf(".damaged-%d", logHeaderSize), fileName(logPrefix, 6) + ".damaged"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			older, newest := standardLogs(t, dir)
			p, off := tt.damaged(older, newest)
			flipByte(t, p, off+recordHeaderSize+1)
			orig := map[string][]byte{}
			for _, f := range []string{older, newest} {
				orig[f], _ = os.ReadFile(f)
			}

			var logs bytes.Buffer
			l, err := OpenLog(dir, LogOptions{Fsync: true, RecoverTruncate: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatalf("OpenLog with RecoverTruncate: %v", err)
			}
			got := replayed(t, l, 0)
			if !slices.Equal(got, seq(1, tt.keep)) {
				t.Fatalf("replayed %v, want 1..%d", got, tt.keep)
			}
			if d := l.DurableZxid(); d != tt.keep {
				t.Errorf("DurableZxid = %d, want %d", d, tt.keep)
			}
			if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "side_files=") {
				t.Errorf("no error naming the side files; log:\n%s", logs.String())
			}
			// Byte for byte: the kept part plus the side file is the original.
			side, err := os.ReadFile(filepath.Join(dir, tt.sideBase[0]))
			if err != nil {
				t.Fatal(err)
			}
			kept, _ := os.ReadFile(p)
			if !bytes.Equal(append(kept, side...), orig[p]) && !(tt.keep == 0 && bytes.Equal(side, orig[p][off:])) {
				t.Errorf("kept %d bytes + side file %d bytes != the original %d bytes", len(kept), len(side), len(orig[p]))
			}
			for _, name := range tt.sideBase[1:] {
				if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(b, orig[newest]) {
					t.Errorf("later file moved to %s: %v, equal %v", name, err, bytes.Equal(b, orig[newest]))
				}
			}

			appendRange(t, l, tt.keep+1, tt.keep+3)
			mustClose(t, l)
			l = mustOpen(t, dir, true)
			defer mustClose(t, l)
			if got := replayed(t, l, 0); !slices.Equal(got, seq(1, tt.keep+3)) {
				t.Errorf("after recovery, append and reopen: replayed %v, want 1..%d", got, tt.keep+3)
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
			older, _ := standardLogs(t, dir)
			tt.damage(t, older)

			l := mustOpen(t, dir, false)
			defer mustClose(t, l)
			var got []int64
			err := l.Replay(0, func(z int64, _ []byte) error { got = append(got, z); return nil })
			var cerr *CorruptError
			if !errors.Is(err, ErrCorrupt) || !errors.As(err, &cerr) {
				t.Fatalf("Replay = %v, want a *CorruptError", err)
			}
			if msg := err.Error(); !strings.Contains(msg, older) || !strings.Contains(msg, fmt.Sprintf("offset %d", bad)) {
				t.Errorf("error %q does not name %s and offset %d", msg, older, bad)
			}
			if len(cerr.LaterFiles) != 1 {
				t.Errorf("LaterFiles = %v, want the newest file", cerr.LaterFiles)
			}
			if !slices.Equal(got, seq(1, 2)) {
				t.Errorf("replayed %v before the damage, want [1 2]", got)
			}
		})
	}
}

// TestDamageBeforeARemovedEmptyFile: a newest file with no record is what a
// crash leaves right after creating it, but the file before it was synced
// first, so damage at that file's end is not torn and is not cut.
func TestDamageBeforeARemovedEmptyFile(t *testing.T) {
	dir := t.TempDir()
	older, newest := standardLogs(t, dir)
	truncate(t, newest, logHeaderSize)
	flipByte(t, older, recordOffset(1, 5)+recordHeaderSize)
	l, err := OpenLog(dir, LogOptions{Logger: quiet})
	if err == nil {
		l.Close()
		t.Fatal("OpenLog cut the end of a file that a later file followed")
	}
	var cerr *CorruptError
	if !errors.As(err, &cerr) || cerr.File != older {
		t.Fatalf("OpenLog = %v, want a *CorruptError in %s", err, older)
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

// TestVersion1LogIsReadNotAppended: a log written before write marks
// existed replays as before, and new records go to a new version 2 file,
// leaving the old one byte for byte as it was.
func TestVersion1LogIsReadNotAppended(t *testing.T) {
	dir := t.TempDir()
	old := writeLog(t, dir, 1, []int64{1, 2, 3, 4, 5})
	before, _ := os.ReadFile(old)
	l := mustOpen(t, dir, true)
	if got := replayed(t, l, 0); !slices.Equal(got, seq(1, 5)) {
		t.Fatalf("replayed %v, want 1..5", got)
	}
	appendRange(t, l, 6, 8)
	mustClose(t, l)
	if after, _ := os.ReadFile(old); !bytes.Equal(before, after) {
		t.Error("appending changed the version 1 file")
	}
	if got, want := logFiles(t, dir), []string{fileName(logPrefix, 1), fileName(logPrefix, 6)}; !slices.Equal(got, want) {
		t.Errorf("log files %v, want %v", got, want)
	}
	l = mustOpen(t, dir, true)
	defer mustClose(t, l)
	if got := replayed(t, l, 0); !slices.Equal(got, seq(1, 8)) {
		t.Errorf("replayed %v, want 1..8", got)
	}
}

// TestWritesAreMarked: the first record of every write carries writeStart,
// so a record appended after the previous one was durable starts a write,
// and so does the first record of a file.
func TestWritesAreMarked(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, true)
	appendRange(t, l, 1, 1)
	appendRange(t, l, 2, 4)
	l.Roll()
	appendRange(t, l, 5, 6)
	mustClose(t, l)
	marks := map[int64]bool{}
	for _, name := range logFiles(t, dir) {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		rr, err := newRecordReader(f, st.Size())
		if err != nil {
			t.Fatal(err)
		}
		for {
			r, err := rr.next()
			if err != nil {
				break
			}
			marks[r.zxid] = r.first
		}
		f.Close()
	}
	for _, z := range []int64{1, 2, 5} {
		if !marks[z] {
			t.Errorf("record %d does not start a write; marks %v", z, marks)
		}
	}
}
