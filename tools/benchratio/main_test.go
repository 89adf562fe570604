package main

import (
	"reflect"
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

func TestParse(t *testing.T) {
	got, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	zk := pair{"embedded", "apache"}
	dg := pair{"ours", "dubbogo"}
	plugin := pair{"ours-plugin", "dubbogo"}
	want := []row{
		// Two embedded runs are averaged; unpaired results are dropped.
		{Name: "BenchmarkRegistry/get/clients=1", Pair: zk, Ours: 50000, Theirs: 80000},
		{Name: "BenchmarkWatchLatency", Pair: zk, Ours: 900000, Theirs: 1000000},
		{Name: "BenchmarkWatchLatency p50_us", Pair: zk, Ours: 300, Theirs: 450},
		{Name: "BenchmarkWatchLatency p99_us", Pair: zk, Ours: 600, Theirs: 900},
		// c=1#01 is a second run of c=1: averaged with the first.
		{Name: "BenchmarkSayHello/c=1", Pair: dg, Ours: 100000, Theirs: 200000},
		{Name: "BenchmarkSayHello/c=1 qps", Pair: dg, Ours: 10000, Theirs: 5000, Higher: true},
		{Name: "BenchmarkSayHello/c=1 p50_us", Pair: dg, Ours: 100, Theirs: 180},
		{Name: "BenchmarkSayHello/c=1 B/op", Pair: dg, Ours: 400, Theirs: 400},
		{Name: "BenchmarkSayHello/c=1 allocs/op", Pair: dg, Ours: 8, Theirs: 8},
		{Name: "BenchmarkSayHello/c=1", Pair: plugin, Ours: 400000, Theirs: 200000},
		{Name: "BenchmarkSayHello/c=1 qps", Pair: plugin, Ours: 2500, Theirs: 5000, Higher: true},
		{Name: "BenchmarkSayHello/c=1 p50_us", Pair: plugin, Ours: 380, Theirs: 180},
		{Name: "BenchmarkSayHello/c=1 B/op", Pair: plugin, Ours: 400, Theirs: 400},
		{Name: "BenchmarkSayHello/c=1 allocs/op", Pair: plugin, Ours: 8, Theirs: 8},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parse =\n%+v\nwant\n%+v", got, want)
	}
}

func TestRatio(t *testing.T) {
	tests := []struct {
		r    row
		want float64
	}{
		{row{Ours: 50000, Theirs: 80000}, 1.6},               // ours faster
		{row{Ours: 900, Theirs: 450}, 0.5},                   // ours slower
		{row{Ours: 20000, Theirs: 10000, Higher: true}, 2.0}, // ours has twice the qps
	}
	for _, tc := range tests {
		if got := tc.r.Ratio(); got != tc.want {
			t.Errorf("Ratio(%+v) = %v, want %v", tc.r, got, tc.want)
		}
	}
}

func TestWrite(t *testing.T) {
	var b strings.Builder
	if err := write(&b, []row{
		{Name: "BenchmarkRegistry/get/clients=1", Pair: pair{"embedded", "apache"}, Ours: 50000, Theirs: 80000},
		{Name: "BenchmarkSayHello/c=1 qps", Pair: pair{"ours", "dubbogo"}, Ours: 10000, Theirs: 5000, Higher: true},
	}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("output:\n%s", b.String())
	}
	if got := strings.Fields(lines[0]); !reflect.DeepEqual(got, []string{"name", "embedded", "apache", "ratio"}) {
		t.Errorf("header = %q", got)
	}
	if got := strings.Fields(lines[1]); !reflect.DeepEqual(got, []string{"BenchmarkRegistry/get/clients=1", "50000", "80000", "1.60"}) {
		t.Errorf("row = %q", got)
	}
	// A table per pair, with its targets in the header.
	if got := strings.Fields(lines[3]); !reflect.DeepEqual(got, []string{"name", "ours", "dubbogo", "ratio"}) {
		t.Errorf("second header = %q", got)
	}
	if got := strings.Fields(lines[4]); !reflect.DeepEqual(got, []string{"BenchmarkSayHello/c=1", "qps", "10000", "5000", "2.00"}) {
		t.Errorf("qps row = %q", got)
	}
}
