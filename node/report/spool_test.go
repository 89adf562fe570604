package report

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/stats"
	"github.com/dubbo-lab/dubbo/node/stats/histogram"
)

// spoolReport is the report of node's interval ending at minute m, with
// n samples (one carrying a histogram).
func spoolReport(node string, m, n int) *Report {
	t0 := time.UnixMilli(1732870800000)
	r := &Report{Node: node, Start: t0.Add(time.Duration(m-1) * time.Minute), End: t0.Add(time.Duration(m) * time.Minute)}
	var h histogram.Counts
	h[histogram.Of(time.Millisecond)], h[histogram.Of(40*time.Millisecond)] = 9, 1
	for i := range n {
		s := stats.Sample{Side: stats.Consumer, Application: "bench", Host: "127.0.0.1", Interface: "org.example.Greeter",
			Version: "1.0.0", Method: "sayHello", Peer: "127.0.0.1:2088" + string(rune('0'+i%10)), Success: int64(10 + i),
			Failure: 1, Elapsed: 30, MaxElapsed: 9, Timestamp: r.End, Interval: time.Minute, Node: node}
		if i == 0 {
			s.Histogram = h.Sparse()
		}
		r.Samples = append(r.Samples, s)
	}
	return r
}

// A report written to the spool reads back as it was, in a file of the
// documented format, with nothing else left in the directory; written
// again it replaces itself.
func TestSpoolRoundTrip(t *testing.T) {
	sp := &Spool{Dir: filepath.Join(t.TempDir(), "spool")}
	a, b := spoolReport("host-1-17", 2, 3), spoolReport("other/node 2", 1, 1)
	for _, r := range []*Report{a, b, a} {
		if d, _, err := sp.Write(r); err != nil || d != 0 {
			t.Fatalf("Write: dropped %d, %v", d, err)
		}
	}
	entries, _ := os.ReadDir(sp.Dir)
	if len(entries) != 2 {
		t.Fatalf("%d files in the spool, want 2: %v", len(entries), entries)
	}
	got, bad, err := sp.Read()
	if err != nil || len(bad) != 0 || len(got) != 2 {
		t.Fatalf("Read: %d reports, bad %v, %v", len(got), bad, err)
	}
	for i, want := range []*Report{b, a} { // oldest first
		r := got[i].Report
		if r.Node != want.Node || !r.Start.Equal(want.Start) || !r.End.Equal(want.End) || !reflect.DeepEqual(r.Samples, want.Samples) {
			t.Errorf("report %d:\n got %+v\nwant %+v", i, r, want)
		}
	}
	data, err := os.ReadFile(got[1].File)
	if err != nil || !strings.HasPrefix(string(data), "dubbo-statistics-report 1\nnode host-1-17\nstart 1732870860000\nend 1732870920000\n\ncount%3A%2F%2F127.0.0.1%2F") {
		t.Errorf("file %s:\n%s", got[1].File, data)
	}
	if err := sp.Remove(got[0].File); err != nil {
		t.Fatal(err)
	}
	if err := sp.Remove(got[0].File); err != nil {
		t.Errorf("removing a file another process removed: %v", err)
	}
	if left, _, _ := sp.Read(); len(left) != 1 {
		t.Errorf("%d reports left after a remove", len(left))
	}
	if none, bad, err := (&Spool{Dir: filepath.Join(t.TempDir(), "never")}).Read(); none != nil || bad != nil || err != nil {
		t.Errorf("a spool never written: %v %v %v", none, bad, err)
	}
}

// Past MaxBytes the oldest reports go, counted with their samples.
func TestSpoolBound(t *testing.T) {
	sp := &Spool{Dir: t.TempDir()}
	if err := writeAtomic(filepath.Join(sp.Dir, "probe"), encodeReport(spoolReport("n", 1, 4))); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(sp.Dir, "probe"))
	os.Remove(filepath.Join(sp.Dir, "probe"))
	sp.MaxBytes = 3*fi.Size() + fi.Size()/2 // three reports fit
	var dropped, samples int
	for m := 1; m <= 5; m++ {
		d, s, err := sp.Write(spoolReport("n", m, 4))
		if err != nil {
			t.Fatal(err)
		}
		dropped, samples = dropped+d, samples+s
	}
	got, _, _ := sp.Read()
	if dropped != 2 || samples != 8 || len(got) != 3 || got[0].End.Sub(got[0].Start) != time.Minute || !got[0].End.Equal(spoolReport("n", 3, 1).End) {
		t.Errorf("dropped %d reports (%d samples), kept %d from %v; want 2 (8), 3 from minute 3", dropped, samples, len(got), got[0].End)
	}
}

// A file that is not a report of this version is left out, and said; the
// others are read.
func TestSpoolReadSkipsBadFiles(t *testing.T) {
	sp := &Spool{Dir: t.TempDir()}
	if _, _, err := sp.Write(spoolReport("n", 1, 2)); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"0000000000000001-x.report": "dubbo-statistics-report 2\nnode n\nstart 0\nend 1\n\ncount%3A%2F%2Fh%2FI%2Fm%3Fconsumer%3Dc%26timestamp%3D1\n",
		"0000000000000002-y.report": "garbage",
		"notes.txt":                 "not a report at all, and not read",
		".half-written.report.tmp":  "dubbo-statistics-report 1\n",
	} {
		if err := os.WriteFile(filepath.Join(sp.Dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, bad, err := sp.Read()
	if err != nil || len(got) != 1 || len(bad) != 2 || !errors.Is(bad[0], ErrSpoolFormat) || !strings.Contains(bad[0].Error(), "version") {
		t.Errorf("Read: %d reports, bad %v, %v", len(got), bad, err)
	}
}

func TestDecodeReportErrors(t *testing.T) {
	sample := "count%3A%2F%2Fh%2FI%2Fm%3Fconsumer%3Dc%26timestamp%3D1"
	for _, tc := range []struct{ name, data, want string }{
		{"empty", "", "first line"},
		{"another file", "PK\x03\x04", "first line"},
		{"newer version", "dubbo-statistics-report 2\n", "version"},
		{"no header end", "dubbo-statistics-report 1\nnode n\nstart 0\nend 1\n", "no blank line"},
		{"unknown header", "dubbo-statistics-report 1\nnode n\nstart 0\nend 1\ncolour red\n\n" + sample, "unknown header"},
		{"header twice", "dubbo-statistics-report 1\nnode n\nnode m\nstart 0\nend 1\n\n" + sample, "twice"},
		{"bad end", "dubbo-statistics-report 1\nnode n\nstart 0\nend soon\n\n" + sample, "end"},
		{"no end", "dubbo-statistics-report 1\nnode n\nstart 0\n\n" + sample, "no node, start or end"},
		{"no sample", "dubbo-statistics-report 1\nnode n\nstart 0\nend 1\n\n", "no sample"},
		{"bad escape", "dubbo-statistics-report 1\nnode n\nstart 0\nend 1\n\n%zz", "sample 1"},
		{"not a sample", "dubbo-statistics-report 1\nnode n\nstart 0\nend 1\n\ndubbo%3A%2F%2Fh%2FI", "sample 1"},
		{"bad histogram", "dubbo-statistics-report 1\nnode n\nstart 0\nend 1\n\n" + sample + "%26elapsed.histogram%3D1000%3A1", "sample 1"},
	} {
		if r, err := DecodeReport([]byte(tc.data)); !errors.Is(err, ErrSpoolFormat) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, %v; want ErrSpoolFormat with %q", tc.name, r, err, tc.want)
		}
	}
}

// Whatever DecodeReport accepts encodes to a file it reads back the same.
func FuzzDecodeReport(f *testing.F) {
	f.Add(encodeReport(spoolReport("host-1-17", 2, 3)))
	f.Add([]byte("dubbo-statistics-report 1\nnode n\nstart 0\nend 1\n\ncount%3A%2F%2Fh%2FI%2Fm%3Fconsumer%3Dc%26timestamp%3D1\n\n"))
	f.Add([]byte("dubbo-statistics-report 1\nstart 5\nnode \nend 0\n\ncount://h/I/m?provider=p:1&timestamp=9&elapsed.histogram=896:3\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeReport(data)
		if err != nil {
			return
		}
		again, err := DecodeReport(encodeReport(r))
		if err != nil {
			t.Fatalf("%q decoded, but its encoding does not: %v", data, err)
		}
		if again.Node != strings.ReplaceAll(r.Node, "\n", " ") || !again.End.Equal(r.End) || len(again.Samples) != len(r.Samples) {
			t.Fatalf("round trip of %q:\n got %+v\nwant %+v", data, again, r)
		}
		for i := range r.Samples {
			if again.Samples[i].ID() != r.Samples[i].ID() || again.Samples[i].Histogram != r.Samples[i].Histogram {
				t.Fatalf("sample %d of %q: %+v, want %+v", i, data, again.Samples[i], r.Samples[i])
			}
		}
	})
}
