package report

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/stats"
)

// monitor is a fake monitor behind a Sender: it stores each sample once
// by ID, as the real one must, and can be down, or lose its answers.
type monitor struct {
	mu       sync.Mutex
	down     bool
	absent   bool          // down, and the Sender says no monitor is there
	loseNext int           // answers to lose after storing
	frozen   chan struct{} // when set, Send blocks until it closes or ctx ends
	attempts int
	reports  []*Report
	stored   map[stats.SampleID]stats.Sample
}

func newMonitor() *monitor { return &monitor{stored: map[stats.SampleID]stats.Sample{}} }

func (m *monitor) Send(ctx context.Context, r *Report) error {
	m.mu.Lock()
	frozen := m.frozen
	m.attempts++
	m.mu.Unlock()
	if frozen != nil {
		select {
		case <-frozen:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down && m.absent {
		return fmt.Errorf("%w: no provider of org.apache.dubbo.monitor.MonitorService", ErrNoMonitor)
	}
	if m.down {
		return errors.New("connection refused")
	}
	m.reports = append(m.reports, r)
	for _, s := range r.Samples {
		if _, dup := m.stored[s.ID()]; !dup {
			m.stored[s.ID()] = s
		}
	}
	if m.loseNext > 0 {
		m.loseNext--
		return errors.New("read: connection reset by peer")
	}
	return nil
}

func (m *monitor) set(f func(*monitor)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(m)
}

func (m *monitor) get() (reports []*Report, stored int, success int64, attempts int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.stored {
		success += s.Success
	}
	return append([]*Report(nil), m.reports...), len(m.stored), success, m.attempts
}

// logs captures log records.
type logs struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logs) Enabled(context.Context, slog.Level) bool { return true }
func (l *logs) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *logs) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logs) WithGroup(string) slog.Handler      { return l }
func (l *logs) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if strings.Contains(m, sub) {
			n++
		}
	}
	return n
}

type fixture struct {
	rec  *stats.Recorder
	rep  *Reporter
	mon  *monitor
	logs *logs
	t0   time.Time
}

// start makes a started reporter whose intervals end only when the test
// calls tick, with fast retries.
func start(t *testing.T, cfg Config) *fixture {
	t.Helper()
	f := build(t, cfg)
	f.rep.Start()
	return f
}

// build makes the reporter of start without starting it, so a test can
// fill its queue before anything is sent.
func build(t *testing.T, cfg Config) *fixture {
	t.Helper()
	f := &fixture{
		rec:  stats.NewRecorder(stats.Config{Side: stats.Provider, Application: "demo", Host: "127.0.0.1", Port: 20880}),
		mon:  newMonitor(),
		logs: &logs{},
		t0:   time.UnixMilli(1732870800000),
	}
	cfg.Tick = make(chan time.Time) // never fires
	cfg.Node = "node-1"
	cfg.RetryMin, cfg.RetryMax = time.Millisecond, 5*time.Millisecond
	cfg.Logger = slog.New(f.logs)
	rep, err := New(cfg, f.mon, f.rec)
	if err != nil {
		t.Fatal(err)
	}
	f.rep = rep
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		f.mon.set(func(m *monitor) { m.down = false })
		rep.Close(ctx)
	})
	return f
}

// calls makes n calls of method and ends interval i (a minute each).
func (f *fixture) interval(i int, method string, n int) {
	c := f.rec.Counter(stats.Key{Interface: "org.example.Greeter", Method: method, Peer: "127.0.0.1"})
	for range n {
		c.End(c.Begin(), stats.Success, 10, 10)
	}
	f.rep.tick(f.t0.Add(time.Duration(i) * time.Minute))
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A monitor that is down loses nothing: the reports wait and go out in
// order when it is back.
func TestReportsWaitForTheMonitorAndGoOutInOrder(t *testing.T) {
	f := start(t, Config{})
	f.mon.set(func(m *monitor) { m.down = true })
	for i := 1; i <= 3; i++ {
		f.interval(i, "sayHello", i)
	}
	waitFor(t, "failed attempts", func() bool { _, _, _, a := f.mon.get(); return a >= 3 })
	if q := f.rep.Queued(); q != 3 {
		t.Fatalf("queued %d while the monitor is down, want 3", q)
	}
	f.mon.set(func(m *monitor) { m.down = false })
	waitFor(t, "the queue to drain", func() bool { return f.rep.Queued() == 0 })
	reports, stored, success, _ := f.mon.get()
	if len(reports) != 3 || stored != 3 || success != 1+2+3 {
		t.Fatalf("monitor got %d reports, %d samples, %d calls; want 3, 3, 6", len(reports), stored, success)
	}
	for i, r := range reports {
		if want := f.t0.Add(time.Duration(i+1) * time.Minute); !r.End.Equal(want) || r.Samples[0].Success != int64(i+1) {
			t.Errorf("report %d ends %v with %d calls, want %v and %d", i, r.End, r.Samples[0].Success, want, i+1)
		}
		if r.Node != "node-1" || r.Samples[0].Node != "node-1" || !r.Samples[0].Timestamp.Equal(r.End) {
			t.Errorf("report %d: node %q, sample node %q at %v", i, r.Node, r.Samples[0].Node, r.Samples[0].Timestamp)
		}
	}
	if f.logs.count("cannot send") != 1 || f.logs.count("reachable again") != 1 {
		t.Errorf("logs: %q", f.logs.msgs)
	}
}

// Past the bound the oldest reports go, counted, and it is logged once
// until the monitor takes a report again.
func TestFullQueueDropsTheOldest(t *testing.T) {
	// Not sending while the queue fills: a send in flight when its report
	// is dropped would still deliver it once the monitor is back.
	f := build(t, Config{Buffer: 2})
	f.mon.set(func(m *monitor) { m.down = true })
	for i := 1; i <= 5; i++ {
		f.interval(i, "sayHello", i)
	}
	f.rep.Start()
	if q, d := f.rep.Queued(), f.rep.Dropped(); q != 2 || d != 3 {
		t.Fatalf("queued %d dropped %d, want 2 and 3", q, d)
	}
	if n := f.logs.count("dropping"); n != 1 {
		t.Errorf("dropping logged %d times, want 1", n)
	}
	f.mon.set(func(m *monitor) { m.down = false })
	waitFor(t, "the queue to drain", func() bool { return f.rep.Queued() == 0 })
	reports, _, success, _ := f.mon.get()
	if len(reports) != 2 || success != 4+5 {
		t.Errorf("monitor got %d reports with %d calls, want the newest 2 with 9", len(reports), success)
	}
	// Down again: a new overflow is logged again.
	f.mon.set(func(m *monitor) { m.down = true })
	for i := 6; i <= 8; i++ {
		f.interval(i, "sayHello", 1)
	}
	if n := f.logs.count("dropping"); n != 2 || f.rep.Dropped() != 4 {
		t.Errorf("after a second outage: dropping logged %d times, %d dropped; want 2 and 4", n, f.rep.Dropped())
	}
}

// A report whose answer was lost is sent again; the monitor, storing by
// sample ID, counts its calls once.
func TestResentReportIsCountedOnce(t *testing.T) {
	f := start(t, Config{})
	f.mon.set(func(m *monitor) { m.loseNext = 2 })
	f.interval(1, "sayHello", 5)
	f.interval(2, "add", 7)
	waitFor(t, "the queue to drain", func() bool { return f.rep.Queued() == 0 })
	reports, stored, success, _ := f.mon.get()
	if len(reports) < 3 || stored != 2 || success != 12 {
		t.Errorf("monitor received %d reports, stored %d samples with %d calls; want >= 3, 2 and 12", len(reports), stored, success)
	}
}

// Close collects the partial interval and sends it.
func TestCloseSendsTheLastPartialInterval(t *testing.T) {
	f := start(t, Config{})
	c := f.rec.Counter(stats.Key{Interface: "org.example.Greeter", Method: "sayHello", Peer: "127.0.0.1"})
	for range 4 {
		c.End(c.Begin(), stats.Success, 1, 1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.rep.Close(ctx); err != nil {
		t.Fatal(err)
	}
	reports, _, success, _ := f.mon.get()
	if len(reports) != 1 || success != 4 {
		t.Fatalf("monitor got %d reports with %d calls, want 1 with 4", len(reports), success)
	}
	if s := reports[0].Samples[0]; s.Interval <= 0 || s.Interval > time.Minute {
		t.Errorf("partial interval %v", s.Interval)
	}
}

// The monitor keeps intervals by their end to the second: a last, partial
// interval that ends in the second of the previous one ends a second
// later, so it is not taken for that one sent again.
func TestLastIntervalEndsInASecondOfItsOwn(t *testing.T) {
	f := start(t, Config{})
	// The first interval ends in the second after the reporter started, so
	// that only the second one shares a second with the one before it.
	end := time.Now().Truncate(time.Second).Add(time.Second + 100*time.Millisecond)
	c := f.rec.Counter(stats.Key{Interface: "org.example.Greeter", Method: "sayHello", Peer: "127.0.0.1"})
	c.End(c.Begin(), stats.Success, 1, 1)
	f.rep.tick(end)
	c.End(c.Begin(), stats.Success, 1, 1)
	f.rep.tick(end.Add(300 * time.Millisecond))
	waitFor(t, "two reports", func() bool { r, _, _, _ := f.mon.get(); return len(r) == 2 })
	reports, stored, success, _ := f.mon.get()
	if a, b := reports[0].End, reports[1].End; a.Unix() == b.Unix() || !b.After(a) {
		t.Errorf("intervals end at %v and %v: the same second", a, b)
	}
	if stored != 2 || success != 2 {
		t.Errorf("monitor stored %d samples with %d calls, want 2 and 2", stored, success)
	}
	if s := reports[1].Samples[0]; s.Timestamp != reports[1].End || s.Interval != reports[1].End.Sub(end) {
		t.Errorf("sample %v over %v, want the report's end %v", s.Timestamp, s.Interval, reports[1].End)
	}
}

// A frozen monitor holds neither counting nor the intervals; Close gives
// up at its deadline and says what was not sent.
func TestFrozenMonitor(t *testing.T) {
	f := start(t, Config{SendTimeout: 50 * time.Millisecond})
	frozen := make(chan struct{})
	defer close(frozen)
	f.mon.set(func(m *monitor) { m.frozen = frozen })
	for i := 1; i <= 3; i++ {
		f.interval(i, "sayHello", 2) // returns at once
	}
	if q := f.rep.Queued(); q != 3 {
		t.Errorf("queued %d, want 3", q)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	err := f.rep.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "3 reports of node node-1 not sent") {
		t.Errorf("Close = %v", err)
	}
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("Close took %v with a 300ms deadline", took)
	}
}

// A node that stops while no monitor is there does not wait for one: Close
// returns at once and says so (ErrNoMonitor). Until the node stops, one may
// still come (registered later, or restarted), so its reports wait.
func TestCloseWithoutMonitorDoesNotWait(t *testing.T) {
	sp := &Spool{Dir: t.TempDir()}
	f := start(t, Config{Spool: sp})
	f.mon.set(func(m *monitor) { m.down, m.absent = true, true })
	f.interval(1, "sayHello", 3)
	waitFor(t, "failed attempts", func() bool { _, _, _, a := f.mon.get(); return a >= 3 })
	if q := f.rep.Queued(); q != 1 {
		t.Fatalf("queued %d while no monitor is there, want 1 kept for one to come", q)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	began := time.Now()
	err := f.rep.Close(ctx)
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("Close took %v with no monitor there", took)
	}
	if !errors.Is(err, ErrNoMonitor) || !strings.Contains(err.Error(), "1 reports of node node-1 not sent") {
		t.Errorf("Close = %v, want 1 report not sent, wrapping ErrNoMonitor", err)
	}
	if got, _, _ := sp.Read(); len(got) != 0 {
		t.Errorf("spooled %d reports for a monitor that was never there", len(got))
	}
}

// ownConn is a Sender with a connection of its own to close.
type ownConn struct {
	*monitor
	sentAtClose int // reports the monitor had when Close ran; -1 before
}

func (c *ownConn) Close() error {
	reports, _, _, _ := c.get()
	c.sentAtClose = len(reports)
	return nil
}

// Close closes a Sender that is an io.Closer, after the last report.
func TestCloseClosesTheSender(t *testing.T) {
	rec := stats.NewRecorder(stats.Config{Side: stats.Consumer, Application: "demo", Host: "127.0.0.1"})
	conn := &ownConn{monitor: newMonitor(), sentAtClose: -1}
	rep, err := New(Config{Tick: make(chan time.Time), Logger: slog.New(slog.DiscardHandler)}, conn, rec)
	if err != nil {
		t.Fatal(err)
	}
	rep.Start()
	c := rec.Counter(stats.Key{Interface: "org.example.Greeter", Method: "sayHello", Peer: "127.0.0.1:20880"})
	c.End(c.Begin(), stats.Success, 1, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rep.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if conn.sentAtClose != 1 {
		t.Errorf("sender closed with %d reports sent, want closed after the last one (1)", conn.sentAtClose)
	}
}

func TestIdleIntervalQueuesNothing(t *testing.T) {
	f := start(t, Config{})
	f.rep.tick(f.t0.Add(time.Minute))
	if q := f.rep.Queued(); q != 0 {
		t.Errorf("an idle interval queued %d reports", q)
	}
}

func TestConfigDefaults(t *testing.T) {
	for _, tc := range []struct {
		cfg     Config
		buffer  int
		wantErr string
	}{
		{Config{}, 60, ""},
		{Config{Interval: time.Second}, 3600, ""},
		{Config{Interval: 7 * time.Minute}, 9, ""},
		{Config{Interval: 2 * time.Hour}, 1, ""},
		{Config{Interval: 500 * time.Millisecond}, 0, "at least 1s"},
		{Config{Buffer: -1}, 0, "must be positive"},
	} {
		c, err := tc.cfg.withDefaults()
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%+v: err %v, want %q", tc.cfg, err, tc.wantErr)
			}
			continue
		}
		if err != nil || c.Buffer != tc.buffer || c.Node == "" {
			t.Errorf("%+v: buffer %d node %q err %v, want buffer %d", tc.cfg, c.Buffer, c.Node, err, tc.buffer)
		}
	}
}

// A monitor killed and restarted while the node stops: the first sends at
// Close fail on the dead connection, which is not "no monitor": Close
// tries again until the monitor is back, and sends everything.
func TestCloseWaitsForARestartingMonitor(t *testing.T) {
	f := start(t, Config{})
	f.mon.set(func(m *monitor) { m.down = true })
	f.interval(1, "sayHello", 3)
	f.interval(2, "sayHello", 4)
	back := time.AfterFunc(300*time.Millisecond, func() { f.mon.set(func(m *monitor) { m.down = false }) })
	defer back.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := f.rep.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, stored, success, _ := f.mon.get(); stored != 2 || success != 7 {
		t.Errorf("monitor stored %d samples with %d calls, want 2 with 7", stored, success)
	}
}

// What a monitor that is registered but down did not take by Close's
// deadline goes to the spool; the next process started with the spool
// sends it before its own reports, and removes it; the monitor stores
// each sample once, however often it is sent.
func TestCloseSpoolsAndTheNextProcessSends(t *testing.T) {
	sp := &Spool{Dir: t.TempDir()}
	f := start(t, Config{Spool: sp})
	f.mon.set(func(m *monitor) { m.down = true })
	f.interval(1, "sayHello", 3)
	f.interval(2, "add", 4)
	c := f.rec.Counter(stats.Key{Interface: "org.example.Greeter", Method: "sayHello", Peer: "127.0.0.1"})
	for range 5 {
		c.End(c.Begin(), stats.Success, 1, 1) // the last, partial interval
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := f.rep.Close(ctx); err != nil {
		t.Fatalf("Close = %v, want nil: the reports are spooled", err)
	}
	if f.logs.count("spooled") != 1 {
		t.Errorf("logs %q: want the spooling said", f.logs.msgs)
	}
	spooled, _, _ := sp.Read()
	if len(spooled) != 3 {
		t.Fatalf("%d reports in the spool, want 3", len(spooled))
	}

	// The next process: the monitor is back.
	f.mon.set(func(m *monitor) { m.down = false })
	next := func(node string, calls int) *Reporter {
		rec := stats.NewRecorder(stats.Config{Side: stats.Provider, Application: "demo", Host: "127.0.0.1", Port: 20880})
		rep, err := New(Config{Spool: sp, Tick: make(chan time.Time), Node: node, Logger: slog.New(slog.DiscardHandler)}, f.mon, rec)
		if err != nil {
			t.Fatal(err)
		}
		c := rec.Counter(stats.Key{Interface: "org.example.Greeter", Method: "sayHello", Peer: "127.0.0.1"})
		for range calls {
			c.End(c.Begin(), stats.Success, 1, 1)
		}
		return rep
	}
	a, b := next("node-2", 1), next("node-3", 2) // both read the spool
	a.Start()
	b.Start()
	for _, rep := range []*Reporter{a, b} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		if err := rep.Close(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	reports, stored, success, _ := f.mon.get()
	if stored != 3+2 || success != 3+4+5+1+2 {
		t.Errorf("monitor stored %d samples with %d calls, want 5 with 15", stored, success)
	}
	if reports[0].Node != "node-1" {
		t.Errorf("the first report sent is %s's, want the spooled ones first", reports[0].Node)
	}
	if left, _, _ := sp.Read(); len(left) != 0 {
		t.Errorf("%d reports left in the spool after they were sent", len(left))
	}
}

// A monitor that took reports and then went away (unregistered) is not
// waited for at Close, but what it did not take is spooled: it may come
// back.
func TestMonitorGoneSpools(t *testing.T) {
	sp := &Spool{Dir: t.TempDir()}
	f := start(t, Config{Spool: sp})
	f.interval(1, "sayHello", 2)
	waitFor(t, "the first report", func() bool { return f.rep.Queued() == 0 })
	f.mon.set(func(m *monitor) { m.down, m.absent = true, true })
	f.interval(2, "sayHello", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	began := time.Now()
	if err := f.rep.Close(ctx); err != nil {
		t.Errorf("Close = %v, want nil: spooled", err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("Close took %v with no monitor registered", took)
	}
	if got, _, _ := sp.Read(); len(got) != 1 || got[0].Samples[0].Success != 3 {
		t.Errorf("spooled %v, want the second report", got)
	}
}

// Without a spool, what Close could not send of a monitor that was there
// is lost, and Close says how much.
func TestCloseWithoutSpoolSaysWhatIsLost(t *testing.T) {
	f := start(t, Config{})
	f.interval(1, "sayHello", 2)
	waitFor(t, "the first report", func() bool { return f.rep.Queued() == 0 })
	f.mon.set(func(m *monitor) { m.down = true })
	f.interval(2, "sayHello", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := f.rep.Close(ctx); err == nil || errors.Is(err, ErrNoMonitor) || !strings.Contains(err.Error(), "1 reports of node node-1 not sent") {
		t.Errorf("Close = %v, want 1 report lost, not ErrNoMonitor", err)
	}
}
