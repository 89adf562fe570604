// Command benchreport reads the output of `go test -bench` runs (our
// benchmarks and the peers', with their custom metrics) and writes the
// benchmark report: REPORT.md with ratios first, absolute figures second,
// and its SVG bar charts, into one directory.
//
//	go run ./tools/benchreport -machine bench/out/machine.txt -out bench bench/out/*.txt
//
// Results are grouped by top-level benchmark; tools/benchout reads them,
// knows the targets (the last element of a name) and gives the ratios of
// its pairs, oriented so that above 1 means ours is better, as
// tools/benchratio prints them. Families the report
// does not know (BenchmarkScale*, anything new) are shown as tables of
// what they reported. -readme replaces the README's headline table between
// its markers.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dubbo-lab/dubbo/tools/benchout"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "benchreport: %v\n", err)
		os.Exit(1)
	}
}

// Markers of the headline table in the README.
const (
	headlineStart = "<!-- benchreport:headline -->"
	headlineEnd   = "<!-- /benchreport:headline -->"
)

func run(args []string) error {
	fs := flag.NewFlagSet("benchreport", flag.ContinueOnError)
	machine := fs.String("machine", "", "file of key: value lines describing the machine (date, cpu, cores, loadavg, go, kernel, settings)")
	out := fs.String("out", "bench", "directory for REPORT.md and the charts")
	readme := fs.String("readme", "", "README whose headline table (between "+headlineStart+" and "+headlineEnd+") to replace")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("no benchmark output files given")
	}
	in := &benchout.Input{}
	for _, path := range fs.Args() {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		err = in.Parse(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if len(in.Results) == 0 {
		return fmt.Errorf("no benchmark results in %s", strings.Join(fs.Args(), ", "))
	}
	var m Machine
	if *machine != "" {
		text, err := os.ReadFile(*machine)
		if err != nil {
			return err
		}
		m = ParseMachine(string(text))
	}
	r := Report{Machine: m, In: in}
	if err := writeReport(r, *out); err != nil {
		return err
	}
	if *readme != "" {
		if err := updateReadme(*readme, r.Headline()); err != nil {
			return err
		}
	}
	return nil
}

// writeReport writes REPORT.md and every chart into dir, replacing the
// charts of an earlier report.
func writeReport(r Report, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.svg"))
	if err != nil {
		return err
	}
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	charts := r.Charts()
	names := make([]string, 0, len(charts))
	for name := range charts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(charts[name]), 0o644); err != nil {
			return err
		}
	}
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "REPORT.md"), b.Bytes(), 0o644)
}

// updateReadme replaces the text between the headline markers.
func updateReadme(path, table string) error {
	text, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(text)
	i := strings.Index(s, headlineStart)
	j := strings.Index(s, headlineEnd)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no %s ... %s markers for the headline table", path, headlineStart, headlineEnd)
	}
	s = s[:i+len(headlineStart)] + "\n" + table + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}
