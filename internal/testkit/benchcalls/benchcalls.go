// Package benchcalls runs the calls of a Go benchmark with loadgen,
// the engine of `dubbo bench`, and reports what every RPC benchmark of the
// project reports: qps, p50_us and p99_us, and cpu_us, the CPU time the
// serving processes spent per call (tools/benchratio reads them).
package benchcalls

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/dubbo-lab/dubbo/loadgen"
)

// Measure makes b.N calls of call from conc goroutines. A failed call
// fails the benchmark; call says why with b.Error when the error alone
// would not. With servers given (process ids), it also reports cpu_us:
// the CPU time those processes and every process below them (a provider's
// plugins) spent per call, user and system, from /proc.
func Measure(b *testing.B, conc int, call loadgen.CallFunc, servers ...int) {
	b.Helper()
	b.ReportAllocs()
	cpu := StartCPU(b, servers...)
	b.ResetTimer()
	s := loadgen.Run(context.Background(), loadgen.Options{Concurrency: conc, Calls: int64(b.N)}, call)
	b.StopTimer()
	if s.Errors > 0 {
		b.Fatalf("%d of %d calls failed: %v", s.Errors, s.Calls, s.ErrorsByKind)
	}
	b.ReportMetric(s.QPS, "qps")
	b.ReportMetric(float64(s.P50us), "p50_us")
	b.ReportMetric(float64(s.P99us), "p99_us")
	cpu.Report(b, s.Calls)
}

// A CPUMeter measures the CPU time some processes spend from its start.
type CPUMeter struct {
	pids  []int
	start time.Duration
}

// StartCPU starts measuring the CPU time of pids and their descendants;
// with no pids it measures nothing and Report reports nothing.
func StartCPU(b *testing.B, pids ...int) *CPUMeter {
	b.Helper()
	m := &CPUMeter{pids: pids}
	if len(pids) > 0 {
		var err error
		if m.start, err = CPU(pids...); err != nil {
			b.Fatal(err)
		}
	}
	return m
}

// Report reports cpu_us: the CPU time spent since StartCPU per call.
func (m *CPUMeter) Report(b *testing.B, calls int64) {
	b.Helper()
	if len(m.pids) == 0 || calls == 0 {
		return
	}
	end, err := CPU(m.pids...)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64((end-m.start).Microseconds())/float64(calls), "cpu_us")
}

// CPU is the CPU time (user and system) that the processes pids and every
// live process below them have used so far.
func CPU(pids ...int) (time.Duration, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, fmt.Errorf("cpu time: %w", err)
	}
	all, err := fs.AllProcs()
	if err != nil {
		return 0, fmt.Errorf("cpu time: %w", err)
	}
	parent := map[int]int{}
	cpu := map[int]float64{}
	for _, p := range all {
		st, err := p.Stat()
		if err != nil {
			continue // ended meanwhile
		}
		parent[p.PID] = st.PPID
		cpu[p.PID] = st.CPUTime()
	}
	want := map[int]bool{}
	for _, pid := range pids {
		if _, ok := cpu[pid]; !ok {
			return 0, fmt.Errorf("cpu time: no process %d", pid)
		}
		want[pid] = true
	}
	var secs float64
	for pid, c := range cpu {
		for p := pid; p > 1; p = parent[p] {
			if want[p] {
				secs += c
				break
			}
		}
	}
	return time.Duration(secs * float64(time.Second)), nil
}
