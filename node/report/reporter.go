package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbo-lab/dubbo/node/stats"
)

// Report is one interval of one node: every active key's Sample.
type Report struct {
	// Node is the reporting process's identity, also in every sample.
	Node       string
	Start, End time.Time
	Samples    []stats.Sample

	spoolFile string // the spool file it was read from; "" = this process's own
}

// Sender delivers a report to the monitor. An error means the report
// (or part of it) may not have arrived: it is sent again, whole, later,
// so the monitor must store each sample once (stats.Sample.ID). An error
// that wraps ErrNoMonitor says no monitor is there at all. A Sender that
// is also an io.Closer (a connection made for the reports alone) is closed
// by the Reporter's Close once it has sent what it could.
type Sender interface {
	Send(ctx context.Context, r *Report) error
}

// ErrNoMonitor is wrapped by a Sender's error when no monitor is there to
// take reports (none is registered), and by Close's error when no monitor
// was there all the node's life: normal for a node run without a monitor,
// which callers need not warn about. A monitor that is registered but
// cannot be reached (killed, restarting) is not ErrNoMonitor: a closing
// node tries it again until its deadline.
var ErrNoMonitor = errors.New("no monitor to report to")

// CloseTimeout is how long a stopping node gives the monitor to take its
// last reports: the deadline of the context it gives Close.
const CloseTimeout = 3 * time.Second

// Defaults.
const (
	DefaultInterval = time.Minute // monitor.interval, Dubbo's default
	MinInterval     = time.Second
	// DefaultBacklog is how much time of unsent reports the default
	// Config.Buffer keeps.
	DefaultBacklog = time.Hour
)

// Config configures a Reporter. The zero value uses the defaults.
type Config struct {
	// Interval between collections; default DefaultInterval, at least MinInterval.
	Interval time.Duration
	// Buffer is how many reports wait while the monitor is unreachable;
	// past it the oldest is dropped. Default: an hour of intervals.
	Buffer int
	// Node identifies this process in its reports; default DefaultNode().
	Node string
	// SendTimeout bounds one attempt to send one report; default the
	// interval, at most 10s.
	SendTimeout time.Duration
	// RetryMin and RetryMax bound the wait between failed attempts, which
	// doubles from one to the other; default 1s and the interval, at most 30s.
	RetryMin, RetryMax time.Duration
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Tick, when set, replaces the interval's ticker (tests).
	Tick <-chan time.Time
	// Spool, when set, is where Close leaves what it could not send, and
	// where Start finds what stopped processes left, to send it first.
	// Default nil: what Close cannot send is lost (and said so).
	Spool *Spool
}

// DefaultNode is an identity no other running process has: host name,
// process id and start time in milliseconds.
func DefaultNode() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return host + "-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixMilli(), 10)
}

func (c Config) withDefaults() (Config, error) {
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Interval < MinInterval {
		return c, fmt.Errorf("monitor interval %s: must be at least %s", c.Interval, MinInterval)
	}
	if c.Buffer == 0 {
		c.Buffer = max(1, int((DefaultBacklog+c.Interval-1)/c.Interval))
	}
	if c.Buffer < 0 {
		return c, fmt.Errorf("monitor buffer %d: must be positive", c.Buffer)
	}
	if c.Node == "" {
		c.Node = DefaultNode()
	}
	if c.SendTimeout <= 0 {
		c.SendTimeout = min(c.Interval, 10*time.Second)
	}
	if c.RetryMin <= 0 {
		c.RetryMin = time.Second
	}
	if c.RetryMax <= 0 {
		c.RetryMax = min(c.Interval, 30*time.Second)
	}
	c.RetryMax = max(c.RetryMax, c.RetryMin)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// Reporter collects its recorders every interval into one Report, queues
// it, and sends the queue in order from its own goroutine, so a monitor
// that is down, frozen or slow never touches a call. Unsent reports wait
// in a bounded queue; the oldest are dropped past it (counted, logged once
// until a report gets through again).
type Reporter struct {
	cfg    Config
	sender Sender

	tickMu sync.Mutex // one collection at a time
	last   time.Time  // start of the current interval; under tickMu

	mu         sync.Mutex
	recorders  []*stats.Recorder
	queue      []*Report
	dropLogged bool
	closing    bool
	noMonitor  error // while closing, the Send error that found no monitor
	// seen: a monitor took a report, or is registered but could not be
	// reached; what is unsent at Close then goes to the spool.
	seen bool

	dropped, sent, failures atomic.Int64

	wake      chan struct{} // something was queued
	stopTick  chan struct{}
	closingCh chan struct{}
	ctx       context.Context // cancelled when Close gives up
	cancel    context.CancelFunc
	tickDone  chan struct{}
	sendDone  chan struct{}
	startOnce sync.Once
	closeOnce sync.Once
	closeErr  error

	descQueued, descDropped, descSent, descFailures *prometheus.Desc
}

// New returns a Reporter of recs (more can be added); Start starts it.
func New(cfg Config, sender Sender, recs ...*stats.Recorder) (*Reporter, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	label := prometheus.Labels{"node": cfg.Node}
	return &Reporter{
		cfg: cfg, sender: sender, recorders: recs, last: time.Now(),
		wake: make(chan struct{}, 1), stopTick: make(chan struct{}), closingCh: make(chan struct{}),
		ctx: ctx, cancel: cancel, tickDone: make(chan struct{}), sendDone: make(chan struct{}),
		descQueued:   prometheus.NewDesc("dubbo_monitor_reports_queued", "Reports waiting to be sent to the monitor", nil, label),
		descDropped:  prometheus.NewDesc("dubbo_monitor_reports_dropped_total", "Reports dropped unsent because the queue was full", nil, label),
		descSent:     prometheus.NewDesc("dubbo_monitor_reports_sent_total", "Reports sent to the monitor", nil, label),
		descFailures: prometheus.NewDesc("dubbo_monitor_send_failures_total", "Failed attempts to send a report to the monitor", nil, label),
	}, nil
}

// Config is the configuration in force, defaults filled in.
func (r *Reporter) Config() Config { return r.cfg }

// Add reports rec too from the next interval on.
func (r *Reporter) Add(rec *stats.Recorder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recorders = append(r.recorders, rec)
}

// Start starts collecting every interval and sending. Stop it with Close.
func (r *Reporter) Start() {
	r.startOnce.Do(func() {
		go r.tickLoop()
		go r.sendLoop()
	})
}

func (r *Reporter) tickLoop() {
	defer close(r.tickDone)
	tick := r.cfg.Tick
	if tick == nil {
		t := time.NewTicker(r.cfg.Interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case now := <-tick:
			r.tick(now)
		case <-r.stopTick:
			return
		}
	}
}

// tick ends the interval at now: it collects every recorder and queues
// the report, dropping the oldest when the queue is full.
func (r *Reporter) tick(now time.Time) {
	r.tickMu.Lock()
	defer r.tickMu.Unlock()
	r.mu.Lock()
	recs := append([]*stats.Recorder(nil), r.recorders...)
	r.mu.Unlock()
	// The monitor keeps an interval by its end to the second: a last,
	// partial interval ending in the second the previous one ended in is
	// stamped with the next second, so the two stay apart.
	if !now.Before(r.last) && now.Unix() == r.last.Unix() {
		now = time.Unix(r.last.Unix()+1, 0)
	}
	rep := &Report{Node: r.cfg.Node, Start: r.last, End: now}
	r.last = now
	for _, rec := range recs {
		for _, s := range rec.Collect(now) {
			s.Node = r.cfg.Node
			rep.Samples = append(rep.Samples, s)
		}
	}
	if len(rep.Samples) == 0 {
		return
	}
	r.enqueue([]*Report{rep}, false)
}

// enqueue adds reps to the queue, at its end or (spooled reports, older)
// at its front, dropping the oldest when it is full.
func (r *Reporter) enqueue(reps []*Report, front bool) {
	r.mu.Lock()
	if front {
		r.queue = append(reps, r.queue...)
	} else {
		r.queue = append(r.queue, reps...)
	}
	if len(r.queue) > r.cfg.Buffer {
		n := len(r.queue) - r.cfg.Buffer
		for _, old := range r.queue[:n] {
			if old.spoolFile != "" {
				r.removeSpooled(old)
			}
		}
		r.queue = append(r.queue[:0], r.queue[n:]...)
		r.dropped.Add(int64(n))
		if !r.dropLogged {
			r.dropLogged = true
			r.cfg.Logger.Warn("monitor unreachable and its queue is full: dropping the oldest statistics",
				"node", r.cfg.Node, "queued", len(r.queue), "dropped_total", r.dropped.Load())
		}
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// loadSpool queues what stopped processes left in the spool, ahead of
// this process's reports.
func (r *Reporter) loadSpool() {
	spooled, bad, err := r.cfg.Spool.Read()
	for _, e := range append(bad, err) {
		if e != nil {
			r.cfg.Logger.Warn("statistics left by a stopped process cannot be read; they are lost", "err", e)
		}
	}
	if len(spooled) == 0 {
		return
	}
	reps := make([]*Report, len(spooled))
	samples := 0
	for i, s := range spooled {
		s.spoolFile = s.File
		reps[i] = s.Report
		samples += len(s.Samples)
	}
	r.cfg.Logger.Info("sending the statistics stopped processes left", "spool", r.cfg.Spool.Dir, "reports", len(reps), "samples", samples)
	r.enqueue(reps, true)
}

// removeSpooled removes a spooled report's file once it is sent or dropped.
func (r *Reporter) removeSpooled(rep *Report) {
	if err := r.cfg.Spool.Remove(rep.spoolFile); err != nil {
		r.cfg.Logger.Warn("cannot remove a spooled report; it may be sent again (the monitor stores it once)", "err", err)
	}
}

// next waits for the oldest queued report; nil when closing with nothing
// queued, or given up.
func (r *Reporter) next() *Report {
	for {
		r.mu.Lock()
		if len(r.queue) > 0 {
			rep := r.queue[0]
			r.mu.Unlock()
			return rep
		}
		closing := r.closing
		r.mu.Unlock()
		if closing {
			return nil
		}
		select {
		case <-r.wake:
		case <-r.closingCh:
		case <-r.ctx.Done():
			return nil
		}
	}
}

func (r *Reporter) sendLoop() {
	defer close(r.sendDone)
	if r.cfg.Spool != nil {
		r.loadSpool()
	}
	var backoff time.Duration
	failing := false
	closingCh := r.closingCh
	for {
		rep := r.next()
		if rep == nil {
			return
		}
		ctx, cancel := context.WithTimeout(r.ctx, r.cfg.SendTimeout)
		err := r.sender.Send(ctx, rep)
		cancel()
		if err == nil {
			r.sent.Add(1)
			r.mu.Lock()
			r.seen = true
			if len(r.queue) > 0 && r.queue[0] == rep { // not dropped meanwhile
				r.queue[0] = nil
				r.queue = r.queue[1:]
				if rep.spoolFile != "" {
					r.removeSpooled(rep)
				}
			}
			queued := len(r.queue)
			r.dropLogged = false
			r.mu.Unlock()
			if failing {
				failing = false
				r.cfg.Logger.Info("monitor reachable again", "node", r.cfg.Node, "queued", queued)
			}
			backoff = 0
			continue
		}
		r.failures.Add(1)
		if r.ctx.Err() != nil || r.gaveUp(err) {
			return
		}
		if !failing {
			failing = true
			r.cfg.Logger.Warn("cannot send statistics to the monitor; keeping them to send later",
				"node", r.cfg.Node, "err", err)
		}
		backoff = min(max(backoff*2, r.cfg.RetryMin), r.cfg.RetryMax)
		wait := backoff
		if closingCh == nil { // closing: retry soon, until Close's deadline
			wait = min(wait, 50*time.Millisecond)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-closingCh:
			closingCh = nil
		case <-r.ctx.Done():
			t.Stop()
			return
		}
		t.Stop()
	}
}

// gaveUp reports whether a failed send ends the sending: while closing,
// when no monitor is registered, there is none to wait for. Before, one
// may still come (registered after the node started, or restarted), so
// the reports wait for it. A monitor registered but not reached is tried
// again until Close's deadline.
func (r *Reporter) gaveUp(err error) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !errors.Is(err, ErrNoMonitor) {
		r.seen = true
		return false
	}
	if r.closing {
		r.noMonitor = err
	}
	return r.closing
}

// Close ends the current, partial interval, queues it and tries to send
// everything queued until ctx is done, or until a send finds no monitor
// registered (ErrNoMonitor): a stopping node does not wait for one. What
// it could not send goes to the spool when a monitor was there during the
// node's life (it took reports, or is registered and not reached: killed,
// restarting), for the next process to send; reports that were spooled
// are said at info level, reports lost (no spool, or the spool cannot
// take them) make its error, with their count. A node that never found a
// monitor registered spools nothing: its error wraps ErrNoMonitor. Close
// closes the Sender if it is an io.Closer. A nil Reporter (reporting off)
// closes at once.
func (r *Reporter) Close(ctx context.Context) error {
	if r == nil {
		return nil
	}
	r.closeOnce.Do(func() {
		r.Start() // a reporter never started still sends what Close collects
		close(r.stopTick)
		<-r.tickDone
		r.tick(time.Now())
		r.mu.Lock()
		r.closing = true
		r.mu.Unlock()
		close(r.closingCh)
		select {
		case <-r.sendDone:
		case <-ctx.Done():
			r.cancel()
			<-r.sendDone
		}
		r.cancel()
		if c, ok := r.sender.(io.Closer); ok {
			c.Close()
		}
		r.mu.Lock()
		left, noMonitor, seen := r.queue, r.noMonitor, r.seen
		r.queue = nil
		r.mu.Unlock()
		var own []*Report // spooled ones stay in the spool
		for _, rep := range left {
			if rep.spoolFile == "" {
				own = append(own, rep)
			}
		}
		n := len(own)
		var why error
		switch {
		case n == 0:
		case !seen && noMonitor != nil:
			why = noMonitor // never one there: nothing lost that was ever going anywhere
		case r.cfg.Spool != nil:
			n, why = r.spool(own)
		case noMonitor != nil:
			why = fmt.Errorf("the monitor went away: %v", noMonitor)
		default:
			why = errors.Join(ctx.Err(), errUnsent)
		}
		if n > 0 {
			r.closeErr = fmt.Errorf("monitor: %d reports of node %s not sent: %w", n, r.cfg.Node, why)
		}
	})
	return r.closeErr
}

var errUnsent = errors.New("the monitor did not take them in time")

// spool writes the reports Close could not send into the spool, and says
// how many it could not write, and why.
func (r *Reporter) spool(reps []*Report) (lost int, err error) {
	samples, dropped, droppedSamples := 0, 0, 0
	var errs []error
	for _, rep := range reps {
		d, ds, err := r.cfg.Spool.Write(rep)
		dropped, droppedSamples = dropped+d, droppedSamples+ds
		if err != nil {
			errs = append(errs, err)
			lost++
			continue
		}
		samples += len(rep.Samples)
	}
	if dropped > 0 {
		r.cfg.Logger.Warn("the statistics spool is full: its oldest reports are lost", "spool", r.cfg.Spool.Dir,
			"reports", dropped, "samples", droppedSamples, "max_bytes", r.cfg.Spool.limit())
	}
	if spooled := len(reps) - lost; spooled > 0 {
		r.cfg.Logger.Info("statistics the monitor did not take are spooled; the next process started with this data directory sends them",
			"node", r.cfg.Node, "spool", r.cfg.Spool.Dir, "reports", spooled, "samples", samples)
	}
	return lost, errors.Join(errs...)
}

// Queued is the number of reports waiting to be sent.
func (r *Reporter) Queued() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.queue)
}

// Dropped is the number of reports dropped unsent because the queue was full.
func (r *Reporter) Dropped() int64 { return r.dropped.Load() }

// Sent is the number of reports the monitor took.
func (r *Reporter) Sent() int64 { return r.sent.Load() }

// Describe implements prometheus.Collector.
func (r *Reporter) Describe(ch chan<- *prometheus.Desc) {
	ch <- r.descQueued
	ch <- r.descDropped
	ch <- r.descSent
	ch <- r.descFailures
}

// Collect implements prometheus.Collector: the queue and what became of
// the reports.
func (r *Reporter) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(r.descQueued, prometheus.GaugeValue, float64(r.Queued()))
	ch <- prometheus.MustNewConstMetric(r.descDropped, prometheus.CounterValue, float64(r.dropped.Load()))
	ch <- prometheus.MustNewConstMetric(r.descSent, prometheus.CounterValue, float64(r.sent.Load()))
	ch <- prometheus.MustNewConstMetric(r.descFailures, prometheus.CounterValue, float64(r.failures.Load()))
}
