package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/console"
	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/monitor/store"
	"github.com/dubbo-lab/dubbo/node/stats/histogram"
)

// Benchmark scale: the scale suite's registry (test/scale): 500 services,
// 10,000 providers and 10,000 consumer nodes (200 consumers of 50 services).
const (
	benchServices  = 500
	benchProviders = 20 // per service
	benchConsumers = 20 // per service
)

// benchMinutes is how many minutes of reports the benchmarks' store holds
// up to now: the service page's default window.
const benchMinutes = 15

// benchMethods are the methods every service has.
var benchMethods = []string{"find", "save"}

// reported stores what the nodes of bigRegistry report in the last
// benchMinutes minutes: every provider's calls of every method from one
// of its service's consumers, on both sides, once a minute, as a
// dubbo node's report with its histogram (40,000 rows a minute).
func reported(b *testing.B, st *store.Store) {
	b.Helper()
	var h histogram.Counts
	h[histogram.Of(time.Millisecond)], h[histogram.Of(5*time.Millisecond)], h[histogram.Of(40*time.Millisecond)] = 90, 9, 1
	hist := h.Sparse()
	end := time.Now().Unix() / 60 * 60
	start := time.Now()
	rows := make([]store.Row, 0, benchServices*benchProviders*len(benchMethods)*2)
	for m := range int64(benchMinutes) {
		rows = rows[:0]
		at := end - 60*m
		for s := range benchServices {
			iface := fmt.Sprintf("com.example.shop.Service%03d", s)
			for p := range benchProviders {
				addr := fmt.Sprintf("10.1.%d.%d:20880", s%250, p+1)
				n := (s/50*benchConsumers + p) % 200 // a consumer of the service (bigRegistry's consumer n)
				host := fmt.Sprintf("10.2.%d.%d", n/250, n%250+1)
				for _, method := range benchMethods {
					r := store.Row{Time: at, Interval: 60, Interface: iface, Version: "1.0.0", Method: method, Address: addr, Consumer: host,
						Success: 99, Failure: int64(s % 2), ElapsedMs: 250, MaxElapsedMs: 40, Concurrent: 1, MaxConcurrent: 3, Histogram: hist}
					prov, cons := r, r
					prov.Side, prov.Application, prov.Node = store.SideProvider, fmt.Sprintf("shop-app-%d", s%50), addr+"#1#1700000000"
					cons.Side, cons.Application, cons.Node = store.SideConsumer, fmt.Sprintf("web-%d", n), host+"#2#1700000000"
					rows = append(rows, prov, cons)
				}
			}
		}
		if _, err := st.Insert(testCtx(b), rows); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("stored %d minutes of %d rows in %v", benchMinutes, len(rows), time.Since(start).Round(time.Millisecond))
}

// benchClock is the benchmarks' console clock: now, less lag.
type benchClock struct{ lag atomic.Int64 } // seconds

func (c *benchClock) Now() time.Time {
	return time.Now().Add(-time.Duration(c.lag.Load()) * time.Second)
}

// move moves the clock a minute back or forth: the lists' window moves,
// and their next render is the first of that window.
func (c *benchClock) move() { c.lag.Store(60 - c.lag.Load()) }

// bigRegistry fills a real embedded registry with benchServices services
// of benchProviders providers and benchConsumers consumers each, registered as Dubbo
// nodes write them, and returns a console over it, on clk, and a store of
// their reports (reported) once the console's copy holds them all.
func bigRegistry(b *testing.B, clk *benchClock) (*console.Console, *store.Store) {
	b.Helper()
	off := false
	zkAddr := zktest.StartEmbedded(b, embeddedzk.Config{Fsync: &off})
	conn, _, err := zk.Connect([]string{zkAddr}, 30*time.Second, zk.WithLogInfo(false))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	acl := zk.WorldACL(zk.PermAll)
	mk := func(p string) {
		if _, err := conn.Create(p, nil, 0, acl); err != nil && err != zk.ErrNodeExists {
			b.Fatalf("create %s: %v", p, err)
		}
	}
	mk("/dubbo")
	for s := 0; s < benchServices; s++ {
		iface := fmt.Sprintf("com.example.shop.Service%03d", s)
		base := "/dubbo/" + iface
		mk(base)
		mk(base + "/providers")
		mk(base + "/consumers")
		var ops []any
		for p := 0; p < benchProviders; p++ {
			u := fmt.Sprintf("dubbo://10.1.%d.%d:20880/%s?anyhost=false&application=shop-app-%d&deprecated=false&dubbo=2.0.2&dynamic=true&generic=false&interface=%s&methods=find,list,save,delete&pid=%d&release=3.3.0&side=provider&timestamp=1700000000000&version=1.0.0&weight=100",
				s%250, p+1, iface, s%50, iface, 1000+p)
			ops = append(ops, &zk.CreateRequest{Path: base + "/providers/" + url.QueryEscape(u), Acl: acl, Flags: 0})
		}
		for c := 0; c < benchConsumers; c++ {
			n := (s/50*benchConsumers + c) % 200 // consumer n references 50 services
			cu := fmt.Sprintf("consumer://10.2.%d.%d/%s?application=web-%d&category=consumers&check=false&dubbo=2.0.2&interface=%s&side=consumer&version=1.0.0",
				n/250, n%250+1, iface, n, iface)
			ops = append(ops, &zk.CreateRequest{Path: base + "/consumers/" + url.QueryEscape(cu), Acl: acl, Flags: 0})
		}
		if _, err := conn.Multi(ops...); err != nil {
			b.Fatalf("register %s: %v", iface, err)
		}
	}
	st, err := store.Open(filepath.Join(b.TempDir(), "monitor.db"), store.Options{Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	reported(b, st)
	c, err := console.New(testCtx(b), console.Options{Listen: "127.0.0.1:0", Registry: "zookeeper://" + zkAddr, Stats: st, Logger: quiet(), Now: clk.Now})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Shutdown(testCtx(b)) })
	if err := c.Catalog().WaitLoaded(testCtx(b)); err != nil {
		b.Fatal(err)
	}
	if n := c.Catalog().Counts().Providers; n != benchServices*benchProviders {
		b.Fatalf("console sees %d providers", n)
	}
	return c, st
}

// benchPage renders path, which must hold must; with moved, the window
// moves before each render (benchClock.move).
func benchPage(b *testing.B, c *console.Console, path, must string, moved func()) {
	h := c.Handler()
	get := func() *httptest.ResponseRecorder {
		if moved != nil {
			moved()
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w
	}
	w := get()
	if w.Code != 200 || !strings.Contains(w.Body.String(), must) {
		b.Fatalf("GET %s: %d", path, w.Code)
	}
	b.SetBytes(int64(w.Body.Len()))
	b.ResetTimer()
	start, cpu := time.Now(), cpuTime(b)
	for i := 0; i < b.N; i++ {
		if w := get(); w.Code != 200 {
			b.Fatalf("GET %s: %d", path, w.Code)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N)/1000, "ms/page")
	b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/float64(b.N)/1000, "cpu-ms/page")
}

// cpuTime is the CPU time this process has used, user and system: what
// a page costs on a machine shared with other work, where the time it
// takes depends on that work.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPages renders each page over 500 services, 10,000 providers
// and 10,000 consumer nodes, with benchMinutes of every node's reports in
// the store (goal: under 50 ms for the overview, the services list and a
// service page), the lists also as their first render after the window
// moved (their reading of the last five minutes is kept for a refresh
// interval), and times the store's queries behind them.
func BenchmarkPages(b *testing.B) {
	var clk benchClock
	c, st := bigRegistry(b, &clk)
	for _, p := range []struct {
		name, path, must string
		moved            func()
	}{
		{"overview", "/", "com.example.shop.Service", nil},
		{"overview-first", "/", "com.example.shop.Service", clk.move},
		{"services", "/services", "com.example.shop.Service499", nil},
		{"services-first", "/services", "com.example.shop.Service499", clk.move},
		{"service", "/services/com.example.shop.Service250", "10.1.0.10:20880", nil},
		{"instances", "/instances", "10.1.0.10:20880", nil},
		{"dependencies", "/dependencies", "The first 1000 of", nil},
	} {
		b.Run(p.name, func(b *testing.B) { benchPage(b, c, p.path, p.must, p.moved) })
	}
	now := time.Now().Unix()
	last5 := now/60*60 - 299
	summary := func(q store.SummaryQuery) func() error {
		return func() error { _, err := st.Summary(testCtx(b), q); return err }
	}
	iface := "com.example.shop.Service250"
	for _, q := range []struct {
		name string
		run  func() error
	}{
		{"query/services-5m", summary(store.SummaryQuery{By: store.ByService, From: last5, To: now / 60 * 60})},
		{"query/methods-15m", summary(store.SummaryQuery{By: store.ByMethod, Interface: iface, Side: store.SideConsumer, From: now - 899, To: now})},
		{"query/providers-15m", summary(store.SummaryQuery{By: store.ByProvider, Interface: iface, Side: store.SideConsumer, From: now - 899, To: now})},
		{"query/consumers-15m", summary(store.SummaryQuery{By: store.ByConsumer, Interface: iface, Side: store.SideConsumer, From: now - 899, To: now})},
		{"query/series-15m", func() error {
			_, err := st.Series(testCtx(b), store.SeriesQuery{Interface: iface, Side: store.SideConsumer, From: now - 899, To: now, Step: 60})
			return err
		}},
		{"query/instances-5m", summary(store.SummaryQuery{By: store.ByProvider, Side: store.SideProvider, From: last5, To: now / 60 * 60})},
		{"query/instances-consumers-5m", summary(store.SummaryQuery{By: store.ByConsumer, Side: store.SideConsumer, From: last5, To: now / 60 * 60})},
		{"query/edges-15m", summary(store.SummaryQuery{By: store.ByEdge, From: now - 899, To: now})},
	} {
		b.Run(q.name, func(b *testing.B) {
			start, cpu := time.Now(), cpuTime(b)
			for range b.N {
				if err := q.run(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N)/1000, "ms/query")
			b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/float64(b.N)/1000, "cpu-ms/query")
		})
	}
}
