package monitor

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/dubbo-lab/dubbo/node/report"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats"
	"github.com/dubbo-lab/dubbo/node/transport"
)

// ReporterOptions are the parts of a node's reporter that do not come
// from the config file.
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

// NewReporter returns the reporter of recs (more can be added with Add)
// as the [monitor] section says: a report.Reporter sending through the
// node's consumer, or straight to monitor.address, with monitor.spool as
// its spool. It is nil when reporting is off (monitor.enabled = false).
// Start it with Start (it sends what the spool holds first); stop it with
// Close, which does not wait for a monitor that is not registered, and
// spools what a monitor that was there did not take.
func NewReporter(cfg Config, o ReporterOptions, recs ...*stats.Recorder) (*report.Reporter, error) {
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
	var sender report.Sender
	switch {
	case cfg.Address != "":
		addr, err := directAddress(cfg.Address)
		if err != nil {
			return nil, err
		}
		sender = newDirectSender(transport.NewClient(addr, transport.ClientConfig{Logger: log}))
	case o.Consumer != nil:
		sender = &report.InvokerSender{Invoker: o.Consumer}
	default:
		return nil, errors.New("monitor: no monitor.address and no consumer to find the monitor with")
	}
	rcfg := report.Config{Interval: cfg.Interval, Buffer: cfg.Buffer, Node: o.Node, Logger: log.With("component", "monitor-reporter")}
	if cfg.Spool != "" {
		rcfg.Spool = &report.Spool{Dir: cfg.Spool}
	}
	rep, err := report.New(rcfg, sender, recs...)
	if err != nil {
		if c, ok := sender.(*directSender); ok {
			c.Close()
		}
		return nil, err
	}
	return rep, nil
}

// directSender sends to monitor.address over a client of its own, which
// the reporter's Close closes.
type directSender struct {
	report.InvokerSender
	client *transport.Client
}

func newDirectSender(c *transport.Client) *directSender {
	return &directSender{InvokerSender: report.InvokerSender{Invoker: awaitConnection{c}}, client: c}
}

func (s *directSender) Close() error { return s.client.Close() }

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
