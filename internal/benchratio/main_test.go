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
--- FAIL: BenchmarkSomething
PASS
ok  	github.com/dubbo-lab/dubbo/embeddedzk	42.0s
`

func TestParse(t *testing.T) {
	got, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	want := []row{
		// Two embedded runs are averaged; unpaired results are dropped.
		{Name: "BenchmarkRegistry/get/clients=1", Embedded: 50000, Apache: 80000},
		{Name: "BenchmarkWatchLatency", Embedded: 900000, Apache: 1000000},
		{Name: "BenchmarkWatchLatency p50_us", Embedded: 300, Apache: 450},
		{Name: "BenchmarkWatchLatency p99_us", Embedded: 600, Apache: 900},
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
		{row{Embedded: 50000, Apache: 80000}, 1.6}, // embedded faster
		{row{Embedded: 900, Apache: 450}, 0.5},     // embedded slower
	}
	for _, tc := range tests {
		if got := tc.r.Ratio(); got != tc.want {
			t.Errorf("Ratio(%+v) = %v, want %v", tc.r, got, tc.want)
		}
	}
}

func TestWrite(t *testing.T) {
	var b strings.Builder
	if err := write(&b, []row{{Name: "BenchmarkRegistry/get/clients=1", Embedded: 50000, Apache: 80000}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("output:\n%s", b.String())
	}
	if got := strings.Fields(lines[0]); !reflect.DeepEqual(got, []string{"name", "embedded", "apache", "ratio"}) {
		t.Errorf("header = %q", got)
	}
	if got := strings.Fields(lines[1]); !reflect.DeepEqual(got, []string{"BenchmarkRegistry/get/clients=1", "50000", "80000", "1.60"}) {
		t.Errorf("row = %q", got)
	}
}
