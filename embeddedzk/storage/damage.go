package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A crash tears at most the last write the flusher made: with fsync on, a
// write starts only after the one before it is on disk, and a killed
// process leaves a prefix of its last write. Damage whose intact successors
// include the start of another write (a writeStart record) therefore cannot
// come from a crash: cutting it would drop acknowledged records. Apache
// ZooKeeper refuses to start on such a log (its FileTxnIterator throws "CRC
// check failed" wherever it reads one); so do we, unless the operator asks
// for LogOptions.RecoverTruncate.

// CorruptError is damage in the transaction log that a crash cannot
// explain. It wraps ErrCorrupt.
type CorruptError struct {
	File   string // the damaged log file
	Offset int64  // where its first damaged record starts
	Reason string // what is wrong there
	// Intact records found after the damage in File, and the last of their
	// zxids (0 if none).
	Intact     int
	LastIntact int64
	// LaterFiles are the log files after File.
	LaterFiles []string

	laterWrite bool // an intact record after the damage starts a write
}

func (e *CorruptError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "storage: transaction log %s is damaged at offset %d (%s)", e.File, e.Offset, e.Reason)
	if e.Intact > 0 {
		fmt.Fprintf(&b, "; %d intact records follow it (up to zxid %#x)", e.Intact, e.LastIntact)
	}
	if len(e.LaterFiles) > 0 {
		fmt.Fprintf(&b, "; %d later log files follow it", len(e.LaterFiles))
	}
	b.WriteString(": this is not a torn write from a crash, and cutting it would lose acknowledged writes")
	return b.String()
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// damage is what lies after the first damaged record of a file.
type damage struct {
	intact     int   // records that verify after the damage
	lastIntact int64 // zxid of the last of them
	laterWrite bool  // one of them starts a write (writeStart)
}

// maxZxidGap bounds how far above the last good zxid an intact record found
// after damage may be. The server's zxids are consecutive; the bound only
// keeps random bytes from passing as a record header.
const maxZxidGap = 1 << 32

// examineDamage looks for intact records in p after the damage at off: at
// every byte offset, a header whose length fits, whose zxid lies in
// (last, last+maxZxidGap) and whose checksum verifies. Found records are
// skipped whole, so a long intact run costs one pass.
func examineDamage(p string, off, size, last int64) (damage, error) {
	f, err := os.Open(p)
	if err != nil {
		return damage{}, err
	}
	defer f.Close()
	const chunk = 1 << 20
	var (
		d       damage
		buf     []byte
		bufOff  int64 // file offset of buf[0]
		payload []byte
	)
	// window returns the file bytes [at, at+n), reading chunks as needed.
	window := func(at int64, n int) ([]byte, error) {
		if at >= bufOff && at+int64(n) <= bufOff+int64(len(buf)) {
			return buf[at-bufOff : at-bufOff+int64(n)], nil
		}
		if n > chunk/2 {
			if cap(payload) < n {
				payload = make([]byte, n)
			}
			payload = payload[:n]
			_, err := f.ReadAt(payload, at)
			return payload, err
		}
		want := min(int64(chunk), size-at)
		if cap(buf) < int(want) {
			buf = make([]byte, want)
		}
		buf = buf[:want]
		if _, err := f.ReadAt(buf, at); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		bufOff = at
		return buf[:n], nil
	}
	for at := off + 1; at+recordHeaderSize <= size; {
		h, err := window(at, recordHeaderSize)
		if err != nil {
			return d, err
		}
		length := binary.LittleEndian.Uint32(h[4:])
		n := int64(length &^ writeStart)
		zxid := int64(binary.LittleEndian.Uint64(h[8:]))
		if n > MaxRecordSize || at+recordHeaderSize+n > size || zxid <= last || zxid-last > maxZxidGap {
			at++
			continue
		}
		crc := binary.LittleEndian.Uint32(h[0:])
		var lengthAndZxid [12]byte
		copy(lengthAndZxid[:], h[4:])
		data, err := window(at+recordHeaderSize, int(n))
		if err != nil {
			return d, err
		}
		if recordCRC(lengthAndZxid[:], data) != crc {
			at++
			continue
		}
		d.intact++
		d.lastIntact = zxid
		d.laterWrite = d.laterWrite || length&writeStart != 0
		last = zxid
		at += recordHeaderSize + n
	}
	return d, nil
}

// moveAside keeps the damaged part of a log out of the way without losing
// it: bytes [off, end) of p are copied to p.damaged-<off> next to it, each
// later file is renamed to <name>.damaged, and p is cut at off. It returns
// the side files. The copy is durable before anything is cut.
func moveAside(dir, p string, off int64, later []string) ([]string, error) {
	var side []string
	src, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	dst, name, err := createUnique(fmt.Sprintf("%s.damaged-%d", p, off))
	if err != nil {
		return nil, err
	}
	side = append(side, name)
	_, err = io.Copy(dst, io.NewSectionReader(src, off, 1<<62))
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return side, fmt.Errorf("storage: copy damaged part of %s to %s: %w", p, name, err)
	}
	for _, l := range later {
		from := filepath.Join(dir, l)
		to, err := uniqueName(from + ".damaged")
		if err != nil {
			return side, err
		}
		if err := os.Rename(from, to); err != nil {
			return side, fmt.Errorf("storage: move %s aside: %w", from, err)
		}
		side = append(side, to)
	}
	if err := syncDir(dir); err != nil {
		return side, err
	}
	if err := os.Truncate(p, off); err != nil {
		return side, fmt.Errorf("storage: cut %s at the damage: %w", p, err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return side, err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return side, fmt.Errorf("storage: sync %s: %w", p, err)
	}
	return side, nil
}

// createUnique creates base, or base.1, base.2 ... if it exists: an earlier
// recovery's side file is evidence too.
func createUnique(base string) (*os.File, string, error) {
	for i := 0; i < 1000; i++ {
		name := base
		if i > 0 {
			name = fmt.Sprintf("%s.%d", base, i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("storage: create side file: %w", err)
		}
		return f, name, nil
	}
	return nil, "", fmt.Errorf("storage: create side file %s: too many exist", base)
}

// uniqueName is the first of base, base.1, base.2 ... that does not exist.
func uniqueName(base string) (string, error) {
	for i := 0; i < 1000; i++ {
		name := base
		if i > 0 {
			name = fmt.Sprintf("%s.%d", base, i)
		}
		if _, err := os.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			return name, nil
		}
	}
	return "", fmt.Errorf("storage: name a side file %s: too many exist", base)
}
