package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dubbo-lab/dubbo/tools/benchout"
)

// Any input either parses or is refused with an error, and whatever
// parses makes a report and well-formed charts.
func FuzzParse(f *testing.F) {
	f.Add("BenchmarkSayHello/client=ours/c=1/ours-2 \t 10000\t 100000 ns/op\t 10000 qps\t 90.0 p50_us\n")
	f.Add("BenchmarkStoreDay-2   \t2026/12/01 INFO log\n      60\t 199841554 ns/op\t 74.13 db-MB\n")
	f.Add("BenchmarkRegistry/get/clients=1/apache-2 \t 20000\t 80000 ns/op\nBenchmarkRegistry/get/clients=1/embedded-2 \t 40000\t 40000 ns/op\n")
	f.Add("BenchmarkScaleX/n=1-2 1 NaN p50_us +Inf rss_MB\n")
	f.Add("cpu: x\nBenchmarkA-2 1 x y\n")
	f.Fuzz(func(t *testing.T, text string) {
		in := &benchout.Input{}
		if err := in.Parse(strings.NewReader(text)); err != nil {
			return
		}
		r := Report{In: in}
		var b bytes.Buffer
		if err := r.Write(&b); err != nil {
			t.Fatal(err)
		}
		for name, svg := range r.Charts() {
			checkSVG(t, name, svg)
		}
	})
}
