package embeddedzk_test

// Benchmarks comparing the embedded registry with Apache ZooKeeper 3.8 on
// the same machine, alternating targets inside each case. Pipe the output
// through tools/benchratio for side-by-side ratios:
//
//	go test -run '^$' -bench . -benchtime 2s ./embeddedzk/ | go run ./tools/benchratio

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
	"github.com/dubbo-lab/dubbo/internal/testkit/benchcalls"
)

// benchTick is the tickTime of benchmark servers (Apache's default).
const benchTick = 2 * time.Second

// startBenchTargets starts both servers for the whole benchmark function.
// The embedded registry runs as its own process (`dubbo run
// --role=registry`), like Apache: in-process it would skip the cross-process
// wake-ups that dominate latency on a busy machine. fsync is on for both.
func startBenchTargets(b *testing.B) []target {
	b.Helper()
	reg := newRegistryProcess(b, buildDubbo(b))
	reg.start(b)
	apache := apachezk.Start(b, apachezk.Options{TickTime: benchTick})
	return []target{
		{name: "apache", addr: apache.Addr(), pid: apache.PID()},
		{name: "embedded", addr: reg.addr, pid: reg.cmd.Process.Pid},
	}
}

// payload100 is the 100-byte znode data every benchmark writes.
func payload100() []byte { return []byte(strings.Repeat("p", 100)) }

// BenchmarkRegistry measures get, set and create of 100-byte znodes with 1
// and 16 concurrent go-zookeeper clients; fsync is on for both servers.
func BenchmarkRegistry(b *testing.B) {
	targets := startBenchTargets(b)
	var round atomic.Int64
	for _, op := range []string{"get", "set", "create"} {
		for _, clients := range []int{1, 16} {
			for _, tg := range targets {
				b.Run(fmt.Sprintf("%s/clients=%d/%s", op, clients, tg.name), func(b *testing.B) {
					base := fmt.Sprintf("/bench-%s-%d-%d", op, clients, round.Add(1))
					conns := make([]*zk.Conn, clients)
					for i := range conns {
						conns[i] = benchConnect(b, tg)
					}
					do := benchOp(b, op, base, conns)
					b.ResetTimer()
					runParallelClients(b, clients, do)
				})
			}
		}
	}
}

// BenchmarkRegistryJavaClient is BenchmarkRegistry driven by Apache's own
// Java client, which Java Dubbo nodes use through Curator: a gain only our
// Go client saw would be none for them. One JVM per case is kept across
// the case's b.N rounds and warmed up first; ns/op is the client's own
// measure, cpu_us the server process's CPU per operation.
func BenchmarkRegistryJavaClient(b *testing.B) {
	targets := startBenchTargets(b)
	classes := apachezk.JavaClasses(b)
	clients := map[string]*apachezk.JavaBench{}
	for _, op := range []string{"get", "set", "create"} {
		for _, n := range []int{1, 16} {
			for i, tg := range targets {
				name := fmt.Sprintf("%s/clients=%d/%s", op, n, tg.name)
				b.Run(name, func(sb *testing.B) {
					jb := clients[name]
					if jb == nil { // kept for the next round: the parent ends it
						jb = apachezk.StartJavaBench(b, classes, tg.addr, op, n, fmt.Sprintf("/java-%s-%d-%d", op, n, i))
						if _, err := jb.Run(20000); err != nil { // JIT warm-up
							sb.Fatal(err)
						}
						clients[name] = jb
					}
					sb.ResetTimer()
					cpu := benchcalls.StartCPU(sb, tg.pid)
					took, err := jb.Run(sb.N)
					if err != nil {
						sb.Fatal(err)
					}
					cpu.Report(sb, int64(sb.N))
					sb.ReportMetric(float64(took.Nanoseconds())/float64(sb.N), "ns/op")
				})
			}
		}
	}
}

// benchOp prepares the nodes an op needs and returns one call of it for
// client i, iteration n.
func benchOp(b *testing.B, op, base string, conns []*zk.Conn) func(i, n int) error {
	acl := zk.WorldACL(zk.PermAll)
	data := payload100()
	if _, err := conns[0].Create(base, nil, 0, acl); err != nil {
		b.Fatalf("create %s: %v", base, err)
	}
	for i := range conns {
		if _, err := conns[0].Create(fmt.Sprintf("%s/%d", base, i), data, 0, acl); err != nil {
			b.Fatalf("create: %v", err)
		}
	}
	switch op {
	case "get":
		return func(i, _ int) error {
			_, _, err := conns[i].Get(fmt.Sprintf("%s/%d", base, i))
			return err
		}
	case "set":
		return func(i, _ int) error {
			_, err := conns[i].Set(fmt.Sprintf("%s/%d", base, i), data, -1)
			return err
		}
	default:
		return func(i, n int) error {
			_, err := conns[i].Create(fmt.Sprintf("%s/%d/%d", base, i, n), data, 0, acl)
			return err
		}
	}
}

// runParallelClients splits b.N calls among n client goroutines.
func runParallelClients(b *testing.B, n int, do func(i, n int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1))
				if k > b.N {
					return
				}
				if err := do(i, k); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

func benchConnect(b *testing.B, tg target) *zk.Conn {
	b.Helper()
	conn, _, err := zk.Connect([]string{tg.addr}, 10*time.Second, zk.WithLogger(nopLogger{}), zk.WithLogInfo(false))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(conn.Close)
	deadline := time.Now().Add(10 * time.Second)
	for conn.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			b.Fatalf("no session with %s after 10s", tg.name)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return conn
}

// BenchmarkWatchLatency measures the time from just before setData until the
// watching client has the NodeDataChanged event, reported as p50_us/p99_us.
func BenchmarkWatchLatency(b *testing.B) {
	for _, tg := range startBenchTargets(b) {
		b.Run(tg.name, func(b *testing.B) {
			watcher, writer := benchConnect(b, tg), benchConnect(b, tg)
			p := fmt.Sprintf("/bench-watch-%d", time.Now().UnixNano())
			data := payload100()
			if _, err := writer.Create(p, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				_, _, ch, err := watcher.GetW(p)
				if err != nil {
					b.Fatal(err)
				}
				arrived := make(chan time.Time, 1)
				go func() {
					<-ch
					arrived <- time.Now()
				}()
				start := time.Now()
				if _, err := writer.Set(p, data, -1); err != nil {
					b.Fatal(err)
				}
				select {
				case at := <-arrived:
					lat = append(lat, at.Sub(start))
				case <-time.After(5 * time.Second):
					b.Fatalf("no watch event within 5s")
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(percentile(lat, 50).Microseconds()), "p50_us")
			b.ReportMetric(float64(percentile(lat, 99).Microseconds()), "p99_us")
		})
	}
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100]
}

// BenchmarkStartup measures how long until a fresh server answers ruok:
// embeddedzk.New + Serve on an empty data dir, and for comparison the Apache
// JVM from exec to ready (ruok and srvr polled every 100ms, so coarser).
func BenchmarkStartup(b *testing.B) {
	b.Run("embedded", func(b *testing.B) {
		for range b.N {
			addr := startEmbedded(b, benchTick).String()
			deadline := time.Now().Add(10 * time.Second)
			for {
				out, err := apachezk.FourLetter(addr, "ruok", time.Second)
				if err == nil && out == "imok" {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("no imok within 10s: %q, %v", out, err)
				}
				time.Sleep(time.Millisecond)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
	})
	b.Run("apache", func(b *testing.B) {
		for range b.N {
			apachezk.Start(b, apachezk.Options{TickTime: benchTick}).Stop()
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
	})
}

// BenchmarkMemory100k creates 100,000 znodes of 100 bytes and reports the
// server process's resident memory (VmRSS): Apache's JVM and `dubbo run
// --role=registry`, each measured alone. The work is done once per target;
// later b.N rounds re-report the same figures. ns/op is the mean time per
// create. fsync is off: this measures memory, not the disk.
func BenchmarkMemory100k(b *testing.B) {
	const nodes, workers = 100_000, 64
	type result struct{ nsPerCreate, rssMB float64 }
	results := map[string]result{}
	for _, name := range []string{"apache", "embedded"} {
		b.Run(name, func(b *testing.B) {
			r, ok := results[name]
			if !ok {
				var addr string
				var pid int
				if name == "apache" {
					srv := apachezk.Start(b, apachezk.Options{TickTime: benchTick, DisableFsync: true})
					addr, pid = srv.Addr(), srv.PID()
				} else {
					reg := newRegistryProcess(b, buildDubbo(b))
					reg.extra = []string{"--set", "registry.server.fsync=false"}
					reg.start(b)
					addr, pid = reg.addr, reg.cmd.Process.Pid
				}
				tg := target{name: name, addr: addr}
				start := time.Now()
				createMany(b, tg, nodes, workers)
				elapsed := time.Since(start)
				rss, err := vmRSS(pid)
				if err != nil {
					b.Fatal(err)
				}
				r = result{float64(elapsed.Nanoseconds()) / nodes, rss}
				results[name] = r
			}
			b.ReportMetric(r.nsPerCreate, "ns/op")
			b.ReportMetric(r.rssMB, "rss_MB")
		})
	}
}

// createMany creates n 100-byte znodes with workers goroutines over four
// connections (go-zookeeper pipelines concurrent calls on one connection).
func createMany(b *testing.B, tg target, n, workers int) {
	conns := make([]*zk.Conn, 4)
	for i := range conns {
		conns[i] = benchConnect(b, tg)
	}
	acl := zk.WorldACL(zk.PermAll)
	data := payload100()
	const parents = 100 // keep child lists short, as a registry's are
	for i := range parents {
		if _, err := conns[0].Create(fmt.Sprintf("/mem%d", i), nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	deadline := time.Now().Add(5 * time.Minute)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := conns[w%len(conns)]
			for {
				k := int(next.Add(1)) - 1
				if k >= n || time.Now().After(deadline) {
					return
				}
				if _, err := c.Create(fmt.Sprintf("/mem%d/n%07d", k%parents, k), data, 0, acl); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		b.Fatalf("create: %v", err)
	}
	if int(next.Load()) < n {
		b.Fatalf("only %d of %d creates within 5 minutes", next.Load(), n)
	}
}

// vmRSS reads a process's resident set size in MB from /proc.
func vmRSS(pid int) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read RSS: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmRSS %q: %w", v, err)
			}
			return kb / 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
