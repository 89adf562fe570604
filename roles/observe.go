package roles

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dubbo-lab/dubbo/config"
	"github.com/dubbo-lab/dubbo/console"
	"github.com/dubbo-lab/dubbo/monitor"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/qos"
	"github.com/dubbo-lab/dubbo/node/report"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats"
)

// startObserving makes the process's metrics and opens its QoS port. A
// port another process holds is a warning (two processes on one machine
// are normal, as in Java).
func (n *node) startObserving(cfg *config.File) {
	host, _ := os.Hostname()
	n.metrics = stats.NewMetrics(stats.MetricsConfig{IP: cfg.Protocol.Host, Hostname: host})
	n.regStats = &stats.RegistryStats{}
	n.metrics.AddRegistry(cfg.Application.Name, n.regStats)
	n.gatherer = prometheus.NewRegistry()
	n.gatherer.MustRegister(n.metrics, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if cfg.QoS.Listen == "" {
		return
	}
	srv, err := qos.Start(cfg.QoS, n.qosNode(), n.log)
	if err != nil {
		n.log.Warn("no QoS port for this process", "err", err)
		return
	}
	n.qos = srv
	n.onStop("qos", func(context.Context) error { return srv.Close() })
	n.term.line("qos        %s   (http or telnet; GET /metrics)", srv.Addr())
}

// metricsHandler serves the process's metrics in Prometheus's text format.
func (n *node) metricsHandler() http.Handler {
	return promhttp.HandlerFor(n.gatherer, promhttp.HandlerOpts{})
}

// count exports rec's statistics and reports them to the monitor.
func (n *node) count(rec *stats.Recorder) {
	if rec == nil {
		return
	}
	n.metrics.AddRecorder(rec)
	if n.reporter != nil {
		n.reporter.Add(rec)
	}
}

// addProvider counts a provider's calls and exports its thread pool.
func (n *node) addProvider(p *provider.Provider, app string) {
	n.mu.Lock()
	n.providers = append(n.providers, p)
	n.mu.Unlock()
	n.count(p.Stats())
	n.metrics.AddPool(stats.Pool{Application: app, Name: "DubboServerHandler-" + p.Addr(), Stats: func() stats.PoolStats {
		s := p.PoolStats()
		return stats.PoolStats{Core: s.Core, Max: s.Max, Largest: s.Largest, Active: s.Active,
			Threads: s.Workers, Queued: s.Queued, Rejected: s.Rejected}
	}})
}

// startReporting sends the statistics of this process's providers and
// consumer to the monitor every monitor.interval, through the node's
// consumer (made on the first report in a process without one) or to
// monitor.address; the last, partial interval goes out when the node
// stops.
func (n *node) startReporting(ctx context.Context, cfg *config.File) error {
	if cfg.Registry.Address == "" && cfg.Monitor.Address == "" {
		n.log.Debug("statistics are not reported: no registry to find the monitor in, and no monitor.address")
		return nil
	}
	rep, err := monitor.NewReporter(cfg.Monitor, monitor.ReporterOptions{Consumer: toMonitor{n, ctx, cfg}, Logger: n.log})
	if err != nil || rep == nil {
		return err
	}
	n.reporter = rep
	n.gatherer.MustRegister(rep)
	rep.Start()
	n.onStop("statistics reporter", func(stopCtx context.Context) error {
		// What a monitor that was there does not take in time is spooled
		// under data-dir for the next process to send.
		cctx, cancel := context.WithTimeout(stopCtx, report.CloseTimeout)
		defer cancel()
		if err := rep.Close(cctx); errors.Is(err, report.ErrNoMonitor) {
			n.log.Info("the last statistics were not sent: no monitor", "err", err)
		} else if err != nil {
			return fmt.Errorf("statistics: %w", err)
		}
		return nil
	})
	return nil
}

// toMonitor reaches the monitor through the node's consumer, made on the
// first report in a process without one.
type toMonitor struct {
	n   *node
	ctx context.Context // the node's run context
	cfg *config.File
}

// consumer waits for the node's consumer no longer than callCtx: making it
// waits for the registry (5 s at most), and the making goes on for the
// next report.
func (m toMonitor) consumer(callCtx context.Context) (*consumer.Consumer, error) {
	var cons *consumer.Consumer
	var err error
	made := make(chan struct{})
	go func() {
		c, e := m.n.consumer(m.ctx, m.cfg)
		cons, err = c, e
		close(made)
	}()
	select {
	case <-made:
		return cons, err
	case <-callCtx.Done():
		return nil, errConnecting
	}
}

var errConnecting = errors.New("the node's consumer is still connecting to the registry")

func (m toMonitor) Invoke(callCtx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	cons, err := m.consumer(callCtx)
	switch {
	case errors.Is(err, errConnecting):
		return nil, &rpc.CallError{Kind: rpc.ErrConnection, Service: inv.Service, Method: inv.Method, Detail: err.Error()}
	case err != nil:
		return nil, &rpc.CallError{Kind: rpc.ErrNoProvider, Service: inv.Service, Method: inv.Method,
			Detail: "the node's consumer is not available: " + err.Error()}
	}
	return cons.Invoke(callCtx, inv)
}

// Offered asks the registry whether the monitor is registered, so that
// one that is down is not taken for none (report.Offerer).
func (m toMonitor) Offered(ctx context.Context, iface, version, group string) error {
	cons, err := m.consumer(ctx)
	switch {
	case errors.Is(err, errConnecting):
		return nil // cannot tell yet
	case err != nil: // no consumer, no registry to find a monitor in
		return &rpc.CallError{Kind: rpc.ErrNoProvider, Service: iface, Detail: "the node's consumer is not available: " + err.Error()}
	}
	return cons.Offered(ctx, iface, version, group)
}

// startMonitor runs the monitor role: its store, the MonitorService, and
// on console.listen the console, which serves the store's statistics and
// the process's metrics (and, with a registry to show, the web console).
func (n *node) startMonitor(ctx context.Context, cfg *config.File) error {
	log := n.log.With("role", Monitor)
	st, err := monitor.OpenStore(cfg.Monitor.Server, nil, log)
	if err != nil {
		return err
	}
	n.onStop("monitor store", func(context.Context) error { return st.Close() }) // after the console and the monitor
	var c *console.Console
	if cfg.Console.Listen != "" {
		if cfg.Registry.Address == "" {
			log.Warn("no web console without a registry (registry.address is empty); the stats API and /metrics are served")
		}
		c, err = console.New(ctx, console.Options{Listen: cfg.Console.Listen, Token: cfg.Console.Token, ReadToken: cfg.Console.ReadToken,
			Registry: cfg.Registry.Address, Stats: st, Audit: st, Metrics: n.gatherer, Logger: log.With("component", "console")})
		if err != nil {
			return err
		}
		n.onStop("console", c.Shutdown)
		if err := c.Start(); err != nil {
			return inUse(err, "console", cfg.Console.Listen, `set console.listen to a free address, or "" to run no console`)
		}
	}
	m, err := monitor.Start(ctx, monitor.Options{
		Config:      cfg.Monitor.Server,
		Store:       st,
		Application: cfg.Application.Name,
		Registry:    cfg.Registry.Address,
		Protocol:    monitorProtocol(cfg.Protocol),
		Logger:      log,
		Spool:       cfg.Monitor.Spool,
	})
	if err != nil {
		return monitorInUse(err)
	}
	n.mu.Lock()
	n.mon = m // the QoS port may be asked meanwhile
	n.mu.Unlock()
	n.gatherer.MustRegister(m.Collector())
	n.onStop(Monitor, m.Shutdown)
	n.term.line("monitor    dubbo://%s   db %s", m.Addr(), cfg.Monitor.Server.DB)
	if c != nil {
		if c.Catalog() != nil {
			n.term.line("console    %s", c.URL())
		}
		n.term.line("stats      http://%s/api/v1/stats?interface=<interface>   /metrics", c.Addr())
	}
	return nil
}

// monitorProtocol is [protocol] as the monitor's server takes it: always
// dubbo, which the nodes' reporters call (Dubbo's MonitorService).
func monitorProtocol(pc provider.ProtocolConfig) provider.ProtocolConfig {
	pc.Name = provider.ProtocolDubbo
	return pc
}

// monitorInUse names the MonitorService's port when another process holds
// it.
func monitorInUse(err error) error {
	var op *net.OpError
	if !errors.As(err, &op) || op.Addr == nil {
		return err
	}
	return inUse(err, Monitor, op.Addr.String(), "set monitor.server.port to a free port (or monitor.enabled = false: no monitor, and no statistics reported)")
}

// qosNode is what the QoS commands act on: every provider of the process
// (replicas and the monitor's), its consumer, its plugins.
func (n *node) qosNode() qos.Node {
	return qos.Node{
		Provided: func() []qos.ProvidedService {
			byKey := map[string]bool{} // key -> published by every provider that exports it
			var keys []string
			for _, p := range n.allProviders() {
				for _, s := range p.Services() {
					pub, seen := byKey[s.Key]
					if !seen {
						keys = append(keys, s.Key)
						pub = true
					}
					byKey[s.Key] = pub && s.Published
				}
			}
			out := make([]qos.ProvidedService, len(keys))
			for i, k := range keys {
				out[i] = qos.ProvidedService{Key: k, Registered: byKey[k]}
			}
			return out
		},
		Consumed: func() []qos.ConsumedService {
			cons := n.made.Load()
			if cons == nil {
				return nil
			}
			var out []qos.ConsumedService
			for _, s := range cons.Services() {
				out = append(out, qos.ConsumedService{Key: s.Key, Providers: s.Providers})
			}
			return out
		},
		Online:  n.qosChange(false),
		Offline: n.qosChange(true),
		Ready:   n.ready,
		Started: n.started.Load,
		Metrics: n.metricsHandler(),
		Version: n.version,
	}
}

func (n *node) allProviders() []*provider.Provider {
	n.mu.Lock()
	defer n.mu.Unlock()
	ps := append([]*provider.Provider(nil), n.providers...)
	if n.mon != nil {
		ps = append(ps, n.mon.Provider())
	}
	return ps
}

// qosChange takes the matching services of every provider offline (or
// online again).
func (n *node) qosChange(offline bool) func(ctx context.Context, pattern *regexp.Regexp) (bool, error) {
	return func(ctx context.Context, pattern *regexp.Regexp) (bool, error) {
		found := false
		var errs []error
		for _, p := range n.allProviders() {
			change := p.Online
			if offline {
				change = p.Offline
			}
			ok, err := change(ctx, pattern.MatchString)
			found = found || ok
			if err != nil {
				errs = append(errs, err)
			}
		}
		return found, errors.Join(errs...)
	}
}

// isReady is ready's verdict alone: the Triple ports' health service
// reports it.
func (n *node) isReady() bool {
	ok, _ := n.ready()
	return ok
}

// ready is the readiness probe: start-up finished, every plugin up, every
// exported service registered (not offline, not withdrawn by a rule).
func (n *node) ready() (bool, string) {
	if !n.started.Load() {
		return false, "starting"
	}
	var why []string
	for _, s := range n.pluginStates() {
		if !s.Up {
			reason := "not started yet"
			if s.Err != nil {
				reason, _, _ = strings.Cut(s.Err.Error(), "\n")
			}
			why = append(why, fmt.Sprintf("plugin %s (%s) is down: %s", s.Name, s.Where, reason))
		}
	}
	for _, p := range n.allProviders() {
		for _, s := range p.Services() {
			switch {
			case !s.DelayedUntil.IsZero():
				why = append(why, fmt.Sprintf("service %s on %s is exported after its delay, at %s", s.Key, p.Addr(), s.DelayedUntil.Format(time.RFC3339)))
			case s.Offline:
				why = append(why, fmt.Sprintf("service %s on %s is offline", s.Key, p.Addr()))
			case !s.Published:
				why = append(why, fmt.Sprintf("service %s on %s is not registered (an override rule disables it)", s.Key, p.Addr()))
			}
		}
	}
	return len(why) == 0, strings.Join(why, "\n")
}
