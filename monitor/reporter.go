package monitor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/node/report"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats"
	"github.com/dubbo-lab/dubbo/node/transport"
)

// ReporterOptions are the parts of a Reporter that do not come from the
// config file.
type ReporterOptions struct {
	// Consumer reaches the MonitorService when Config.Address is "": the
	// node's consumer, which finds the monitor in the registry.
	Consumer rpc.Invoker
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Node identifies the process in its reports; default
	// report.DefaultNode().
	Node string
}

// Reporter sends a node's statistics to the monitor: a report.Reporter
// whose Close does not wait for a monitor that is not there.
type Reporter struct {
	*report.Reporter
	sender *closingSender
	direct *transport.Client // monitor.address; nil through the consumer
}

// NewReporter returns the reporter of recs (more can be added with Add)
// as cfg says, or nil when reporting is off (monitor.enabled = false).
// Start it with Start; stop it with Close.
func NewReporter(cfg Config, o ReporterOptions, recs ...*stats.Recorder) (*Reporter, error) {
	if !cfg.IsEnabled() {
		return nil, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	r := &Reporter{}
	inv := o.Consumer
	if cfg.Address != "" {
		addr, err := directAddress(cfg.Address)
		if err != nil {
			return nil, err
		}
		r.direct = transport.NewClient(addr, transport.ClientConfig{Logger: log})
		inv = awaitConnection{r.direct}
	}
	if inv == nil {
		return nil, errors.New("monitor: no monitor.address and no consumer to find the monitor with")
	}
	r.sender = &closingSender{inner: &report.InvokerSender{Invoker: inv}, absent: make(chan struct{})}
	var err error
	r.Reporter, err = report.New(report.Config{Interval: cfg.Interval, Buffer: cfg.Buffer, Node: o.Node,
		Logger: log.With("component", "monitor-reporter")}, r.sender, recs...)
	if err != nil {
		r.closeDirect()
		return nil, err
	}
	return r, nil
}

// Close sends the last, partial interval and what is queued, until ctx
// ends; but a monitor that is not there (none registered, or its port
// closed) is not waited for. It reports what could not be sent.
func (r *Reporter) Close(ctx context.Context) error {
	if r == nil {
		return nil
	}
	r.sender.closing.Store(true)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-r.sender.absent:
			cancel()
		case <-cctx.Done():
		}
	}()
	err := r.Reporter.Close(cctx)
	r.closeDirect()
	if err != nil && isClosed(r.sender.absent) {
		return fmt.Errorf("%w: %w", ErrNoMonitor, err)
	}
	return err
}

// ErrNoMonitor is wrapped by Close's error when no monitor was there to
// take the last reports (none registered, or its port closed): normal for
// a node run without one, which callers need not warn about.
var ErrNoMonitor = errors.New("no monitor to report to")

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (r *Reporter) closeDirect() {
	if r.direct != nil {
		r.direct.Close()
	}
}

// awaitConnection gives a client that connects in the background a moment
// to come up before a call, so that the first report of a short-lived
// node is not refused for a connection still being made.
type awaitConnection struct{ *transport.Client }

// connectWait bounds that moment: a monitor that does not answer a dial
// within it is not there.
const connectWait = time.Second

func (a awaitConnection) Invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	if !a.Available() {
		wctx, cancel := context.WithTimeout(ctx, connectWait)
		t := time.NewTicker(5 * time.Millisecond)
		for !a.Available() && wctx.Err() == nil {
			select {
			case <-wctx.Done():
			case <-t.C:
			}
		}
		t.Stop()
		cancel()
	}
	return a.Client.Invoke(ctx, inv)
}

// closingSender notes, once the node is closing, that the monitor is not
// there to take the last reports.
type closingSender struct {
	inner   report.Sender
	closing atomic.Bool
	once    sync.Once
	absent  chan struct{}
}

func (s *closingSender) Send(ctx context.Context, rep *report.Report) error {
	err := s.inner.Send(ctx, rep)
	if err != nil && s.closing.Load() && (errors.Is(err, rpc.ErrNoProvider) || errors.Is(err, rpc.ErrConnection)) {
		s.once.Do(func() { close(s.absent) })
	}
	return err
}

// CloseTimeout is how long a stopping node gives the monitor to take its
// last reports.
const CloseTimeout = 3 * time.Second
