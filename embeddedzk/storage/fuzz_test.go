package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReplay treats arbitrary bytes as the only log file. Opening and
// replaying must not panic. Either the open is refused and the file is
// untouched (a foreign header, or damage that intact later writes follow),
// or what survives is exactly a prefix of the input made of well-framed
// records with valid checksums. With RecoverTruncate the open succeeds for
// any log header, and the kept prefix plus the side file is the input.
func FuzzReplay(f *testing.F) {
	good := logFileHeader()
	for z := int64(1); z <= 3; z++ {
		start := len(good)
		good = appendRecord(good, z, payload(z))
		markWriteStart(good[start:])
	}
	f.Add(good, false)
	f.Add(good[:len(good)-3], false)
	f.Add(append(bytes.Clone(good), 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff), false)
	mid := bytes.Clone(good)
	mid[logHeaderSize+recordHeaderSize+1] ^= 0x40
	f.Add(mid, false)
	f.Add(mid, true)
	f.Add(logFileHeader(), false)
	f.Add([]byte("dzkl"), true)
	f.Fuzz(func(t *testing.T, data []byte, recover bool) {
		dir := t.TempDir()
		p := filepath.Join(dir, fileName(logPrefix, 1))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := OpenLog(dir, LogOptions{Logger: quiet, RecoverTruncate: recover})
		if err != nil {
			var cerr *CorruptError
			if recover && errors.As(err, &cerr) {
				t.Fatalf("OpenLog with RecoverTruncate: %v", err)
			}
			if onDisk, _ := os.ReadFile(p); !bytes.Equal(onDisk, data) {
				t.Fatalf("a refused open changed the file (%v)", err)
			}
			return
		}
		defer l.Close()
		rebuilt := logFileHeader()
		err = l.Replay(0, func(zxid int64, rec []byte) error {
			rebuilt = appendRecord(rebuilt, zxid, rec)
			return nil
		})
		if err != nil {
			t.Fatalf("Replay after OpenLog: %v", err)
		}
		onDisk, err := os.ReadFile(p)
		if len(rebuilt) == logHeaderSize {
			if !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a file without a good record was kept (%v)", err)
			}
		} else {
			if !bytes.Equal(unmarked(onDisk), rebuilt) {
				t.Fatalf("file cut to %d bytes, want the %d good bytes", len(onDisk), len(rebuilt))
			}
			if !bytes.HasPrefix(data, onDisk) {
				t.Fatalf("kept records are not a prefix of the input")
			}
		}
		sides, _ := filepath.Glob(p + ".damaged-*")
		if len(sides) == 0 {
			return
		}
		side, _ := os.ReadFile(sides[0])
		if !bytes.Equal(append(onDisk, side...), data) && !bytes.HasSuffix(data, side) {
			t.Fatalf("kept %d bytes and side file %d bytes do not make the %d input bytes", len(onDisk), len(side), len(data))
		}
	})
}

// unmarked is a log with the write marks cleared and the header of this
// version, to compare with records rebuilt by appendRecord.
func unmarked(b []byte) []byte {
	out := bytes.Clone(b)
	copy(out, logFileHeader())
	for off := logHeaderSize; off+recordHeaderSize <= len(out); {
		n := binary.LittleEndian.Uint32(out[off+4:])
		if n&writeStart != 0 {
			n &^= writeStart
			binary.LittleEndian.PutUint32(out[off+4:], n)
			binary.LittleEndian.PutUint32(out[off:], recordCRC(out[off+4:off+recordHeaderSize], out[off+recordHeaderSize:off+recordHeaderSize+int(n)]))
		}
		off += recordHeaderSize + int(n)
	}
	return out
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
