package storage

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// A log file is a file header followed by records:
//
//	file header: magic "dzkl" | version uint32
//	record:      crc32c uint32 | length uint32 | zxid int64 | payload
//
// Integers are little endian. The checksum covers length, zxid and payload,
// so a damaged length is caught as well as damaged data. In version 2 the
// top bit of length (writeStart) marks the first record of each write the
// flusher made: a crash can only tear the last write, so an intact
// writeStart record after damage proves the damage is not a torn tail.
// Version 1 files (no marks) are read; new records go to version 2 files.
const (
	logMagic          = "dzkl"
	logVersion        = 2
	logHeaderSize     = 8
	recordHeaderSize  = 16
	readBufferSize    = 256 << 10
	maxRetainedBuffer = 4 << 20

	writeStart uint32 = 1 << 31
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func logFileHeader() []byte {
	h := make([]byte, logHeaderSize)
	copy(h, logMagic)
	binary.LittleEndian.PutUint32(h[4:], logVersion)
	return h
}

// recordHeader frames rec; it runs outside the append lock.
func recordHeader(zxid int64, rec []byte) [recordHeaderSize]byte {
	var h [recordHeaderSize]byte
	binary.LittleEndian.PutUint32(h[4:], uint32(len(rec)))
	binary.LittleEndian.PutUint64(h[8:], uint64(zxid))
	binary.LittleEndian.PutUint32(h[0:], recordCRC(h[4:], rec))
	return h
}

// recordCRC is the checksum of a record: length and zxid, then payload.
func recordCRC(lengthAndZxid, payload []byte) uint32 {
	return crc32.Update(crc32.Update(0, castagnoli, lengthAndZxid), castagnoli, payload)
}

func appendRecord(dst []byte, zxid int64, rec []byte) []byte {
	h := recordHeader(zxid, rec)
	dst = append(dst, h[:]...)
	return append(dst, rec...)
}

// markWriteStart sets writeStart on the framed record at the start of seg
// and updates its checksum.
func markWriteStart(seg []byte) {
	n := binary.LittleEndian.Uint32(seg[4:])
	if n&writeStart != 0 {
		return
	}
	binary.LittleEndian.PutUint32(seg[4:], n|writeStart)
	binary.LittleEndian.PutUint32(seg[0:], recordCRC(seg[4:recordHeaderSize], seg[recordHeaderSize:recordHeaderSize+int(n)]))
}

// corrupt describes damage at a file offset; it wraps ErrCorrupt.
func corrupt(off int64, format string, args ...any) error {
	return fmt.Errorf("%w at offset %d: %s", ErrCorrupt, off, fmt.Sprintf(format, args...))
}

// recordReader decodes the records of one log file. Knowing the file size
// lets it reject a torn record before allocating its payload.
type recordReader struct {
	r       *bufio.Reader
	off     int64 // offset of the next record
	size    int64
	version uint32
}

// record is one decoded record.
type record struct {
	zxid  int64
	data  []byte
	first bool // the first record of a write (writeStart)
}

// newRecordReader checks the file header. A file too short for its header,
// or whose header is all zeros, is a torn creation (ErrCorrupt at offset 0);
// a foreign or newer file is a plain error so that it is never cut.
func newRecordReader(r io.Reader, size int64) (*recordReader, error) {
	rr := &recordReader{r: bufio.NewReaderSize(r, readBufferSize), size: size}
	if size < logHeaderSize {
		return nil, corrupt(0, "torn file header (%d bytes)", size)
	}
	h := make([]byte, logHeaderSize)
	if _, err := io.ReadFull(rr.r, h); err != nil {
		return nil, fmt.Errorf("read file header: %w", err)
	}
	if bytes.Equal(h, make([]byte, logHeaderSize)) {
		return nil, corrupt(0, "file header is zeros")
	}
	if string(h[:4]) != logMagic {
		return nil, fmt.Errorf("not a transaction log file (magic %q)", h[:4])
	}
	rr.version = binary.LittleEndian.Uint32(h[4:])
	if rr.version < 1 || rr.version > logVersion {
		return nil, fmt.Errorf("unsupported transaction log version %d (this build reads 1 to %d)", rr.version, logVersion)
	}
	rr.off = logHeaderSize
	return rr, nil
}

// next returns the next record, io.EOF at a clean end of file, an error
// wrapping ErrCorrupt for a damaged record (rr.off stays at its start), or a
// read error.
func (rr *recordReader) next() (record, error) {
	left := rr.size - rr.off
	if left == 0 {
		return record{}, io.EOF
	}
	if left < recordHeaderSize {
		return record{}, corrupt(rr.off, "torn record header (%d bytes left)", left)
	}
	var h [recordHeaderSize]byte
	if _, err := io.ReadFull(rr.r, h[:]); err != nil {
		return record{}, rr.readErr(err)
	}
	length := binary.LittleEndian.Uint32(h[4:])
	n := length &^ writeStart
	if n > MaxRecordSize {
		return record{}, corrupt(rr.off, "record length %d above the %d-byte limit", n, MaxRecordSize)
	}
	if int64(n) > left-recordHeaderSize {
		return record{}, corrupt(rr.off, "torn record (%d payload bytes, %d left)", n, left-recordHeaderSize)
	}
	rec := make([]byte, n)
	if _, err := io.ReadFull(rr.r, rec); err != nil {
		return record{}, rr.readErr(err)
	}
	if recordCRC(h[4:], rec) != binary.LittleEndian.Uint32(h[0:]) {
		return record{}, corrupt(rr.off, "checksum mismatch")
	}
	zxid := int64(binary.LittleEndian.Uint64(h[8:]))
	if zxid <= 0 {
		return record{}, corrupt(rr.off, "zxid %d is not positive", zxid)
	}
	rr.off += recordHeaderSize + int64(n)
	return record{zxid: zxid, data: rec, first: length&writeStart != 0}, nil
}

// readErr maps a file that shrank under us to corruption; anything else is
// an I/O error.
func (rr *recordReader) readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return corrupt(rr.off, "file ended early")
	}
	return fmt.Errorf("read at offset %d: %w", rr.off, err)
}
