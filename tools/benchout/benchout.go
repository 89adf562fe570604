// Package benchout reads `go test -bench` output and compares our systems
// with their peers. It is the one place that knows the benchmark naming
// scheme: the last element of a name says the target (embedded, apache,
// ours, ours-plugin, dubbogo, grpcgo, rawtcp, inprocess, plugin, floor), pairs of
// targets are compared ours first, and a ratio is oriented by its unit so
// that above 1 always means ours is better. tools/benchratio prints the
// ratios; tools/benchreport writes the report from the same results.
//
// Runs of one name (-count, or rounds that go test suffixes with #01, #02)
// are averaged, and a benchmark that logged has its result line found after
// its log.
package benchout

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// targets are the last name elements that say which system a result is
// of; anything else is part of the benchmark's own name.
var targets = map[string]bool{
	"embedded": true, "apache": true, // the registries
	"ours": true, "ours-plugin": true, "dubbogo": true, "grpcgo": true, "rawtcp": true, // RPC providers
	"inprocess": true, "plugin": true, "floor": true, // the plugin path
}

// pairs are the comparisons the ratios are of, ours first: the registry,
// the RPC providers (and, over Triple, a plain grpc-go server), the same
// handler behind a plugin or in the provider,
// and the floor (a child answering canned bytes on a plugin link): what a
// process boundary costs at least, and how close the plugin path comes.
var pairs = []Pair{
	{"embedded", "apache"},
	{"ours", "dubbogo"},
	{"ours-plugin", "dubbogo"},
	{"ours-plugin", "grpcgo"},
	{"plugin", "inprocess"},
	{"floor", "inprocess"},
	{"plugin", "floor"},
}

// Pair is two targets compared: ours and theirs.
type Pair struct{ Ours, Theirs string }

// higherIsBetter are the units where more is better.
var higherIsBetter = map[string]bool{"qps": true, "rows/s": true, "rows/cpu-s": true, "MB/s": true, "sessions_kept": true}

// HigherIsBetter reports whether more of unit is better: a rate, or a count
// of what was kept. Every other unit (a time, a size, a count of failures)
// is better lower.
func HigherIsBetter(unit string) bool { return higherIsBetter[unit] }

// Result is one benchmark on one target, its metrics averaged over every
// time it ran (-count, or rounds that go test suffixes with #01, #02).
type Result struct {
	Family string // top-level benchmark: BenchmarkSayHello
	Base   string // the name without the target: BenchmarkSayHello/client=ours/c=1
	Target string // ours, apache, ...; "" for a benchmark of ours alone
	Units  []string
	sums   map[string]float64
	counts map[string]int
}

// Value is the mean of unit over the runs, and whether it was reported.
func (r *Result) Value(unit string) (float64, bool) {
	n := r.counts[unit]
	if n == 0 {
		return 0, false
	}
	return r.sums[unit] / float64(n), true
}

// Input is every result read, in the order first seen, and the CPU the
// output names.
type Input struct {
	CPU     string
	Results []*Result
	byName  map[string]*Result
}

var (
	procSuffix = regexp.MustCompile(`-\d+$`)
	runSuffix  = regexp.MustCompile(`#\d+(/|$)`)
)

// Parse adds the benchmark lines of one `go test -bench` output to in.
func (in *Input) Parse(r io.Reader) error {
	if in.byName == nil {
		in.byName = map[string]*Result{}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	pending := "" // a benchmark whose result line has not come yet
	for sc.Scan() {
		line := sc.Text()
		if cpu, ok := strings.CutPrefix(line, "cpu: "); ok && in.CPU == "" {
			in.CPU = strings.TrimSpace(cpu)
			continue
		}
		fields := strings.Fields(line)
		if len(fields) > 0 && strings.HasPrefix(fields[0], "Benchmark") {
			pending = fields[0]
		} else if pending != "" && len(fields) >= 3 && isCount(fields[0]) {
			// A benchmark that logged: its name, the log, then its
			// result on a line of its own.
			fields = append([]string{pending}, fields...)
		} else {
			continue
		}
		if len(fields) < 4 || !isCount(fields[1]) {
			continue // the name of a benchmark about to log, or its log
		}
		pending = ""
		name := runSuffix.ReplaceAllString(procSuffix.ReplaceAllString(fields[0], ""), "$1")
		res := in.byName[name]
		if res == nil {
			res = newResult(name)
			in.byName[name] = res
			in.Results = append(in.Results, res)
		}
		for j := 2; j+1 < len(fields); j += 2 {
			v, err := strconv.ParseFloat(fields[j], 64)
			if err != nil {
				return fmt.Errorf("%s: value %q: %w", fields[0], fields[j], err)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%s: value %q is not a number a benchmark reports", fields[0], fields[j])
			}
			unit := fields[j+1]
			if res.counts[unit] == 0 {
				res.Units = append(res.Units, unit)
			}
			res.sums[unit] += v
			res.counts[unit]++
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read benchmark output: %w", err)
	}
	return nil
}

// isCount reports whether s is an iteration count.
func isCount(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

func newResult(name string) *Result {
	r := &Result{Base: name, sums: map[string]float64{}, counts: map[string]int{}}
	if i := strings.LastIndex(name, "/"); i >= 0 && targets[name[i+1:]] {
		r.Base, r.Target = name[:i], name[i+1:]
	}
	r.Family, _, _ = strings.Cut(r.Base, "/")
	return r
}

// Family is every result of one top-level benchmark, with its bases and
// targets in the order first seen.
type Family struct {
	Name    string
	Bases   []string
	Targets []string
	Units   []string
	results map[[2]string]*Result // base, target
}

// Get is the result of base on target, or nil.
func (f *Family) Get(base, target string) *Result { return f.results[[2]string{base, target}] }

// Families groups the results by top-level benchmark.
func (in *Input) Families() []*Family {
	var out []*Family
	byName := map[string]*Family{}
	for _, r := range in.Results {
		f := byName[r.Family]
		if f == nil {
			f = &Family{Name: r.Family, results: map[[2]string]*Result{}}
			byName[r.Family] = f
			out = append(out, f)
		}
		if !slices.Contains(f.Bases, r.Base) {
			f.Bases = append(f.Bases, r.Base)
		}
		if !slices.Contains(f.Targets, r.Target) {
			f.Targets = append(f.Targets, r.Target)
		}
		for _, u := range r.Units {
			if !slices.Contains(f.Units, u) {
				f.Units = append(f.Units, u)
			}
		}
		f.results[[2]string{r.Base, r.Target}] = r
	}
	for _, f := range out {
		sort.SliceStable(f.Targets, func(i, j int) bool { return targetRank[f.Targets[i]] < targetRank[f.Targets[j]] })
	}
	return out
}

// targetRank orders a family's targets: ours, ours through a plugin, the
// peer, the floor.
var targetRank = map[string]int{
	"ours-plugin": 1, "plugin": 1,
	"dubbogo": 2, "grpcgo": 2, "apache": 2,
	"rawtcp": 3, "floor": 3,
}

// Ratio is one metric of one benchmark measured on both sides of a pair.
type Ratio struct {
	Base, Unit   string
	Pair         Pair
	Ours, Theirs float64
}

// Value is above 1 when ours is better: theirs ÷ ours, or ours ÷ theirs
// for a unit where more is better.
func (r Ratio) Value() float64 {
	if HigherIsBetter(r.Unit) {
		return r.Ours / r.Theirs
	}
	return r.Theirs / r.Ours
}

// Ratios are every pair's ratios, pair by pair, in the order of the input.
func (in *Input) Ratios() []Ratio {
	var out []Ratio
	fams := in.Families()
	for _, p := range pairs {
		for _, f := range fams {
			for _, base := range f.Bases {
				o, th := f.Get(base, p.Ours), f.Get(base, p.Theirs)
				if o == nil || th == nil {
					continue
				}
				for _, u := range o.Units {
					ov, _ := o.Value(u)
					tv, ok := th.Value(u)
					if !ok || ov == 0 || tv == 0 || u == "B/op" || u == "allocs/op" {
						continue // our client's allocations are the same on both sides
					}
					if _, rate := o.Value("qps"); rate && u == "ns/op" {
						continue // calls/s says it
					}
					out = append(out, Ratio{Base: base, Unit: u, Pair: p, Ours: ov, Theirs: tv})
				}
			}
		}
	}
	return out
}

// Find is the ratio of base and unit on p, if measured.
func Find(ratios []Ratio, base, unit string, p Pair) (Ratio, bool) {
	for _, r := range ratios {
		if r.Base == base && r.Unit == unit && r.Pair == p {
			return r, true
		}
	}
	return Ratio{}, false
}
