package store

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// t0 is the start of the tests' data: a whole hour.
var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Unix()

// clock is a controlled Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(unix int64) *clock { return &clock{t: time.Unix(unix, 0)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(unix int64) {
	c.mu.Lock()
	c.t = time.Unix(unix, 0)
	c.mu.Unlock()
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func openAt(t testing.TB, path string, clk *clock) *Store {
	t.Helper()
	st, err := Open(path, Options{Now: clk.Now, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func openTemp(t testing.TB, clk *clock) *Store {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "monitor.db"), clk)
}

// node is a reporter in the tests' little deployment.
type node struct {
	side, app, id, addr string // addr: host:port of a provider, ip of a consumer
}

var (
	prov1 = node{SideProvider, "greeter-app", "10.0.0.1:20880#101#1700000000", "10.0.0.1:20880"}
	prov2 = node{SideProvider, "greeter-app", "10.0.0.2:20880#102#1700000000", "10.0.0.2:20880"}
	cons1 = node{SideConsumer, "web-app", "10.0.0.9:0#201#1700000000", "10.0.0.9"}
)

// report is what n counted for iface.method towards peer (a consumer's
// ip for a provider, a provider's host:port for a consumer) in the minute
// ending at t. The other figures follow from the counts, so that sums and
// maxima can be checked.
func report(n node, peer, iface, method string, t, success, failure int64) Row {
	r := Row{Time: t, Interval: 60, Side: n.side, Application: n.app, Node: n.id,
		Interface: iface, Group: "", Version: "1.0.0", Method: method,
		Success: success, Failure: failure,
		Input: 100 * (success + failure), Output: 50 * success, ElapsedMs: 3 * (success + failure),
		MaxElapsedMs: 10 + t%97, Concurrent: float64(t%7) / 2, MaxConcurrent: 1 + t%13, MaxInput: 100 + t%5, MaxOutput: 50 + t%3}
	if n.side == SideProvider {
		r.Address, r.Consumer = n.addr, peer
	} else {
		r.Address, r.Consumer = peer, n.addr
	}
	return r
}

func calls(rows []Row) int64 {
	var n int64
	for _, r := range rows {
		n += r.Calls()
	}
	return n
}

func bucketCalls(bs []Bucket) int64 {
	var n int64
	for _, b := range bs {
		n += b.Calls
	}
	return n
}

func mustInsert(t testing.TB, st *Store, rows []Row) int {
	t.Helper()
	n, err := st.Insert(context.Background(), rows)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mustQuery(t testing.TB, st *Store, f Filter) []Row {
	t.Helper()
	rows, err := st.Query(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func mustSeries(t testing.TB, st *Store, q SeriesQuery) []Bucket {
	t.Helper()
	bs, err := st.Series(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// rowKey identifies a row in comparisons.
func rowKey(r Row) string {
	return fmt.Sprintf("%d|%s|%s|%s|%s|%s|%s|%s|%s", r.Time, r.Side, r.Node, r.Interface, r.Group, r.Version, r.Method, r.Address, r.Consumer)
}
