package storage

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
)

// A snapshot file is
//
//	header:  magic "dzks" | version uint32 | zxid int64
//	payload: whatever the write callback wrote
//	trailer: payload length uint64 | crc32c uint32 of everything before it
//
// Integers are little endian.
const (
	snapMagic       = "dzks"
	snapVersion     = 1
	snapHeaderSize  = 16
	snapTrailerSize = 12
)

// errDamaged marks a snapshot that fails verification, as opposed to one
// that could not be read.
var errDamaged = errors.New("damaged snapshot")

// crcWriter checksums and counts what passes through it.
type crcWriter struct {
	w   io.Writer
	crc uint32
	n   int64
}

func (c *crcWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	c.n += int64(n)
	return n, err
}

// WriteSnapshot writes the state at zxid as dir/snapshot.<zxid>. The file
// appears complete or not at all: it is written to a temporary file,
// checksummed, fsynced and renamed, and the rename is fsynced.
func WriteSnapshot(dir string, zxid int64, write func(w io.Writer) error) (err error) {
	if zxid < 0 {
		return fmt.Errorf("storage: write snapshot: zxid %d is negative", zxid)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("storage: write snapshot %#x: %w", zxid, err)
	}
	f, err := os.CreateTemp(dir, snapTmpPrefix+"*")
	if err != nil {
		return fmt.Errorf("storage: write snapshot %#x: %w", zxid, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 256<<10)
	cw := &crcWriter{w: bw}
	var h [snapHeaderSize]byte
	copy(h[:], snapMagic)
	binary.LittleEndian.PutUint32(h[4:], snapVersion)
	binary.LittleEndian.PutUint64(h[8:], uint64(zxid))
	if _, err := cw.Write(h[:]); err != nil {
		return fmt.Errorf("storage: write snapshot %#x: %w", zxid, err)
	}
	if err := write(cw); err != nil {
		return fmt.Errorf("storage: write snapshot %#x: %w", zxid, err)
	}
	// bufio.Writer keeps its first error; Flush below reports it.
	var t [snapTrailerSize]byte
	binary.LittleEndian.PutUint64(t[:8], uint64(cw.n-snapHeaderSize))
	cw.Write(t[:8])
	binary.LittleEndian.PutUint32(t[8:], cw.crc)
	bw.Write(t[8:])
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("storage: write snapshot %#x: %w", zxid, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("storage: fsync snapshot %#x: %w", zxid, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("storage: close snapshot %#x: %w", zxid, err)
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, fileName(snapPrefix, zxid))); err != nil {
		return fmt.Errorf("storage: write snapshot %#x: %w", zxid, err)
	}
	return syncDir(dir)
}

// LatestSnapshot returns the zxid and payload of the newest snapshot in dir
// that verifies. A damaged newer one is skipped with a warning. With no
// valid snapshot the error wraps fs.ErrNotExist. The caller closes r.
func LatestSnapshot(dir string) (zxid int64, r io.ReadCloser, err error) {
	snaps, err := listFiles(dir, snapPrefix)
	if err != nil {
		return 0, nil, err
	}
	for _, ref := range slices.Backward(snaps) {
		rc, err := openSnapshot(dir, ref)
		if errors.Is(err, errDamaged) {
			slog.Warn("storage: skipping damaged snapshot", "file", filepath.Join(dir, ref.name), "reason", err)
			continue
		}
		if err != nil {
			return 0, nil, err
		}
		return ref.zxid, rc, nil
	}
	return 0, nil, fmt.Errorf("storage: no valid snapshot in %s: %w", dir, fs.ErrNotExist)
}

type snapshotReader struct {
	*io.SectionReader
	f *os.File
}

func (s snapshotReader) Close() error { return s.f.Close() }

// openSnapshot verifies a snapshot file and returns a reader of its payload.
// Verification failures wrap errDamaged.
func openSnapshot(dir string, ref fileRef) (io.ReadCloser, error) {
	p := filepath.Join(dir, ref.name)
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("storage: open snapshot: %w", err)
	}
	payload, err := verifySnapshot(f, ref.zxid)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("storage: snapshot %s: %w", p, err)
	}
	return snapshotReader{SectionReader: io.NewSectionReader(f, snapHeaderSize, payload), f: f}, nil
}

// verifySnapshot checks header, length and checksum and returns the payload
// length.
func verifySnapshot(f *os.File, zxid int64) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	if size < snapHeaderSize+snapTrailerSize {
		return 0, fmt.Errorf("%w: %d bytes is too short", errDamaged, size)
	}
	var h [snapHeaderSize]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		return 0, err
	}
	switch {
	case string(h[:4]) != snapMagic:
		return 0, fmt.Errorf("%w: bad magic %q", errDamaged, h[:4])
	case binary.LittleEndian.Uint32(h[4:]) != snapVersion:
		return 0, fmt.Errorf("%w: unsupported version %d", errDamaged, binary.LittleEndian.Uint32(h[4:]))
	case int64(binary.LittleEndian.Uint64(h[8:])) != zxid:
		return 0, fmt.Errorf("%w: header zxid %#x does not match the name", errDamaged, binary.LittleEndian.Uint64(h[8:]))
	}
	var t [snapTrailerSize]byte
	if _, err := f.ReadAt(t[:], size-snapTrailerSize); err != nil {
		return 0, err
	}
	payload := size - snapHeaderSize - snapTrailerSize
	if n := binary.LittleEndian.Uint64(t[:8]); n != uint64(payload) {
		return 0, fmt.Errorf("%w: trailer says %d payload bytes, file has %d", errDamaged, n, payload)
	}
	crc := crc32.New(castagnoli)
	if _, err := io.Copy(crc, io.NewSectionReader(f, 0, size-4)); err != nil {
		return 0, err
	}
	if crc.Sum32() != binary.LittleEndian.Uint32(t[8:]) {
		return 0, fmt.Errorf("%w: checksum mismatch", errDamaged)
	}
	return payload, nil
}
