package main

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dubbo-lab/dubbo/tools/benchout"
)

// testdata/*.txt is the output of one real `make bench` run (bench/out/
// of the commit that added it), machine.txt its description.
func sample(t *testing.T) (Report, []string) {
	t.Helper()
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no sample bench output in testdata: %v", err)
	}
	in := &benchout.Input{}
	var machine Machine
	for _, path := range files {
		if filepath.Base(path) == "machine.txt" {
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			machine = ParseMachine(string(text))
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := in.Parse(f); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		f.Close()
	}
	return Report{Machine: machine, In: in}, files
}

// metricLines finds, independently of Parse, every value of unit on the
// result lines of name (any -N suffix, any #NN round) in the sample.
func metricLines(t *testing.T, files []string, name, unit string) []float64 {
	t.Helper()
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `(#\d+)?-\d+\s`)
	var out []float64
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// Rounds: "BenchmarkSayHello/client=ours/c=1#01/ours-2".
			line := regexp.MustCompile(`#\d+/`).ReplaceAllString(sc.Text(), "/")
			if !re.MatchString(line) {
				continue
			}
			fields := strings.Fields(line)
			for i := 2; i+1 < len(fields); i += 2 {
				if fields[i+1] == unit {
					v, err := strconv.ParseFloat(fields[i], 64)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, v)
				}
			}
		}
		f.Close()
	}
	return out
}

func mean(vs []float64) float64 {
	s := 0.0
	for _, v := range vs {
		s += v
	}
	return s / float64(len(vs))
}

func TestSampleRatios(t *testing.T) {
	r, files := sample(t)
	ratios := r.In.Ratios()
	tests := []struct {
		base, unit string
		p          benchout.Pair
	}{
		{"BenchmarkRegistry/get/clients=16", "ns/op", benchout.Pair{Ours: "embedded", Theirs: "apache"}},
		{"BenchmarkWatchLatency", "p99_us", benchout.Pair{Ours: "embedded", Theirs: "apache"}},
		{"BenchmarkSayHello/client=dubbogo/c=32", "qps", benchout.Pair{Ours: "ours-plugin", Theirs: "dubbogo"}},
		{"BenchmarkSayHello/client=ours/c=1", "cpu_us", benchout.Pair{Ours: "ours", Theirs: "dubbogo"}},
		{"BenchmarkProviderPath/c=32", "qps", benchout.Pair{Ours: "plugin", Theirs: "floor"}},
		{"BenchmarkFaultNodeDeleted", "reregister_ms", benchout.Pair{Ours: "embedded", Theirs: "apache"}},
	}
	for _, tc := range tests {
		ours := metricLines(t, files, tc.base+"/"+tc.p.Ours, tc.unit)
		theirs := metricLines(t, files, tc.base+"/"+tc.p.Theirs, tc.unit)
		if len(ours) == 0 || len(theirs) == 0 {
			t.Errorf("%s %s: the sample has no lines for %v", tc.base, tc.unit, tc.p)
			continue
		}
		want := mean(theirs) / mean(ours)
		if benchout.HigherIsBetter(tc.unit) {
			want = mean(ours) / mean(theirs)
		}
		got, ok := benchout.Find(ratios, tc.base, tc.unit, tc.p)
		if !ok {
			t.Errorf("%s %s %v: no ratio", tc.base, tc.unit, tc.p)
			continue
		}
		if diff := got.Value() - want; diff > 1e-9 || diff < -1e-9 {
			t.Errorf("%s %s %v: ratio %v, want %v (ours %v, theirs %v)", tc.base, tc.unit, tc.p, got.Value(), want, ours, theirs)
		}
	}
	// The RPC benchmark runs twice (rounds #01): both are averaged.
	if n := len(metricLines(t, files, "BenchmarkSayHello/client=ours/c=32/ours", "qps")); n < 2 {
		t.Errorf("the sample has %d rounds of BenchmarkSayHello; want at least 2 to test averaging", n)
	}
}

func TestSampleReport(t *testing.T) {
	r, _ := sample(t)
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()

	// Ratios first, absolute figures second; the machine described.
	order := []string{"## Machine", "## Ratios", "### Headline", "### Every pair", "## Absolute figures",
		"### RPC: sayHello over dubbo://", "### RPC: Greet over Triple", "### The plugin path", "### Registry operations", "### Watch notification latency",
		"### Failure detection and recovery", "### Other benchmarks"}
	at := 0
	for _, h := range order {
		i := strings.Index(md[at:], h)
		if i < 0 {
			t.Fatalf("report lacks %q after byte %d:\n%s", h, at, md)
		}
		at += i
	}
	// A benchmark of ours alone in a section (the plugin path's turns) has
	// its table there, not among the others.
	plugin := md[strings.Index(md, "### The plugin path"):strings.Index(md, "### Registry operations")]
	if !strings.Contains(plugin, "| ProviderPathTurns | floor_qps | plugin_qps | vs_floor |") {
		t.Errorf("the plugin path lacks the turns' table:\n%s", plugin)
	}
	for _, want := range []string{"| CPU | " + r.Machine.CPU, "| cores | " + r.Machine.Cores, "| load average at start", "| Go | go version"} {
		if !strings.Contains(md, want) {
			t.Errorf("machine table lacks %q", want)
		}
	}

	// Every headline row of the sample, with its ratio as computed.
	ratios := r.In.Ratios()
	head := r.Headline()
	rows := 0
	for _, h := range headlines {
		ra, ok := benchout.Find(ratios, h.Base, h.Unit, h.Pair)
		if !ok {
			t.Errorf("headline %q: not in the sample", h.Label)
			continue
		}
		rows++
		want := "| " + h.Label + " | "
		line := lineWith(head, want)
		if line == "" || !strings.HasSuffix(line, " | "+strconv.FormatFloat(ra.Value(), 'f', 2, 64)+" |") {
			t.Errorf("headline row %q = %q, want ratio %.2f", h.Label, line, ra.Value())
		}
	}
	if got := strings.Count(head, "\n") - 2; got != rows {
		t.Errorf("headline has %d rows, want %d:\n%s", got, rows, head)
	}
	if !strings.Contains(md, head) {
		t.Errorf("the report does not show the headline table")
	}

	// Every chart the report links exists and is well-formed SVG with a
	// bar (and its title) per value.
	charts := r.Charts()
	links := regexp.MustCompile(`!\[[^\]]*\]\(([^)]+\.svg)\)`).FindAllStringSubmatch(md, -1)
	if len(links) < 8 {
		t.Errorf("report links %d charts, want the RPC, plugin, registry, watch and fault charts", len(links))
	}
	for _, l := range links {
		svg, ok := charts[l[1]]
		if !ok {
			t.Errorf("report links %s, which is not written", l[1])
			continue
		}
		checkSVG(t, l[1], svg)
	}
	if len(charts) != len(links) {
		t.Errorf("%d charts written, %d linked", len(charts), len(links))
	}

	// The fault section's table has the figures and the calls they cost.
	for _, want := range []string{"| FaultKill9 | drop_ms | failed_calls |", "| FaultSessionExpiry |", "| Apache ZooKeeper |", "| FaultRegistryRestart |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func lineWith(text, prefix string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// checkSVG parses svg as XML and checks that every bar has a title.
func checkSVG(t *testing.T, name, svg string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	bars, titles := 0, 0
	var stack []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Errorf("%s: not well-formed: %v", name, err)
			return
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if el.Name.Local == "rect" {
				for _, a := range el.Attr {
					if a.Name.Local == "y" && a.Value != "0" {
						bars++ // the legend's and the bars' rects; the background has none
					}
				}
			}
			if el.Name.Local == "title" && len(stack) > 0 && stack[len(stack)-1] == "rect" {
				titles++
			}
			stack = append(stack, el.Name.Local)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	if titles == 0 || titles > bars {
		t.Errorf("%s: %d bars with titles among %d rects", name, titles, bars)
	}
}

// Scale benchmarks are another engineer's: whatever BenchmarkScale*
// reports is shown as a table, a row per result, a column per metric.
func TestScaleGeneric(t *testing.T) {
	const out = `goos: linux
BenchmarkScaleRegistry/providers=10000/consumers=200-2   	       1	     1830 p50_us	     9200 p99_us	       412.5 rss_MB	      2210 converge_ms
BenchmarkScaleRestartStorm-2                              	       1	   1000000 notifications	      5100 converge_ms
BenchmarkScaleRegistry/providers=10000/consumers=200-2   	       1	     1870 p50_us	     9600 p99_us	       413.5 rss_MB	      2250 converge_ms
`
	in := &benchout.Input{}
	if err := in.Parse(strings.NewReader(out)); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := (Report{In: in}).Write(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"### Scale",
		"| ScaleRegistry | p50_us | p99_us | rss_MB | converge_ms |",
		"| providers=10000/consumers=200 | 1,850 | 9,400 | 413 | 2,230 |", // two runs averaged
		"| ScaleRestartStorm | notifications | converge_ms |",
		"| all | 1,000,000 | 5,100 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "### Other benchmarks") {
		t.Errorf("scale results also listed under other benchmarks")
	}
}

func TestNum(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{
		{0, "0"}, {3, "3"}, {2.345, "2.35"}, {18.96, "19.0"}, {935, "935"}, {1234.6, "1,235"},
		{59973, "59,973"}, {1234567, "1,234,567"}, {-4502, "-4,502"}, {0.004, "0.00"},
	}
	for _, tc := range tests {
		if got := num(tc.v); got != tc.want {
			t.Errorf("num(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestSVGEscapes(t *testing.T) {
	svg := BarChart{Title: `a <b> & "c"`, Unit: "µs", Groups: []Group{
		{Label: "<script>alert(1)</script>", Bars: []Bar{{Target: "ours", Value: 3}, {Target: "x&y", Value: 0}}},
		{Label: "control\x01char", Bars: []Bar{{Target: "ours\x00", Value: 1}}},
	}}.SVG()
	if strings.Contains(svg, "<script>") || strings.Contains(svg, "<b>") {
		t.Errorf("markup in labels not escaped:\n%s", svg)
	}
	checkSVG(t, "escaped", svg)
}

func TestUpdateReadme(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "README.md")
	before := "# x\n\nintro\n\n" + headlineStart + "\nold table\n" + headlineEnd + "\n\nrest\n"
	if err := os.WriteFile(path, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := updateReadme(path, "| new | table |\n"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "# x\n\nintro\n\n" + headlineStart + "\n| new | table |\n" + headlineEnd + "\n\nrest\n"
	if string(got) != want {
		t.Errorf("README =\n%s\nwant\n%s", got, want)
	}
	if err := os.WriteFile(path, []byte("no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := updateReadme(path, "t"); err == nil || !strings.Contains(err.Error(), "markers") {
		t.Errorf("README without markers: %v, want an error naming the markers", err)
	}
}

func TestRunWritesReport(t *testing.T) {
	dir := t.TempDir()
	files, _ := filepath.Glob("testdata/*.txt")
	var args []string
	for _, f := range files {
		if filepath.Base(f) != "machine.txt" {
			args = append(args, f)
		}
	}
	stale := filepath.Join(dir, "gone.svg")
	if err := os.WriteFile(stale, []byte("<svg/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(append([]string{"-machine", "testdata/machine.txt", "-out", dir}, args...)); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "REPORT.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range regexp.MustCompile(`\]\(([^)]+\.svg)\)`).FindAllStringSubmatch(string(md), -1) {
		if _, err := os.Stat(filepath.Join(dir, l[1])); err != nil {
			t.Errorf("REPORT.md links %s: %v", l[1], err)
		}
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a chart of an earlier report is left: %v", err)
	}
	if err := run([]string{"-out", dir, filepath.Join(dir, "REPORT.md")}); err == nil {
		t.Errorf("input without benchmark lines: no error")
	}
}
