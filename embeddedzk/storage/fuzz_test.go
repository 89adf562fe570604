package storage

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReplay treats arbitrary bytes as the only log file. Opening and
// replaying must not panic, and what survives must be exactly a prefix of
// the input made of well-framed records with valid checksums.
func FuzzReplay(f *testing.F) {
	good := logFileHeader()
	for z := int64(1); z <= 3; z++ {
		good = appendRecord(good, z, payload(z))
	}
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add(append(bytes.Clone(good), 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff))
	f.Add(logFileHeader())
	f.Add([]byte("dzkl"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, fileName(logPrefix, 1))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := OpenLog(dir, LogOptions{Logger: quiet})
		if err != nil {
			return // a foreign header is refused, never cut
		}
		defer l.Close()
		rebuilt := logFileHeader()
		err = l.Replay(0, func(zxid int64, rec []byte) error {
			rebuilt = appendRecord(rebuilt, zxid, rec)
			return nil
		})
		if err != nil {
			t.Fatalf("Replay after OpenLog cut the tail: %v", err)
		}
		onDisk, err := os.ReadFile(p)
		if len(rebuilt) == logHeaderSize {
			if !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a file without a good record was kept (%v)", err)
			}
			return
		}
		if !bytes.HasPrefix(data, rebuilt) {
			t.Fatalf("replayed records are not a prefix of the input")
		}
		if !bytes.Equal(onDisk, rebuilt) {
			t.Fatalf("file cut to %d bytes, want the %d good bytes", len(onDisk), len(rebuilt))
		}
	})
}

// FuzzLatestSnapshot treats arbitrary bytes as the only snapshot. Reading
// must not panic, and a snapshot that is accepted must be exactly the
// payload framed with the right header and checksum.
func FuzzLatestSnapshot(f *testing.F) {
	seed := func(data []byte) []byte {
		dir := f.TempDir()
		if err := WriteSnapshot(dir, 1, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, fileName(snapPrefix, 1)))
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	f.Add(seed(nil))
	f.Add(seed([]byte("a small tree")))
	f.Add([]byte("dzks"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, fileName(snapPrefix, 1)), data, 0o644); err != nil {
			t.Fatal(err)
		}
		zxid, r, err := LatestSnapshot(dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("damaged snapshot gave %v, want fs.ErrNotExist", err)
			}
			return
		}
		payload, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		again := t.TempDir()
		WriteSnapshot(again, zxid, func(w io.Writer) error { _, err := w.Write(payload); return err })
		want, _ := os.ReadFile(filepath.Join(again, fileName(snapPrefix, zxid)))
		if !bytes.Equal(data, want) {
			t.Fatalf("accepted a snapshot that does not re-encode to itself")
		}
	})
}
