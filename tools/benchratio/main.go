// Command benchratio reads `go test -bench` output on stdin and prints, for
// every benchmark run against both targets of a pair, the two results side
// by side and their ratio, a table per pair:
//
//	go test -run '^$' -bench . ./embeddedzk/ | go run ./tools/benchratio
//
// The targets, the pairs (ours first) and the orientation of the ratios
// (above 1 means ours is better) are tools/benchout's, the same as in the
// benchmark report: /embedded vs /apache, /ours and /ours-plugin vs
// /dubbogo, /plugin and /floor vs /inprocess, /plugin vs /floor. Repeated
// runs (-count, or rounds that go test suffixes with #01, #02) are
// averaged.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"

	"github.com/dubbo-lab/dubbo/tools/benchout"
)

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "benchratio: %v\n", err)
		os.Exit(1)
	}
}

func run(r io.Reader, w io.Writer) error {
	in := &benchout.Input{}
	if err := in.Parse(r); err != nil {
		return err
	}
	ratios := in.Ratios()
	if len(ratios) == 0 {
		return errors.New("no benchmark ran on both targets of a pair (embedded/apache, ours/dubbogo, ...) in the input; pipe `go test -bench` output in")
	}
	return write(w, ratios)
}

// write prints one table per pair, ours first.
func write(w io.Writer, ratios []benchout.Ratio) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, r := range ratios {
		if i == 0 || r.Pair != ratios[i-1].Pair {
			if i > 0 {
				fmt.Fprintln(tw)
			}
			fmt.Fprintf(tw, "name\t%s\t%s\tratio\n", r.Pair.Ours, r.Pair.Theirs)
		}
		name := r.Base
		if r.Unit != "ns/op" {
			name += " " + r.Unit
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\n", name, num(r.Ours), num(r.Theirs), r.Value())
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
