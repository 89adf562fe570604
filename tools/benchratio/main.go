// Command benchratio reads `go test -bench` output on stdin and prints, for
// every benchmark run against both systems of a pair (names that differ
// only in the final element), the two results side by side and their ratio:
//
//	go test -run '^$' -bench . ./embeddedzk/ | go run ./tools/benchratio
//
// The pairs, ours first: /embedded vs /apache (the registry), /ours vs
// /dubbogo and /ours-plugin vs /dubbogo (the RPC providers), /plugin vs
// /inprocess (the same handler behind a plugin or in the provider), and
// /floor vs /inprocess and /plugin vs /floor (the least a process boundary
// costs, and how close the plugin path comes to it).
//
// The ratio is oriented so that above 1 always means ours is better: for
// "lower is better" metrics (ns/op, p50_us, p99_us, cpu_us, B/op, ...) it is
// theirs ÷ ours, for rates (qps) ours ÷ theirs. For ns/op that is the
// throughput ratio. Repeated runs (-count, or sub-benchmarks run again,
// which go test suffixes with #01, #02) are averaged.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
)

func main() {
	rows, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchratio: %v\n", err)
		os.Exit(1)
	}
	if len(rows) == 0 {
		fmt.Fprintln(os.Stderr, "benchratio: no embedded/apache or ours/dubbogo pairs in the input; pipe `go test -bench` output in")
		os.Exit(1)
	}
	if err := write(os.Stdout, rows); err != nil {
		fmt.Fprintf(os.Stderr, "benchratio: %v\n", err)
		os.Exit(1)
	}
}

// pair is two targets compared: ours and theirs.
type pair struct{ Ours, Theirs string }

var pairs = []pair{
	{"embedded", "apache"},
	{"ours", "dubbogo"},
	{"ours-plugin", "dubbogo"},
	{"plugin", "inprocess"},
	{"floor", "inprocess"},
	{"plugin", "floor"},
}

// higherIsBetter are the units of rates.
var higherIsBetter = map[string]bool{"qps": true}

// row is one metric of one benchmark measured on both targets of a pair.
type row struct {
	Name   string // benchmark without the target, plus the unit unless ns/op
	Pair   pair
	Ours   float64
	Theirs float64
	Higher bool // the unit is a rate: higher is better
}

// Ratio is above 1 when ours is better: theirs ÷ ours, or ours ÷ theirs
// for rates.
func (r row) Ratio() float64 {
	if r.Higher {
		return r.Ours / r.Theirs
	}
	return r.Theirs / r.Ours
}

// procSuffix is the -GOMAXPROCS suffix go test appends to names; runSuffix
// the #NN it appends to a sub-benchmark name used again.
var (
	procSuffix = regexp.MustCompile(`-\d+$`)
	runSuffix  = regexp.MustCompile(`#\d+(/|$)`)
)

type key struct{ base, unit string }

type mean struct {
	sum float64
	n   int
}

func (m mean) value() float64 { return m.sum / float64(m.n) }

// parse collects metric values per benchmark and target and pairs them.
func parse(r io.Reader) ([]row, error) {
	values := map[key]map[string]*mean{}
	var order []key
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		name := runSuffix.ReplaceAllString(procSuffix.ReplaceAllString(fields[0], ""), "$1")
		i := strings.LastIndex(name, "/")
		if i < 0 {
			continue
		}
		base, tgt := name[:i], name[i+1:]
		if !isTarget(tgt) {
			continue
		}
		// fields[1] is the iteration count; then value/unit pairs.
		for j := 2; j+1 < len(fields); j += 2 {
			v, err := strconv.ParseFloat(fields[j], 64)
			if err != nil {
				break
			}
			k := key{base, fields[j+1]}
			if values[k] == nil {
				values[k] = map[string]*mean{}
				order = append(order, k)
			}
			m := values[k][tgt]
			if m == nil {
				m = &mean{}
				values[k][tgt] = m
			}
			m.sum += v
			m.n++
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read benchmark output: %w", err)
	}
	var rows []row
	for _, p := range pairs {
		for _, k := range order {
			o, th := values[k][p.Ours], values[k][p.Theirs]
			if o == nil || th == nil || o.value() == 0 || th.value() == 0 {
				continue
			}
			name := k.base
			if k.unit != "ns/op" {
				name += " " + k.unit
			}
			rows = append(rows, row{Name: name, Pair: p, Ours: o.value(), Theirs: th.value(), Higher: higherIsBetter[k.unit]})
		}
	}
	return rows, nil
}

func isTarget(name string) bool {
	for _, p := range pairs {
		if name == p.Ours || name == p.Theirs {
			return true
		}
	}
	return false
}

// write prints one table per pair, ours first.
func write(w io.Writer, rows []row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, r := range rows {
		if i == 0 || r.Pair != rows[i-1].Pair {
			if i > 0 {
				fmt.Fprintln(tw)
			}
			fmt.Fprintf(tw, "name\t%s\t%s\tratio\n", r.Pair.Ours, r.Pair.Theirs)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\n", r.Name, num(r.Ours), num(r.Theirs), r.Ratio())
	}
	return tw.Flush()
}

// num prints v with the digits that mean something: averages of noisy runs
// need no more than four.
func num(v float64) string {
	if v >= 1000 || v == float64(int64(v)) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
