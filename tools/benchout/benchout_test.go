package benchout

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A benchmark that logs gets its name on one line, the log, and its
// result on a line of its own; results are averaged over rounds (#01).
func TestParseLoggedAndRounds(t *testing.T) {
	const out = `cpu: Intel(R) Xeon(R) Processor
BenchmarkStoreDay-2   	2026/12/01 01:52:42 INFO monitor store retention hours_rolled_up=50
      60	 199841554 ns/op	        74.13 db-MB	    101127 rows/s
BenchmarkSayHello/client=ours/c=1/ours-2 	   10000	    100000 ns/op	     10000 qps
BenchmarkSayHello/client=ours/c=1#01/ours-2 	   10000	    100000 ns/op	     20000 qps
BenchmarkSayHello/client=ours/c=1/dubbogo-2 	   10000	    100000 ns/op	      5000 qps
--- FAIL: BenchmarkBroken
    bench_test.go:12: 3 of 10 calls failed
ok  	github.com/dubbo-lab/dubbo/monitor/store	17.126s
`
	in := &Input{}
	if err := in.Parse(strings.NewReader(out)); err != nil {
		t.Fatal(err)
	}
	if in.CPU != "Intel(R) Xeon(R) Processor" {
		t.Errorf("cpu %q", in.CPU)
	}
	if len(in.Results) != 3 {
		t.Fatalf("%d results, want 3: %+v", len(in.Results), in.Results)
	}
	store := in.Results[0]
	if v, _ := store.Value("rows/s"); store.Base != "BenchmarkStoreDay" || v != 101127 {
		t.Errorf("logged benchmark: %s rows/s %v, want BenchmarkStoreDay 101127", store.Base, v)
	}
	ours := in.Results[1]
	if v, _ := ours.Value("qps"); ours.Target != "ours" || ours.Base != "BenchmarkSayHello/client=ours/c=1" || v != 15000 {
		t.Errorf("rounds: %s/%s qps %v, want BenchmarkSayHello/client=ours/c=1/ours 15000", ours.Base, ours.Target, v)
	}
	r, ok := Find(in.Ratios(), "BenchmarkSayHello/client=ours/c=1", "qps", Pair{Ours: "ours", Theirs: "dubbogo"})
	if !ok || r.Value() != 3 {
		t.Errorf("ratio %+v %v, want 3", r, ok)
	}
	if _, ok := Find(in.Ratios(), "BenchmarkSayHello/client=ours/c=1", "ns/op", Pair{Ours: "ours", Theirs: "dubbogo"}); ok {
		t.Errorf("ns/op compared where calls/s says it")
	}
}

func TestRatioOrientation(t *testing.T) {
	tests := []struct {
		r    Ratio
		want float64
	}{
		{Ratio{Unit: "ns/op", Ours: 50000, Theirs: 80000}, 1.6},   // ours faster
		{Ratio{Unit: "p99_us", Ours: 900, Theirs: 450}, 0.5},      // ours slower
		{Ratio{Unit: "qps", Ours: 20000, Theirs: 10000}, 2},       // twice the calls/s
		{Ratio{Unit: "cpu_us", Ours: 30, Theirs: 90}, 3},          // a third of the CPU
		{Ratio{Unit: "reregister_ms", Ours: 10, Theirs: 20}, 2.0}, // back in half the time
	}
	for _, tc := range tests {
		if got := tc.r.Value(); got != tc.want {
			t.Errorf("%+v: ratio %v, want %v", tc.r, got, tc.want)
		}
	}
}

// Every pair is compared, ours first and pair by pair; a target with no
// partner and a unit both sides share by construction (our client's
// allocations) give no ratio.
func TestRatiosOfEveryPair(t *testing.T) {
	const out = `BenchmarkRegistry/get/clients=1/apache-2     20000  80000 ns/op
BenchmarkRegistry/get/clients=1/embedded-2   40000  40000 ns/op
BenchmarkStartup/embedded-2                     10  30000000 ns/op
BenchmarkSayHello/c=1/ours-2                 10000  100000 ns/op  10000 qps  400 B/op  8 allocs/op
BenchmarkSayHello/c=1/dubbogo-2              10000  200000 ns/op   5000 qps  400 B/op  8 allocs/op
BenchmarkSayHello/c=1/rawtcp-2               10000   50000 ns/op
BenchmarkProviderPath/c=1/inprocess-2        10000   10000 ns/op  40 cpu_us
BenchmarkProviderPath/c=1/plugin-2           10000   30000 ns/op  90 cpu_us
BenchmarkProviderPath/c=1/floor-2            10000   20000 ns/op  60 cpu_us
BenchmarkTripleGreet/c=32/grpcgo-2           10000  100000 ns/op  50 cpu_us  10000 qps
BenchmarkTripleGreet/c=32/dubbogo-2          10000  200000 ns/op  120 cpu_us  5000 qps
BenchmarkTripleGreet/c=32/ours-plugin-2      10000  100000 ns/op  40 cpu_us  12000 qps
`
	in := &Input{}
	if err := in.Parse(strings.NewReader(out)); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range in.Ratios() {
		got = append(got, fmt.Sprintf("%s %s %s/%s %.2f", r.Base, r.Unit, r.Pair.Ours, r.Pair.Theirs, r.Value()))
	}
	want := []string{
		"BenchmarkRegistry/get/clients=1 ns/op embedded/apache 2.00",
		"BenchmarkSayHello/c=1 qps ours/dubbogo 2.00",
		"BenchmarkTripleGreet/c=32 cpu_us ours-plugin/dubbogo 3.00",
		"BenchmarkTripleGreet/c=32 qps ours-plugin/dubbogo 2.40",
		"BenchmarkTripleGreet/c=32 cpu_us ours-plugin/grpcgo 1.25",
		"BenchmarkTripleGreet/c=32 qps ours-plugin/grpcgo 1.20",
		"BenchmarkProviderPath/c=1 ns/op plugin/inprocess 0.33",
		"BenchmarkProviderPath/c=1 cpu_us plugin/inprocess 0.44",
		"BenchmarkProviderPath/c=1 ns/op floor/inprocess 0.50",
		"BenchmarkProviderPath/c=1 cpu_us floor/inprocess 0.67",
		"BenchmarkProviderPath/c=1 ns/op plugin/floor 0.67",
		"BenchmarkProviderPath/c=1 cpu_us plugin/floor 0.67",
	}
	if !slices.Equal(got, want) {
		t.Errorf("ratios:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
