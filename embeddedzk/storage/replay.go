package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// scan is how far a log file reads well.
type scan struct {
	end  int64 // offset just after the last good record (0: not even the header)
	last int64 // zxid of the last good record, 0 if none
	size int64 // file size
}

// scanLog reads one log file in order, checking framing, checksums and that
// zxids increase and lie in [ref.zxid, next) (next 0: no later file). It
// calls fn, if not nil, for each record above afterZxid. Damage stops the
// scan with an error wrapping ErrCorrupt; the returned scan says how far the
// file was good.
func scanLog(dir string, ref fileRef, next, afterZxid int64, fn func(int64, []byte) error) (scan, error) {
	f, err := os.Open(filepath.Join(dir, ref.name))
	if err != nil {
		return scan{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return scan{}, err
	}
	s := scan{size: st.Size()}
	rr, err := newRecordReader(f, s.size)
	if err != nil {
		return s, err
	}
	s.end = rr.off
	for {
		off := rr.off
		zxid, rec, err := rr.next()
		switch {
		case errors.Is(err, io.EOF):
			return s, nil
		case err != nil:
			return s, err
		case zxid < ref.zxid:
			return s, corrupt(off, "zxid %#x below the file's first zxid %#x", zxid, ref.zxid)
		case zxid <= s.last:
			return s, corrupt(off, "zxid %#x not above the previous %#x", zxid, s.last)
		case next > 0 && zxid >= next:
			return s, corrupt(off, "zxid %#x not below the next file's first zxid %#x", zxid, next)
		}
		if fn != nil && zxid > afterZxid {
			if err := fn(zxid, rec); err != nil {
				return s, fmt.Errorf("replay zxid %#x: %w", zxid, err)
			}
		}
		s.end, s.last = rr.off, zxid
	}
}

// Replay calls fn for every record with zxid > afterZxid, in zxid order,
// across all log files; fn owns rec. Files that hold only older zxids are
// not read. A damaged record here is an error naming file and offset: the
// torn tail of the newest file was already cut by OpenLog, so damage that
// Replay finds has good data after it. Call Replay once, before Append.
func (l *Log) Replay(afterZxid int64, fn func(zxid int64, rec []byte) error) error {
	l.mu.Lock()
	appended := l.appended
	l.mu.Unlock()
	if appended {
		return errors.New("storage: Replay called after Append; replay before writing")
	}
	for i, ref := range l.files {
		var next int64
		if i+1 < len(l.files) {
			next = l.files[i+1].zxid
			// Every zxid in this file is below next.
			if next-1 <= afterZxid {
				continue
			}
		}
		if _, err := scanLog(l.dir, ref, next, afterZxid, fn); err != nil {
			return fmt.Errorf("storage: replay %s: %w", filepath.Join(l.dir, ref.name), err)
		}
	}
	return nil
}

// recoverTail finds the newest log file with a good record and cuts any
// damage after that record: a crash can leave a partial last batch, or a
// new file with no complete record. It returns the remaining files, the
// open tail file (nil if there is none) and the last zxid.
func recoverTail(dir string, files []fileRef, opts LogOptions) ([]fileRef, *os.File, int64, error) {
	for len(files) > 0 {
		ref := files[len(files)-1]
		p := filepath.Join(dir, ref.name)
		s, err := scanLog(dir, ref, 0, 0, nil)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			return nil, nil, 0, fmt.Errorf("storage: open %s: %w", p, err)
		}
		if err != nil {
			opts.Logger.Warn("storage: cutting torn tail of transaction log",
				"file", p, "offset", s.end, "dropped_bytes", s.size-s.end, "reason", err)
		}
		if s.last == 0 {
			// Nothing good in it: a file created just before a crash.
			if err == nil {
				opts.Logger.Warn("storage: removing transaction log file with no records", "file", p)
			}
			if err := os.Remove(p); err != nil {
				return nil, nil, 0, fmt.Errorf("storage: remove empty log file: %w", err)
			}
			if err := syncDir(dir); err != nil {
				return nil, nil, 0, err
			}
			files = files[:len(files)-1]
			continue
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("storage: open log for append: %w", err)
		}
		if s.end < s.size {
			// Cut durably before anything new is appended after the cut.
			if err := f.Truncate(s.end); err == nil {
				err = f.Sync()
			}
			if err != nil {
				f.Close()
				return nil, nil, 0, fmt.Errorf("storage: cut torn tail of %s: %w", p, err)
			}
		}
		return files, f, s.last, nil
	}
	return files, nil, 0, nil
}
