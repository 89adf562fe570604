package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// scan is how far a log file reads well.
type scan struct {
	end     int64 // offset just after the last good record (0: not even the header)
	last    int64 // zxid of the last good record, 0 if none
	size    int64 // file size
	version uint32
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
	s.end, s.version = rr.off, rr.version
	for {
		off := rr.off
		r, err := rr.next()
		switch {
		case errors.Is(err, io.EOF):
			return s, nil
		case err != nil:
			return s, err
		case r.zxid < ref.zxid:
			return s, corrupt(off, "zxid %#x below the file's first zxid %#x", r.zxid, ref.zxid)
		case r.zxid <= s.last:
			return s, corrupt(off, "zxid %#x not above the previous %#x", r.zxid, s.last)
		case next > 0 && r.zxid >= next:
			return s, corrupt(off, "zxid %#x not below the next file's first zxid %#x", r.zxid, next)
		}
		if fn != nil && r.zxid > afterZxid {
			if err := fn(r.zxid, r.data); err != nil {
				return s, fmt.Errorf("replay zxid %#x: %w", r.zxid, err)
			}
		}
		s.end, s.last = rr.off, r.zxid
	}
}

// Replay calls fn for every record with zxid > afterZxid, in zxid order,
// across all log files; fn owns rec. Files that hold only older zxids are
// not read. OpenLog already dealt with the newest file, so damage found here
// has a later file after it: a *CorruptError, or with RecoverTruncate the
// damaged part and every later file move to side files and the log goes on
// from the last good record before the damage. Call Replay once, before
// Append.
func (l *Log) Replay(afterZxid int64, fn func(zxid int64, rec []byte) error) error {
	l.mu.Lock()
	appended := l.appended
	l.mu.Unlock()
	if appended {
		return errors.New("storage: Replay called after Append; replay before writing")
	}
	var prevLast int64 // last zxid of the files before ref
	for i, ref := range l.files {
		var next int64
		if i+1 < len(l.files) {
			next = l.files[i+1].zxid
			// Every zxid in this file is below next.
			if next-1 <= afterZxid {
				continue
			}
		}
		p := filepath.Join(l.dir, ref.name)
		s, err := scanLog(l.dir, ref, next, afterZxid, fn)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			return fmt.Errorf("storage: replay %s: %w", p, err)
		}
		if err != nil {
			return l.damagedBeforeEnd(i, s, err, prevLast)
		}
		prevLast = s.last
	}
	return nil
}

// damagedBeforeEnd handles damage at s.end in l.files[i], a file with later
// files after it; prevLast is the last zxid before that file.
func (l *Log) damagedBeforeEnd(i int, s scan, cause error, prevLast int64) error {
	ref := l.files[i]
	p := filepath.Join(l.dir, ref.name)
	later := make([]string, 0, len(l.files)-i-1)
	for _, r := range l.files[i+1:] {
		later = append(later, r.name)
	}
	cerr, err := describeDamage(p, s, cause, later)
	if err != nil {
		return err
	}
	if !l.opts.RecoverTruncate {
		return cerr
	}
	// The newest file was opened for appending; nothing is written yet.
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file != nil {
		l.file.Close()
		l.file, l.fileName = nil, ""
	}
	if err := l.setAside(p, s, cerr); err != nil {
		return err
	}
	l.files = l.files[:i+1]
	last := s.last
	if last == 0 {
		last = prevLast
		l.files = l.files[:i]
	}
	// Appends go to a new file, named by the next zxid.
	l.last = last
	l.durable.Store(last)
	return nil
}

// describeDamage builds the CorruptError for damage at s.end in p.
func describeDamage(p string, s scan, cause error, later []string) (*CorruptError, error) {
	d, err := examineDamage(p, s.end, s.size, s.last)
	if err != nil {
		return nil, fmt.Errorf("storage: examine damage in %s: %w", p, err)
	}
	reason := cause.Error()
	if _, r, ok := strings.Cut(reason, fmt.Sprintf("at offset %d: ", s.end)); ok {
		reason = r
	}
	return &CorruptError{File: p, Offset: s.end, Reason: reason, Intact: d.intact, LastIntact: d.lastIntact,
		LaterFiles: later, laterWrite: d.laterWrite}, nil
}

// setAside moves the damage described by cerr out of the log (RecoverTruncate)
// and removes the file if nothing good is left in it.
func (l *Log) setAside(p string, s scan, cerr *CorruptError) error {
	side, err := moveAside(l.dir, p, s.end, cerr.LaterFiles)
	if err != nil {
		return err
	}
	l.opts.Logger.Error("storage: transaction log damaged; moved the damaged part aside (recover-truncate)",
		"file", p, "offset", s.end, "reason", cerr.Reason, "moved_bytes", s.size-s.end,
		"intact_records_moved", cerr.Intact, "later_files_moved", len(cerr.LaterFiles),
		"side_files", strings.Join(side, ","), "last_zxid_kept", fmt.Sprintf("%#x", s.last))
	if s.last == 0 {
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("storage: remove emptied log file: %w", err)
		}
		return syncDir(l.dir)
	}
	return nil
}

// recoverTail finds the newest log file with a good record and deals with
// damage after that record. A torn write from a crash (damage with no
// intact start of a later write after it) is cut; any other damage is a
// *CorruptError, or moved aside with RecoverTruncate. A newest file without
// a good record (created just before a crash) is removed; the file before it
// was synced before that file was made, so damage in it is never a torn
// write. It returns the remaining files, the open tail file (nil if there
// is none, or if it is an old version 1 file, which takes no new records)
// and the last zxid.
func recoverTail(dir string, files []fileRef, opts LogOptions) ([]fileRef, *os.File, int64, error) {
	afterRemoved := false
	for len(files) > 0 {
		ref := files[len(files)-1]
		p := filepath.Join(dir, ref.name)
		s, err := scanLog(dir, ref, 0, 0, nil)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			return nil, nil, 0, fmt.Errorf("storage: open %s: %w", p, err)
		}
		if err != nil {
			cerr, derr := describeDamage(p, s, err, nil)
			if derr != nil {
				return nil, nil, 0, derr
			}
			// Version 1 has no write marks: any intact record after the
			// damage may be a later write.
			torn := !afterRemoved && !cerr.laterWrite && (s.version != 1 || cerr.Intact == 0)
			switch {
			case torn:
				opts.Logger.Warn("storage: cutting torn tail of transaction log (the last write before a crash)",
					"file", p, "offset", s.end, "dropped_bytes", s.size-s.end, "reason", cerr.Reason,
					"records_of_that_write_dropped", cerr.Intact)
			case !opts.RecoverTruncate:
				return nil, nil, 0, cerr
			default:
				l := &Log{dir: dir, opts: opts}
				if err := l.setAside(p, s, cerr); err != nil {
					return nil, nil, 0, err
				}
				if s.last == 0 {
					files = files[:len(files)-1]
					afterRemoved = true
					continue
				}
				s.size = s.end
			}
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
			afterRemoved = true
			continue
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("storage: open log for append: %w", err)
		}
		if s.end < s.size {
			// Cut durably before anything new is appended after the cut.
			err := f.Truncate(s.end)
			if err == nil {
				err = f.Sync()
			}
			if err != nil {
				f.Close()
				return nil, nil, 0, fmt.Errorf("storage: cut torn tail of %s at offset %d: %w", p, s.end, err)
			}
		}
		if s.version == 1 {
			// Its records have no write marks; new ones go to a new file.
			if err := f.Close(); err != nil {
				return nil, nil, 0, fmt.Errorf("storage: close %s: %w", p, err)
			}
			return files, nil, s.last, nil
		}
		return files, f, s.last, nil
	}
	return files, nil, 0, nil
}
