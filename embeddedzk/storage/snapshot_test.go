package storage

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeSnap(t testing.TB, dir string, zxid int64, data []byte) {
	t.Helper()
	err := WriteSnapshot(dir, zxid, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		t.Fatalf("WriteSnapshot(%d): %v", zxid, err)
	}
}

func readLatest(t testing.TB, dir string) (int64, []byte, error) {
	t.Helper()
	zxid, r, err := LatestSnapshot(dir)
	if err != nil {
		return 0, nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read snapshot: %v", err)
	}
	return zxid, b, nil
}

func snapData(zxid int64) []byte {
	return bytes.Repeat([]byte{byte(zxid)}, 1000+int(zxid))
}

func TestSnapshotRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"small", []byte("tree")},
		{"large", bytes.Repeat([]byte("0123456789"), 100_000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeSnap(t, dir, 0x1_0000_0042, tt.data)
			zxid, got, err := readLatest(t, dir)
			if err != nil {
				t.Fatalf("LatestSnapshot: %v", err)
			}
			if zxid != 0x1_0000_0042 || !bytes.Equal(got, tt.data) {
				t.Errorf("got zxid %#x and %d bytes, want %#x and %d bytes", zxid, len(got), 0x1_0000_0042, len(tt.data))
			}
			if _, err := os.Stat(filepath.Join(dir, "snapshot.0000000100000042")); err != nil {
				t.Errorf("snapshot file not named by its zxid: %v", err)
			}
		})
	}
}

func TestLatestSnapshotSkipsDamaged(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, p string)
	}{
		{"flipped payload byte", func(t *testing.T, p string) { flipByte(t, p, snapHeaderSize+10) }},
		{"flipped header byte", func(t *testing.T, p string) { flipByte(t, p, 9) }},
		{"truncated", func(t *testing.T, p string) { truncate(t, p, 500) }},
		{"too short for a header", func(t *testing.T, p string) { truncate(t, p, 5) }},
		{"extra bytes at the end", func(t *testing.T, p string) { appendBytes(t, p, []byte("junk")) }},
		{"empty", func(t *testing.T, p string) { truncate(t, p, 0) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeSnap(t, dir, 10, snapData(10))
			writeSnap(t, dir, 20, snapData(20))
			tt.damage(t, filepath.Join(dir, fileName(snapPrefix, 20)))
			zxid, got, err := readLatest(t, dir)
			if err != nil {
				t.Fatalf("LatestSnapshot: %v", err)
			}
			if zxid != 10 || !bytes.Equal(got, snapData(10)) {
				t.Errorf("got snapshot %d, want the older valid one (10)", zxid)
			}
		})
	}
}

func TestLatestSnapshotNone(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := LatestSnapshot(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("empty dir: err = %v, want fs.ErrNotExist", err)
	}
	if _, _, err := LatestSnapshot(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing dir: err = %v, want fs.ErrNotExist", err)
	}
	writeSnap(t, dir, 7, snapData(7))
	flipByte(t, filepath.Join(dir, fileName(snapPrefix, 7)), 20)
	if _, _, err := LatestSnapshot(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("only a damaged snapshot: err = %v, want fs.ErrNotExist", err)
	}
}

func TestWriteSnapshotCallbackErrorLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	writeSnap(t, dir, 1, snapData(1))
	boom := errors.New("boom")
	err := WriteSnapshot(dir, 2, func(w io.Writer) error {
		w.Write([]byte("half a tree"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("WriteSnapshot = %v, want the callback's error", err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != fileName(snapPrefix, 1) {
		t.Errorf("dir holds %v, want only the first snapshot", names)
	}
}

func TestOpenLogRemovesUnfinishedSnapshots(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, snapTmpPrefix+"12345")
	if err := os.WriteFile(tmp, []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustClose(t, mustOpen(t, dir, false))
	if _, err := os.Stat(tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("unfinished snapshot %s still there (%v)", tmp, err)
	}
	if zxid, _, err := LatestSnapshot(dir); err == nil || strings.Contains(err.Error(), "12345") {
		t.Errorf("LatestSnapshot = %d, %v; want none", zxid, err)
	}
}
