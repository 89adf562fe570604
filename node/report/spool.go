package report

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dubbo-lab/dubbo/node/stats"
	"github.com/dubbo-lab/dubbo/node/url"
)

// A Spool is a directory where a stopping node leaves the reports it could
// not send, for the next process started with the same data directory to
// send (or, for the monitor role, to store): one file per report, written
// whole or not at all (a temporary file renamed), named by the report's
// end and node so that writing a report again replaces it. Its size is
// bounded: past MaxBytes the oldest reports are removed, and counted.
// Processes may share it: a report sent twice is stored once by the
// monitor (stats.Sample.ID).
//
// A file (version 1) is text:
//
//	dubbo-statistics-report 1
//	node <reporting process>
//	start <Unix milliseconds>
//	end <Unix milliseconds>
//
//	<count:// URL of a sample, query-escaped>
//	...
type Spool struct {
	Dir string
	// MaxBytes bounds the files' total size; default DefaultSpoolBytes.
	MaxBytes int64
}

// DefaultSpoolBytes is Spool.MaxBytes's default: some hours of a busy
// node's reports.
const DefaultSpoolBytes = 32 << 20

// spoolMagic is a spool file's first line, before its version.
const (
	spoolMagic   = "dubbo-statistics-report"
	spoolVersion = 1
	spoolExt     = ".report"
)

// Spooled is a report read from a spool, with the file it is in.
type Spooled struct {
	*Report
	File string
}

// Write writes r into the spool, then removes the oldest reports while the
// spool holds more than MaxBytes; it says how many reports and samples it
// removed so (r itself among them if it alone is too large).
func (s *Spool) Write(r *Report) (dropped, droppedSamples int, err error) {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return 0, 0, fmt.Errorf("statistics spool: %w", err)
	}
	name := filepath.Join(s.Dir, spoolName(r))
	if err := writeAtomic(name, encodeReport(r)); err != nil {
		return 0, 0, fmt.Errorf("statistics spool: %w", err)
	}
	dropped, droppedSamples, err = s.trim()
	if err != nil {
		return dropped, droppedSamples, fmt.Errorf("statistics spool %s: %w", s.Dir, err)
	}
	return dropped, droppedSamples, nil
}

// spoolName is a report's file name: its end, so that names sort oldest
// first, and its node, made safe for a file name.
func spoolName(r *Report) string {
	node := strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' {
			return c
		}
		return '_'
	}, r.Node)
	if len(node) > 100 {
		node = node[:100]
	}
	return fmt.Sprintf("%016d-%s%s", r.End.UnixMilli(), node, spoolExt)
}

func encodeReport(r *Report) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %d\nnode %s\nstart %d\nend %d\n\n", spoolMagic, spoolVersion,
		strings.ReplaceAll(r.Node, "\n", " "), r.Start.UnixMilli(), r.End.UnixMilli())
	for _, s := range r.Samples {
		b.WriteString(s.URL().Encode())
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// writeAtomic writes data to name through a temporary file in the same
// directory, synced and renamed, so a reader sees all of it or nothing.
func writeAtomic(name string, data []byte) error {
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	tmp := filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+"."+hex.EncodeToString(suffix[:])+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(name)); err == nil { // the rename itself survives a crash
		d.Sync()
		d.Close()
	}
	return nil
}

func (s *Spool) limit() int64 {
	if s.MaxBytes <= 0 {
		return DefaultSpoolBytes
	}
	return s.MaxBytes
}

// files lists the spool's report files, oldest first, with their sizes.
func (s *Spool) files() ([]fs.FileInfo, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []fs.FileInfo
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), spoolExt) && !strings.HasPrefix(e.Name(), ".") {
			if fi, err := e.Info(); err == nil {
				out = append(out, fi)
			}
		}
	}
	slices.SortFunc(out, func(a, b fs.FileInfo) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// trim removes the oldest reports while the spool is over its bound.
func (s *Spool) trim() (dropped, samples int, err error) {
	files, err := s.files()
	if err != nil {
		return 0, 0, err
	}
	var total int64
	for _, fi := range files {
		total += fi.Size()
	}
	limit := s.limit()
	for _, fi := range files {
		if total <= limit {
			break
		}
		name := filepath.Join(s.Dir, fi.Name())
		n := 0
		if data, err := os.ReadFile(name); err == nil {
			n = bytes.Count(data, []byte("\ncount")) // a sample's URL starts a line
		}
		if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return dropped, samples, err
		}
		total -= fi.Size()
		dropped++
		samples += n
	}
	return dropped, samples, nil
}

// Read returns the spooled reports, oldest first. A file that cannot be
// read as a report (damaged, or of a newer version) is left out and
// reported in bad, with why.
func (s *Spool) Read() (reports []Spooled, bad []error, err error) {
	files, err := s.files()
	if err != nil {
		return nil, nil, fmt.Errorf("statistics spool %s: %w", s.Dir, err)
	}
	for _, fi := range files {
		name := filepath.Join(s.Dir, fi.Name())
		data, err := os.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // taken by another process meanwhile
		}
		var r *Report
		if err == nil {
			r, err = DecodeReport(data)
		}
		if err != nil {
			bad = append(bad, fmt.Errorf("spooled report %s: %w", name, err))
			continue
		}
		reports = append(reports, Spooled{Report: r, File: name})
	}
	return reports, bad, nil
}

// Remove removes a report taken from the spool (sent, stored or given up);
// one another process removed first is no error.
func (s *Spool) Remove(file string) error {
	if err := os.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("statistics spool: %w", err)
	}
	return nil
}

// ErrSpoolFormat is wrapped by DecodeReport's errors.
var ErrSpoolFormat = errors.New("not a spooled statistics report")

// DecodeReport reads a spool file's contents: the header, then one
// query-escaped count:// URL per line, each a sample (stats.ParseSample).
func DecodeReport(data []byte) (*Report, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrSpoolFormat, fmt.Sprintf(format, args...))
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	line := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return sc.Text(), true
	}
	first, _ := line()
	magic, version, _ := strings.Cut(first, " ")
	if magic != spoolMagic {
		return nil, bad("first line %q", clip(first))
	}
	if v, err := strconv.Atoi(version); err != nil || v != spoolVersion {
		return nil, bad("version %q; this program reads version %d", clip(version), spoolVersion)
	}
	r := &Report{}
	fields := map[string]bool{}
	for {
		l, ok := line()
		if !ok {
			return nil, bad("no blank line after the header")
		}
		if l == "" {
			break
		}
		key, val, _ := strings.Cut(l, " ")
		if fields[key] {
			return nil, bad("%s given twice", clip(key))
		}
		fields[key] = true
		switch key {
		case "node":
			r.Node = val
		case "start", "end":
			ms, err := strconv.ParseInt(val, 10, 64)
			if err != nil || ms < 0 {
				return nil, bad("%s %q is not Unix milliseconds", key, clip(val))
			}
			if key == "start" {
				r.Start = time.UnixMilli(ms)
			} else {
				r.End = time.UnixMilli(ms)
			}
		default:
			return nil, bad("unknown header %q", clip(key))
		}
	}
	if !fields["node"] || !fields["start"] || !fields["end"] {
		return nil, bad("no node, start or end")
	}
	for sc.Scan() {
		if sc.Text() == "" {
			continue
		}
		u, err := url.Decode(sc.Text())
		if err != nil {
			return nil, bad("sample %d: %v", len(r.Samples)+1, err)
		}
		s, err := stats.ParseSample(u)
		if err != nil {
			return nil, bad("sample %d: %v", len(r.Samples)+1, err)
		}
		r.Samples = append(r.Samples, s)
	}
	if err := sc.Err(); err != nil {
		return nil, bad("%v", err)
	}
	if len(r.Samples) == 0 {
		return nil, bad("no sample")
	}
	return r, nil
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
