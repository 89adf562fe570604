package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dubbo-lab/dubbo/tools/benchout"
)

// Machine describes where and how the benchmarks ran: the lines `make
// bench` writes before it starts (key: value).
type Machine struct {
	Date, CPU, Cores, LoadAvg, Go, Kernel, Settings string
}

// ParseMachine reads key: value lines; unknown keys are ignored.
func ParseMachine(text string) Machine {
	var m Machine
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "date":
			m.Date = v
		case "cpu":
			m.CPU = v
		case "cores":
			m.Cores = v
		case "loadavg":
			m.LoadAvg = v
		case "go":
			m.Go = v
		case "kernel":
			m.Kernel = v
		case "settings":
			m.Settings = v
		}
	}
	return m
}

// headline is one row of the table the README shows.
type headline struct {
	Label string
	Base  string
	Unit  string
	Pair  benchout.Pair
}

var headlines = []headline{
	{"Greet over Triple calls/s, ghz, 32 callers on one connection: our plugin-backed provider vs a plain grpc-go server", "BenchmarkTripleGreet/c=32", "qps", benchout.Pair{Ours: "ours-plugin", Theirs: "grpcgo"}},
	{"Greet over Triple CPU per call, ghz, 32 callers: plugin-backed (node + plugin) vs grpc-go", "BenchmarkTripleGreet/c=32", "cpu_us", benchout.Pair{Ours: "ours-plugin", Theirs: "grpcgo"}},
	{"Greet over Triple calls/s, ghz, 32 callers: our plugin-backed provider vs dubbo-go's", "BenchmarkTripleGreet/c=32", "qps", benchout.Pair{Ours: "ours-plugin", Theirs: "dubbogo"}},
	{"sayHello calls/s, dubbo-go's consumer, 32 callers: our plugin-backed provider vs dubbo-go's", "BenchmarkSayHello/client=dubbogo/c=32", "qps", benchout.Pair{Ours: "ours-plugin", Theirs: "dubbogo"}},
	{"sayHello CPU per call, dubbo-go's consumer, 32 callers: plugin-backed vs dubbo-go's", "BenchmarkSayHello/client=dubbogo/c=32", "cpu_us", benchout.Pair{Ours: "ours-plugin", Theirs: "dubbogo"}},
	{"sayHello calls/s, our client, 32 callers: our provider vs dubbo-go's", "BenchmarkSayHello/client=ours/c=32", "qps", benchout.Pair{Ours: "ours", Theirs: "dubbogo"}},
	{"sayHello CPU per call, our client, 32 callers", "BenchmarkSayHello/client=ours/c=32", "cpu_us", benchout.Pair{Ours: "ours", Theirs: "dubbogo"}},
	{"sayHello p99, our client, 32 callers", "BenchmarkSayHello/client=ours/c=32", "p99_us", benchout.Pair{Ours: "ours", Theirs: "dubbogo"}},
	{"registry get, 16 clients: embedded vs Apache ZooKeeper", "BenchmarkRegistry/get/clients=16", "ns/op", benchout.Pair{Ours: "embedded", Theirs: "apache"}},
	{"registry set, 16 clients (fsync)", "BenchmarkRegistry/set/clients=16", "ns/op", benchout.Pair{Ours: "embedded", Theirs: "apache"}},
	{"registry create, 16 clients (fsync)", "BenchmarkRegistry/create/clients=16", "ns/op", benchout.Pair{Ours: "embedded", Theirs: "apache"}},
	{"registry set, 16 sessions of Apache's Java client (fsync)", "BenchmarkRegistryJavaClient/set/clients=16", "ns/op", benchout.Pair{Ours: "embedded", Theirs: "apache"}},
	{"registry get, 16 sessions of Apache's Java client: server CPU per op", "BenchmarkRegistryJavaClient/get/clients=16", "cpu_us", benchout.Pair{Ours: "embedded", Theirs: "apache"}},
	{"watch notification p99", "BenchmarkWatchLatency", "p99_us", benchout.Pair{Ours: "embedded", Theirs: "apache"}},
}

// names people read for the targets.
var targetNames = map[string]string{
	"ours": "ours", "ours-plugin": "ours, plugin", "dubbogo": "dubbo-go", "rawtcp": "raw TCP", "grpcgo": "grpc-go",
	"embedded": "embedded", "apache": "Apache ZooKeeper",
	"inprocess": "in-process", "plugin": "plugin", "floor": "floor", "": "ours",
}

func targetName(t string) string {
	if n, ok := targetNames[t]; ok {
		return n
	}
	return t
}

// units people read.
var unitNames = map[string]string{
	"qps": "calls/s", "cpu_us": "µs CPU per call", "p50_us": "p50 µs", "p99_us": "p99 µs",
	"ns/op": "µs/op", // shown in µs
}

func unitName(u string) string {
	if n, ok := unitNames[u]; ok {
		return n
	}
	return u
}

// shown is v as the report shows unit: ns/op in µs.
func shown(unit string, v float64) float64 {
	if unit == "ns/op" {
		return v / 1000
	}
	return v
}

// section is one part of the absolute figures: some families, the charts
// drawn of them and a sentence on what they are.
type section struct {
	Title  string
	Intro  string
	Match  func(family string) bool
	Charts []chartSpec
	Wide   bool // one table with a column per metric, a row per result
}

type chartSpec struct {
	File, Title, Unit string
	Match             func(unit string) bool // for Wide sections: which metrics
}

func family(name string) func(string) bool { return func(f string) bool { return f == name } }

func prefix(p string) func(string) bool {
	return func(f string) bool { return strings.HasPrefix(f, p) }
}

var sections = []section{
	{
		Title: "RPC: sayHello over dubbo://",
		Intro: "`test/interop`: sayHello(\"world\") from our client (`node/transport`, one connection) and from the stock dubbo-go v3.3.0 consumer (`dgbench`), " +
			"at 1 and 32 callers, against our provider (handler in-process), ours with the handler in the example plugin (`dubbo run --role=provider`), " +
			"a stock dubbo-go v3.3.0 provider and, for our client, a raw TCP echo of the same frame (the floor). Every server is its own process; " +
			"CPU per call is the serving processes' user + system time from /proc.",
		Match: family("BenchmarkSayHello"),
		Charts: []chartSpec{
			{File: "rpc-qps.svg", Title: "sayHello throughput", Unit: "qps"},
			{File: "rpc-cpu.svg", Title: "sayHello: the provider's CPU", Unit: "cpu_us"},
			{File: "rpc-p50.svg", Title: "sayHello latency", Unit: "p50_us"},
			{File: "rpc-p99.svg", Title: "sayHello latency", Unit: "p99_us"},
		},
	},
	{
		Title: "RPC: Greet over Triple",
		Intro: "`test/interop`'s `BenchmarkTripleGreet`: greet.GreetService's unary Greet from ghz (an independent gRPC load generator, its own process, one connection) " +
			"at 1 and 32 callers, against a plain grpc-go server of the same proto (`greetserver`), dubbo-go v3.3.0's Triple provider (`dgprovider -protocol tri`) " +
			"and ours, `dubbo run --role=provider` serving Triple with the examples/greet plugin, alternating rounds. CPU per call is the serving processes' user + system time " +
			"from /proc: node and plugin for ours.",
		Match: family("BenchmarkTripleGreet"),
		Charts: []chartSpec{
			{File: "triple-qps.svg", Title: "Greet over Triple throughput", Unit: "qps"},
			{File: "triple-cpu.svg", Title: "Greet over Triple: the provider's CPU", Unit: "cpu_us"},
		},
	},
	{
		Title: "The plugin path",
		Intro: "`plugins/benchtest`: sayHello through one real provider, the handler in-process, in a plugin process, and the floor " +
			"(a child answering every call on a plugin link with canned bytes). CPU per call counts the benchmark process and its children. " +
			"`ProviderPathTurns` runs the plugin and the floor in alternating turns of 2,000 calls; its `vs_floor` (the plugin's calls/s over the floor's) is the steadier ratio on a shared machine.",
		Match: prefix("BenchmarkProviderPath"),
		Charts: []chartSpec{
			{File: "plugin-qps.svg", Title: "plugin path throughput", Unit: "qps"},
			{File: "plugin-cpu.svg", Title: "plugin path CPU", Unit: "cpu_us"},
		},
	},
	{
		Title: "Registry operations: embedded vs Apache ZooKeeper 3.8",
		Intro: "`embeddedzk`: the same go-zookeeper workload (100-byte znodes, fsync on) against `dubbo run --role=registry` and Apache ZooKeeper 3.8, each its own process.",
		Match: family("BenchmarkRegistry"),
		Charts: []chartSpec{
			{File: "registry-ops.svg", Title: "registry operations", Unit: "ns/op"},
		},
	},
	{
		Title: "Registry operations driven by Apache's Java client",
		Intro: "`embeddedzk`: the same workload sent by Apache ZooKeeper's own Java client (the one Java Dubbo nodes use through Curator; " +
			"`internal/testkit/apachezk/zkbench`), one session per thread, one JVM per case warmed up with 20,000 operations first. " +
			"ns/op is the client's own measure; cpu_us is the server process's user + system time per operation, from /proc.",
		Match: family("BenchmarkRegistryJavaClient"),
		Charts: []chartSpec{
			{File: "registry-java-ops.svg", Title: "registry operations, Java client", Unit: "ns/op"},
			{File: "registry-java-cpu.svg", Title: "registry server CPU, Java client", Unit: "cpu_us"},
		},
	},
	{
		Title: "Watch notification latency",
		Intro: "`embeddedzk`: from a write to the watcher's notification, another session's one-shot watch.",
		Match: family("BenchmarkWatchLatency"),
		Charts: []chartSpec{
			{File: "watch-p50.svg", Title: "watch notification latency", Unit: "p50_us"},
			{File: "watch-p99.svg", Title: "watch notification latency", Unit: "p99_us"},
		},
	},
	{
		Title: "Failure detection and recovery",
		Intro: "`test/fault`'s `BenchmarkFault*`: each iteration a whole scenario with fresh processes under 8 callers; times in ms, the mean over the iterations; " +
			"`failed_calls` is what the fault cost (the fault tests require 0). kill -9: `drop_ms` until the consumer stops listing the provider. " +
			"SIGTERM: `unregister_ms` until its node leaves the registry. Own node deleted: `reregister_ms` until the provider created it again, `relist_ms` until the consumer lists it again. " +
			"Session expiry (traffic black-holed past a 1.5 s session): `expire_ms`, `drop_ms` from the partition, `reregister_ms`, `relist_ms` from its end. " +
			"Registry killed with -9 and down 3 s while a provider starts: `restart_ms` from launch to ruok, `found_ms` until the consumer lists the new provider, `sessions_kept` of 2.",
		Match: prefix("BenchmarkFault"),
		Wide:  true,
		Charts: []chartSpec{
			{File: "faults.svg", Title: "failure detection and recovery", Unit: "ms", Match: func(u string) bool { return strings.HasSuffix(u, "_ms") }},
		},
	},
	{
		Title: "Scale",
		Intro: "`BenchmarkScale*`: many services, nodes and consumers on one registry; every metric as the benchmark reported it.",
		Match: prefix("BenchmarkScale"),
		Wide:  true,
	},
}

// Report is everything one report is made of.
type Report struct {
	Machine Machine
	In      *benchout.Input
}

// Charts are the SVG files of the report, by file name.
func (r Report) Charts() map[string]string {
	out := map[string]string{}
	fams := r.In.Families()
	for _, s := range sections {
		for _, c := range s.Charts {
			if ch, ok := r.chart(s, c, fams); ok {
				out[c.File] = ch.SVG()
			}
		}
	}
	return out
}

// chart gathers the bars of one chart spec; false when there are none.
func (r Report) chart(s section, c chartSpec, fams []*benchout.Family) (BarChart, bool) {
	ch := BarChart{Title: c.Title, Unit: unitName(c.Unit)}
	if c.Unit == "ns/op" {
		ch.Unit = "µs/op"
	}
	for _, f := range fams {
		if !s.Match(f.Name) {
			continue
		}
		for _, base := range f.Bases {
			units := []string{c.Unit}
			if c.Match != nil {
				units = f.Units
			}
			for _, u := range units {
				if c.Match != nil && !c.Match(u) {
					continue
				}
				g := Group{Label: or(caseName(f.Name, base), short(f.Name))}
				if c.Match != nil {
					g.Label = short(base) + " " + strings.TrimSuffix(u, "_ms")
				}
				for _, t := range f.Targets {
					if res := f.Get(base, t); res != nil {
						if v, ok := res.Value(u); ok {
							g.Bars = append(g.Bars, Bar{Target: t, Value: shown(u, v)})
						}
					}
				}
				if len(g.Bars) > 0 {
					ch.Groups = append(ch.Groups, g)
				}
			}
		}
	}
	return ch, len(ch.Groups) > 0
}

// short drops the family's "Benchmark" prefix.
func short(name string) string { return strings.TrimPrefix(name, "Benchmark") }

// Write writes REPORT.md.
func (r Report) Write(w io.Writer) error {
	ew := &errWriter{w: w}
	m := r.Machine
	ew.printf("# Benchmark report\n\n")
	ew.printf("Written by `make bench` (`tools/benchreport`) from one run of every benchmark below on one machine, %s. ", or(m.Date, "date unknown"))
	ew.printf("Within each benchmark the targets alternate, so they share the machine's moods: the ratios are what to read; " +
		"the absolute figures move by 20–30 %% between runs on these shared cores.\n\n")
	ew.printf("## Machine\n\n| | |\n|---|---|\n")
	ew.printf("| CPU | %s |\n| cores | %s |\n| load average at start (1, 5, 15 min) | %s |\n| Go | %s |\n| kernel | %s |\n| date | %s |\n| settings | %s |\n\n",
		or(m.CPU, r.In.CPU), m.Cores, m.LoadAvg, m.Go, m.Kernel, m.Date, m.Settings)

	ratios := r.In.Ratios()
	ew.printf("## Ratios\n\nAbove 1 means ours is better: theirs ÷ ours for times and costs, ours ÷ theirs for rates (calls/s).\n\n")
	ew.printf("### Headline\n\n")
	ew.printf("%s\n", r.Headline())
	ew.printf("### Every pair\n\n")
	var last benchout.Pair
	for i, ra := range ratios {
		if i == 0 || ra.Pair != last {
			last = ra.Pair
			ew.printf("\n**%s vs %s**\n\n| benchmark | metric | %s | %s | ratio |\n|---|---|---:|---:|---:|\n",
				targetName(ra.Pair.Ours), targetName(ra.Pair.Theirs), targetName(ra.Pair.Ours), targetName(ra.Pair.Theirs))
		}
		ew.printf("| %s | %s | %s | %s | %s |\n", short(ra.Base), unitName(ra.Unit),
			num(shown(ra.Unit, ra.Ours)), num(shown(ra.Unit, ra.Theirs)), strconv.FormatFloat(ra.Value(), 'f', 2, 64))
	}
	if len(ratios) == 0 {
		ew.printf("No pair was measured.\n")
	}

	ew.printf("\n## Absolute figures\n\n")
	fams := r.In.Families()
	used := map[string]bool{}
	for _, s := range sections {
		var mine []*benchout.Family
		for _, f := range fams {
			if s.Match(f.Name) {
				mine = append(mine, f)
				used[f.Name] = true
			}
		}
		if len(mine) == 0 {
			continue
		}
		ew.printf("### %s\n\n%s\n\n", s.Title, s.Intro)
		for _, c := range s.Charts {
			if _, ok := r.chart(s, c, fams); ok {
				ew.printf("![%s](%s)\n\n", c.Title, c.File)
			}
		}
		for _, f := range mine {
			if s.Wide || slices.Equal(f.Targets, []string{""}) { // a family of ours alone
				wideTable(ew, f)
			} else {
				targetTables(ew, f)
			}
		}
	}
	var other []*benchout.Family
	for _, f := range fams {
		if !used[f.Name] {
			other = append(other, f)
		}
	}
	if len(other) > 0 {
		ew.printf("### Other benchmarks\n\nEvery other benchmark (start-up, memory, the monitor store, the console's pages), as reported.\n\n")
		for _, f := range other {
			wideTable(ew, f)
		}
	}
	return ew.err
}

// Headline is the short table of ratios against the peers, for the README.
func (r Report) Headline() string {
	ratios := r.In.Ratios()
	var b strings.Builder
	b.WriteString("| | ours | theirs | ratio |\n|---|---:|---:|---:|\n")
	n := 0
	for _, h := range headlines {
		ra, ok := benchout.Find(ratios, h.Base, h.Unit, h.Pair)
		if !ok {
			continue
		}
		n++
		fmt.Fprintf(&b, "| %s | %s %s | %s %s | %.2f |\n", h.Label,
			num(shown(h.Unit, ra.Ours)), unitName(h.Unit), num(shown(h.Unit, ra.Theirs)), unitName(h.Unit), ra.Value())
	}
	if n == 0 {
		return "No headline pair was measured.\n"
	}
	return b.String()
}

// targetTables writes a table per metric: a row per case, a column per
// target.
func targetTables(ew *errWriter, f *benchout.Family) {
	for _, u := range f.Units {
		if u == "B/op" || u == "allocs/op" || (u == "ns/op" && slices.Contains(f.Units, "qps")) || measuredOn(f, u) < 2 {
			continue // the client's allocations, or nothing to compare
		}
		ew.printf("%s, %s:\n\n| case |", short(f.Name), unitName(u))
		for _, t := range f.Targets {
			ew.printf(" %s |", targetName(t))
		}
		ew.printf("\n|---|%s\n", strings.Repeat("---:|", len(f.Targets)))
		for _, base := range f.Bases {
			ew.printf("| %s |", or(caseName(f.Name, base), "all"))
			for _, t := range f.Targets {
				cell := ""
				if res := f.Get(base, t); res != nil {
					if v, ok := res.Value(u); ok {
						cell = num(shown(u, v))
					}
				}
				ew.printf(" %s |", cell)
			}
			ew.printf("\n")
		}
		ew.printf("\n")
	}
}

// measuredOn counts the targets that reported unit.
func measuredOn(f *benchout.Family, u string) int {
	n := 0
	for _, t := range f.Targets {
		for _, base := range f.Bases {
			if res := f.Get(base, t); res != nil {
				if _, ok := res.Value(u); ok {
					n++
					break
				}
			}
		}
	}
	return n
}

// wideTable writes one row per result with a column per metric, as
// reported (a family whose metrics differ between cases).
func wideTable(ew *errWriter, f *benchout.Family) {
	ew.printf("| %s |", short(f.Name))
	for _, u := range f.Units {
		ew.printf(" %s |", u)
	}
	ew.printf("\n|---|%s\n", strings.Repeat("---:|", len(f.Units)))
	for _, base := range f.Bases {
		for _, t := range f.Targets {
			res := f.Get(base, t)
			if res == nil {
				continue
			}
			name := caseName(f.Name, base)
			if t != "" {
				name = strings.TrimPrefix(name+" "+targetName(t), " ")
			}
			ew.printf("| %s |", or(name, "all"))
			for _, u := range f.Units {
				cell := ""
				if v, ok := res.Value(u); ok {
					cell = num(v)
				}
				ew.printf(" %s |", cell)
			}
			ew.printf("\n")
		}
	}
	ew.printf("\n")
}

// caseName is base without its family, the load generators named.
func caseName(fam, base string) string {
	return caseNames.Replace(strings.TrimPrefix(strings.TrimPrefix(base, fam), "/"))
}

var caseNames = strings.NewReplacer("client=ours/", "our client, ", "client=dubbogo/", "dubbo-go's consumer, ")

// num prints v with the digits that mean something, thousands grouped.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	a := math.Abs(v)
	switch {
	case a >= 1000:
		return group(strconv.FormatFloat(v, 'f', 0, 64))
	case a >= 100 || v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// group puts commas between thousands of an integer's digits.
func group(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
