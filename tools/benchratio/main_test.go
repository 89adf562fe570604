package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/dubbo-lab/dubbo/embeddedzk
cpu: Intel(R) Xeon(R)
BenchmarkRegistry/get/clients=1/apache-2         	   20000	     80000 ns/op
BenchmarkRegistry/get/clients=1/embedded-2       	   40000	     40000 ns/op
BenchmarkRegistry/get/clients=1/embedded-2       	   40000	     60000 ns/op
BenchmarkRegistry/set/clients=16/apache-2        	   10000	     50000 ns/op
BenchmarkWatchLatency/embedded-2                 	     500	    900000 ns/op	       300.0 p50_us	       600.0 p99_us
BenchmarkWatchLatency/apache-2                   	     500	   1000000 ns/op	       450.0 p50_us	       900.0 p99_us
BenchmarkStartup/embedded-2                      	      10	  30000000 ns/op	        30.00 ms/op
BenchmarkSayHello/c=1/ours-2                     	   10000	    100000 ns/op	     10000 qps	        90.00 p50_us	    400 B/op	       8 allocs/op
BenchmarkSayHello/c=1/dubbogo-2                  	   10000	    200000 ns/op	      5000 qps	       180.0 p50_us	    400 B/op	       8 allocs/op
BenchmarkSayHello/c=1/ours-plugin-2              	   10000	    400000 ns/op	      2500 qps	       380.0 p50_us	    400 B/op	       8 allocs/op
BenchmarkSayHello/c=1/rawtcp-2                   	   10000	     50000 ns/op
BenchmarkSayHello/c=1#01/ours-2                  	   10000	    100000 ns/op	     10000 qps	       110.0 p50_us	    400 B/op	       8 allocs/op
--- FAIL: BenchmarkSomething
PASS
ok  	github.com/dubbo-lab/dubbo/embeddedzk	42.0s
`

// A table per pair with its targets in the header; runs of one name are
// averaged (two embedded runs of get, and c=1#01 a second round of c=1);
// results without their pair's other side are left out; every ratio is
// above 1 when ours is better, whatever the unit.
func TestRun(t *testing.T) {
	var b strings.Builder
	if err := run(strings.NewReader(sample), &b); err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"name", "embedded", "apache", "ratio"},
		{"BenchmarkRegistry/get/clients=1", "50000", "80000", "1.60"},
		{"BenchmarkWatchLatency", "900000", "1000000", "1.11"},
		{"BenchmarkWatchLatency", "p50_us", "300", "450", "1.50"},
		{"BenchmarkWatchLatency", "p99_us", "600", "900", "1.50"},
		{},
		{"name", "ours", "dubbogo", "ratio"},
		{"BenchmarkSayHello/c=1", "qps", "10000", "5000", "2.00"},
		{"BenchmarkSayHello/c=1", "p50_us", "100", "180", "1.80"},
		{},
		{"name", "ours-plugin", "dubbogo", "ratio"},
		{"BenchmarkSayHello/c=1", "qps", "2500", "5000", "0.50"},
		{"BenchmarkSayHello/c=1", "p50_us", "380", "180", "0.47"},
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), b.String())
	}
	for i, line := range lines {
		if got := strings.Fields(line); strings.Join(got, " ") != strings.Join(want[i], " ") {
			t.Errorf("line %d = %q, want %q", i+1, got, want[i])
		}
	}
}

func TestRunWithoutPairs(t *testing.T) {
	var b strings.Builder
	err := run(strings.NewReader("BenchmarkStartup/embedded-2  10  30000000 ns/op\n"), &b)
	if err == nil || !strings.Contains(err.Error(), "pipe `go test -bench` output in") {
		t.Errorf("input without a pair: %v, want an error saying what to pipe in", err)
	}
}
