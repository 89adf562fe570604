// Package storage keeps the registry's state on disk: an append-only transaction log with group commit, and snapshots.
//
// A data directory holds three kinds of file:
//
//   - log.<zxid>: transaction log files, named by the first zxid they hold
//     (16 hex digits). [Log] appends to the newest one; [Log.Roll] starts a
//     new one after a snapshot so that older files can be purged.
//   - snapshot.<zxid>: one serialized data tree per file, written by
//     [WriteSnapshot] and read back by [LatestSnapshot].
//   - LOCK: held by the open [Log] so two servers never write one directory.
//   - *.damaged-<offset>, *.damaged: what [LogOptions.RecoverTruncate] moved
//     out of a damaged log; never read again.
//
// Start-up is: [LatestSnapshot] (zxid S, or none), [OpenLog], [Log.Replay]
// from S, then [Log.Append] and [Log.WaitDurable] for every write. After a
// snapshot the server calls [Log.Roll] and [Purge]. A crash can only tear
// the last write, which OpenLog cuts; any other damage is a [CorruptError].
//
// zxids are positive and strictly increasing; zxid 0 means "nothing logged".
package storage

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// MaxRecordSize is the largest log record payload. A larger length read
// from disk is treated as corruption instead of being allocated.
const MaxRecordSize = 16 << 20

// ErrCorrupt marks damaged log data: a bad checksum, a torn record, a length
// above MaxRecordSize or zxids out of order.
var ErrCorrupt = errors.New("corrupt log record")

// ErrClosed is returned by a Log after Close, and by WaitDurable for a zxid
// that can no longer become durable because the log was closed.
var ErrClosed = errors.New("storage: log closed")

const (
	logPrefix     = "log."
	snapPrefix    = "snapshot."
	snapTmpPrefix = "tmp-snapshot-"
	lockName      = "LOCK"
)

// fileRef is a log or snapshot file and the zxid its name carries.
type fileRef struct {
	name string
	zxid int64
}

func fileName(prefix string, zxid int64) string {
	return fmt.Sprintf("%s%016x", prefix, zxid)
}

// parseName returns the zxid of a file named prefix + hex digits.
func parseName(name, prefix string) (int64, bool) {
	hex, ok := strings.CutPrefix(name, prefix)
	if !ok || hex == "" || len(hex) > 16 {
		return 0, false
	}
	// ParseUint rejects signs; bit size 63 keeps the value a valid int64.
	z, err := strconv.ParseUint(hex, 16, 63)
	if err != nil {
		return 0, false
	}
	return int64(z), true
}

// listFiles returns the files in dir named prefix.<hex zxid>, oldest first.
func listFiles(dir, prefix string) ([]fileRef, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: list %s: %w", dir, err)
	}
	var refs []fileRef
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if z, ok := parseName(e.Name(), prefix); ok {
			refs = append(refs, fileRef{name: e.Name(), zxid: z})
		}
	}
	slices.SortFunc(refs, func(a, b fileRef) int {
		if a.zxid != b.zxid {
			return cmp.Compare(a.zxid, b.zxid)
		}
		return strings.Compare(a.name, b.name)
	})
	return refs, nil
}

// syncDir makes renames, creations and removals in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("storage: sync dir %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("storage: sync dir %s: %w", dir, err)
	}
	return nil
}
