package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// LogOptions configures a Log.
type LogOptions struct {
	// Fsync makes WaitDurable wait for fsync, not only for the write to the
	// page cache. Default false; the registry turns it on (fsync = true).
	Fsync bool
	// Logger receives warnings about cut tails. Default slog.Default().
	Logger *slog.Logger
	// RecoverTruncate starts on a log damaged before its last write instead
	// of failing with a *CorruptError: the damaged part and every later log
	// file move to side files (*.damaged-<offset>, *.damaged) next to the
	// log, and the log goes on from the last good record before the damage.
	// Default false.
	RecoverTruncate bool
}

// Log is the append-only transaction log. Append only copies a record into
// memory; one flusher goroutine writes everything buffered with one write
// call and one fsync, then wakes every waiter at once (group commit).
// Append, Roll, WaitDurable, DurableZxid and Health are safe for concurrent
// use.
//
// A write that fails (a full disk) is undone, so the file holds no partial
// write, and its records are kept and written again, first after 50 ms,
// then at most every second, until it succeeds. Meanwhile Health reports
// the error and WaitDurable returns it for what is not yet durable; Append
// still accepts records, which go out in order once writes succeed. Only
// a failure to undo a failed write stops the log for good.
type Log struct {
	dir   string
	opts  LogOptions
	lock  io.Closer
	files []fileRef // log files at open, for Replay

	durable atomic.Int64 // highest zxid written (and fsynced when Fsync)

	mu       sync.Mutex
	wake     *sync.Cond    // tells the flusher there is work or closing
	buf      []byte        // framed records waiting for the flusher
	spare    []byte        // the flusher's last buffer, reused
	rolls    []int         // offsets in buf where Roll asked for a new file
	last     int64         // highest appended zxid
	flushed  chan struct{} // closed after each flush, then replaced
	err      error         // a write error that could not be undone; fail-stop
	failing  error         // the last write error, until a retry succeeds
	closing  bool
	stopped  bool // the flusher has exited
	appended bool
	flushes  int // completed flushes, for benchmarks

	unhealthy atomic.Bool   // err or failing is set; Health's fast path
	closeReq  chan struct{} // closed by Close: ends the wait between retries

	// Owned by the flusher goroutine.
	file     *os.File
	fileName string
	fileSize int64 // bytes of file written and not undone
	closeErr error

	done      chan struct{} // closed when the flusher exits
	closeOnce sync.Once
	closeRes  error
}

// OpenLog opens the transaction log in dir, creating dir if needed. It
// cuts a torn tail (what a crash leaves of the last write) from the newest
// file, logging what it dropped, and appends to that file; the first file
// is created on the first Append and named by its zxid. Other damage in the
// newest file is a *CorruptError unless opts.RecoverTruncate. It also
// removes temporary files of snapshots interrupted by a crash; a directory
// is used by one open Log at a time.
func OpenLog(dir string, opts LogOptions) (*Log, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("storage: create data dir: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	l, err := openLocked(dir, opts)
	if err != nil {
		lock.Close()
		return nil, err
	}
	l.lock = lock
	go l.flush()
	return l, nil
}

func openLocked(dir string, opts LogOptions) (*Log, error) {
	if err := removeSnapshotTemps(dir, opts.Logger); err != nil {
		return nil, err
	}
	files, err := listFiles(dir, logPrefix)
	if err != nil {
		return nil, err
	}
	files, f, last, err := recoverTail(dir, files, opts)
	if err != nil {
		return nil, err
	}
	l := &Log{
		dir:      dir,
		opts:     opts,
		files:    files,
		last:     last,
		flushed:  make(chan struct{}),
		done:     make(chan struct{}),
		closeReq: make(chan struct{}),
		file:     f,
	}
	if f != nil {
		l.fileName = f.Name()
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("storage: %w", err)
		}
		l.fileSize = st.Size()
	}
	l.wake = sync.NewCond(&l.mu)
	l.durable.Store(last)
	return l, nil
}

// removeSnapshotTemps deletes what a crash left of WriteSnapshot. Holding
// the directory lock before any snapshot is written makes this safe.
func removeSnapshotTemps(dir string, logger *slog.Logger) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("storage: list %s: %w", dir, err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), snapTmpPrefix) {
			p := filepath.Join(dir, e.Name())
			logger.Info("storage: removing unfinished snapshot", "file", p)
			if err := os.Remove(p); err != nil {
				return fmt.Errorf("storage: remove unfinished snapshot: %w", err)
			}
		}
	}
	return nil
}

// Append buffers one record; rec is copied. zxid must be above every zxid
// appended or replayed before. The record is not durable until
// WaitDurable(zxid) returns.
func (l *Log) Append(zxid int64, rec []byte) error {
	if len(rec) > MaxRecordSize {
		return fmt.Errorf("storage: append zxid %#x: record of %d bytes is above the %d-byte limit", zxid, len(rec), MaxRecordSize)
	}
	h := recordHeader(zxid, rec)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.err != nil:
		return l.err
	case l.closing:
		return ErrClosed
	case zxid <= l.last:
		return fmt.Errorf("storage: append zxid %#x: not above the last zxid %#x", zxid, l.last)
	}
	l.buf = append(l.buf, h[:]...)
	l.buf = append(l.buf, rec...)
	l.last = zxid
	l.appended = true
	l.wake.Signal()
	return nil
}

// WaitDurable blocks until every record up to zxid is written (and fsynced
// when Fsync), ctx is done, writes fail (the write error, at once: callers
// should not hold clients while the disk is full), or the log was closed
// before zxid could be written (ErrClosed).
func (l *Log) WaitDurable(ctx context.Context, zxid int64) error {
	for {
		if l.durable.Load() >= zxid {
			return nil
		}
		l.mu.Lock()
		switch {
		case l.durable.Load() >= zxid:
			l.mu.Unlock()
			return nil
		case l.err != nil:
			err := l.err
			l.mu.Unlock()
			return err
		case l.failing != nil:
			err := l.failing
			l.mu.Unlock()
			return err
		case l.stopped, l.closing && zxid > l.last:
			l.mu.Unlock()
			return ErrClosed
		}
		ch := l.flushed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("storage: wait for zxid %#x: %w", zxid, ctx.Err())
		}
	}
}

// DurableZxid is the highest zxid that is durable; after OpenLog it is the
// last zxid on disk.
func (l *Log) DurableZxid() int64 { return l.durable.Load() }

// Health is nil while the log can be written, else the error of the last
// write: one being retried (a full disk), or one that stopped the log.
func (l *Log) Health() error {
	if !l.unhealthy.Load() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	return l.failing
}

// Roll makes the next Append start a new log file, so that the files
// before it can be purged once a snapshot covers them.
func (l *Log) Roll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.err != nil:
		return l.err
	case l.closing:
		return ErrClosed
	}
	l.rolls = append(l.rolls, len(l.buf))
	l.wake.Signal()
	return nil
}

// Close writes and syncs what was appended, stops the flusher and releases
// the directory. Waiters for zxids that were never appended get ErrClosed.
// It returns the log's write error, if any; calling it again returns the
// same result.
func (l *Log) Close() error {
	l.mu.Lock()
	if !l.closing {
		l.closing = true
		close(l.closeReq)
	}
	l.wake.Signal()
	l.mu.Unlock()
	<-l.done
	l.closeOnce.Do(func() {
		l.closeRes = errors.Join(l.err, l.closeErr, l.lock.Close())
	})
	return l.closeRes
}

// errBroken marks a write error that could not be undone: the file may hold
// part of a write, so nothing more may be appended to it.
var errBroken = errors.New("storage: the transaction log could not be repaired after a failed write; restart to cut the partial write")

// Retry delays after a failed write.
const (
	firstRetry = 50 * time.Millisecond
	maxRetry   = time.Second
)

// flush is the flusher goroutine: it takes everything buffered, writes it,
// and wakes all waiters, until Close or an error it cannot undo. A failed
// write is retried with the records it held.
func (l *Log) flush() {
	defer close(l.done)
	retry := firstRetry
	for {
		l.mu.Lock()
		for len(l.buf) == 0 && len(l.rolls) == 0 && !l.closing {
			l.wake.Wait()
		}
		batch, rolls, last, closing := l.buf, l.rolls, l.last, l.closing
		l.buf, l.spare, l.rolls = l.spare[:0], nil, nil
		l.mu.Unlock()

		n, err := l.write(batch, rolls)

		l.mu.Lock()
		switch {
		case err == nil:
			l.durable.Store(last)
			if l.failing != nil {
				l.opts.Logger.Info("storage: transaction log writable again", "file", l.fileName, "after", l.failing)
				l.failing = nil
				l.unhealthy.Store(false)
			}
			retry = firstRetry
		case errors.Is(err, errBroken), closing:
			l.err = err
			l.unhealthy.Store(true)
		default:
			if l.failing == nil {
				l.opts.Logger.Error("storage: cannot write the transaction log; keeping the records and retrying", "err", err)
			}
			l.failing = err
			l.unhealthy.Store(true)
			l.requeue(batch[n:], rolls, n)
		}
		if cap(batch) <= maxRetainedBuffer {
			l.spare = batch[:0]
		}
		// Append and Roll refuse work once closing, so nothing is left.
		stop := l.err != nil || closing
		l.stopped = stop
		l.flushes++
		close(l.flushed)
		l.flushed = make(chan struct{})
		l.mu.Unlock()
		if stop {
			l.closeErr = l.endFile()
			return
		}
		if err != nil {
			select {
			case <-time.After(retry):
			case <-l.closeReq: // one last attempt, then Close reports the error
			}
			retry = min(2*retry, maxRetry)
		}
	}
}

// requeue puts the unwritten rest of a batch back before what was appended
// since; the caller holds l.mu. rolls are the batch's roll offsets, written
// the batch's first bytes.
func (l *Log) requeue(rest []byte, rolls []int, written int) {
	buf := make([]byte, 0, len(rest)+len(l.buf))
	buf = append(append(buf, rest...), l.buf...)
	var rs []int
	for _, r := range rolls {
		if r > written {
			rs = append(rs, r-written)
		}
	}
	for _, r := range l.rolls {
		rs = append(rs, r+len(rest))
	}
	l.buf, l.rolls = buf, rs
}

// write writes one batch: the records before each roll offset end the
// current file, the rest go to the (possibly new) current file. On error
// it returns how many bytes of the batch are written in files it ended;
// the rest is undone.
func (l *Log) write(batch []byte, rolls []int) (int, error) {
	start := 0
	for _, r := range rolls {
		if err := l.writeSegment(batch[start:r], true); err != nil {
			return start, err
		}
		start = r
	}
	if err := l.writeSegment(batch[start:], false); err != nil {
		return start, err
	}
	return len(batch), nil
}

// writeSegment writes seg to the current file in one write, creating the
// file when there is none, and syncs it when Fsync or end; end then closes
// it. A failure undoes the write (truncates the file to its size before, or
// removes a file it created), so a retry can write seg again; an error
// wrapping errBroken says the undo failed too.
func (l *Log) writeSegment(seg []byte, end bool) error {
	if len(seg) == 0 {
		if end {
			return l.endFile()
		}
		return nil
	}
	created := false
	if l.file == nil {
		zxid := int64(binary.LittleEndian.Uint64(seg[8:16]))
		p := filepath.Join(l.dir, fileName(logPrefix, zxid))
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("storage: create log file: %w", err)
		}
		l.file, l.fileName, l.fileSize = f, p, 0
		created = true
		if _, err := f.Write(logFileHeader()); err != nil {
			return l.undo(0, true, fmt.Errorf("storage: %w", err))
		}
		l.fileSize = logHeaderSize
	}
	before := l.fileSize
	markWriteStart(seg)
	if _, err := l.file.Write(seg); err != nil {
		return l.undo(before, created, fmt.Errorf("storage: %w", err))
	}
	if l.opts.Fsync || end {
		if err := l.file.Sync(); err != nil {
			return l.undo(before, created, fmt.Errorf("storage: %w", err))
		}
	}
	if created && l.opts.Fsync {
		if err := syncDir(l.dir); err != nil {
			return l.undo(before, created, err)
		}
	}
	l.fileSize = before + int64(len(seg))
	if end {
		return l.endFile()
	}
	return nil
}

// undo puts the current file back as it was before a failed write and
// returns cause, or cause and errBroken when that fails.
func (l *Log) undo(size int64, created bool, cause error) error {
	if created {
		f, p := l.file, l.fileName
		l.file, l.fileName, l.fileSize = nil, "", 0
		f.Close()
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("%w; removing the new file failed: %w (%w)", cause, err, errBroken)
		}
		return cause
	}
	// Truncating frees space, so it works on a full disk too. A crash
	// before it reaches the disk leaves a torn last write, which OpenLog cuts.
	if err := l.file.Truncate(size); err != nil {
		return fmt.Errorf("%w; cutting the partial write failed: %w (%w)", cause, err, errBroken)
	}
	l.fileSize = size
	return cause
}

// endFile syncs and closes the current file, whatever Fsync says: a later
// file must never be on disk while an earlier one is missing records.
func (l *Log) endFile() error {
	if l.file == nil {
		return nil
	}
	f := l.file
	l.file = nil
	err := f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("storage: close %s: %w (%w)", l.fileName, err, errBroken)
	}
	return nil
}
