// Command benchratio reads `go test -bench` output on stdin and prints, for
// every benchmark run against both servers (names that differ only in a
// final /apache or /embedded element), the two results side by side and
// their ratio:
//
//	go test -run '^$' -bench . ./embeddedzk/ | go run ./internal/benchratio
//
// Every metric printed by these benchmarks is "lower is better" (ns/op,
// p50_us, p99_us, ...), so ratio = apache ÷ embedded, and a ratio above 1
// means the embedded server is better. For ns/op that is the throughput
// ratio. Repeated runs (-count) are averaged.
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
		fmt.Fprintln(os.Stderr, "benchratio: no apache/embedded pairs in the input; pipe `go test -bench` output in")
		os.Exit(1)
	}
	if err := write(os.Stdout, rows); err != nil {
		fmt.Fprintf(os.Stderr, "benchratio: %v\n", err)
		os.Exit(1)
	}
}

// row is one metric of one benchmark measured on both targets.
type row struct {
	Name     string // benchmark without the target, plus the unit unless ns/op
	Embedded float64
	Apache   float64
}

// Ratio is apache ÷ embedded: above 1 the embedded server is better.
func (r row) Ratio() float64 { return r.Apache / r.Embedded }

// procSuffix is the -GOMAXPROCS suffix go test appends to names.
var procSuffix = regexp.MustCompile(`-\d+$`)

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
		name := procSuffix.ReplaceAllString(fields[0], "")
		i := strings.LastIndex(name, "/")
		if i < 0 {
			continue
		}
		base, tgt := name[:i], name[i+1:]
		if tgt != "apache" && tgt != "embedded" {
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
	for _, k := range order {
		a, e := values[k]["apache"], values[k]["embedded"]
		if a == nil || e == nil || e.value() == 0 {
			continue
		}
		name := k.base
		if k.unit != "ns/op" {
			name += " " + k.unit
		}
		rows = append(rows, row{Name: name, Embedded: e.value(), Apache: a.value()})
	}
	return rows, nil
}

func write(w io.Writer, rows []row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "name\tembedded\tapache\tratio")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\n", r.Name, num(r.Embedded), num(r.Apache), r.Ratio())
	}
	return tw.Flush()
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
