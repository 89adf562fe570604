// Package monitor is Dubbo's monitor role, and how nodes reach it.
//
// The role (Start) is a provider of Dubbo's MonitorService
// (org.apache.dubbo.monitor.MonitorService, and 2.6's
// com.alibaba.dubbo.monitor.MonitorService) on monitor.server.port,
// registered in the registry like any provider
// (/dubbo/org.apache.dubbo.monitor.MonitorService/providers). Each
// collect(URL statistics) call carries one sample of one node's interval
// (node/report); the Collector turns it into a store.Row and answers once
// it is stored (store.Store, SQLite, which keeps each interval of each node
// once, so a sample sent again after a lost answer is not counted twice).
// Retention runs in the background, and so does storing what stopped nodes
// left in the spool (Options.Spool) when the monitor was not there to take
// it. The monitor serves no HTTP: package
// console owns the URL space on console.listen, and the role that runs
// the monitor (package roles) hands it the store (GET /api/v1/stats,
// /api/v1/series, /api/v1/traffic) and a metrics registry holding
// Collector (GET /metrics).
//
// Nodes report through a Reporter (NewReporter): every monitor.interval it
// sends each interval's samples of the node's stats.Recorders, over the
// node's consumer (which finds the monitor in the registry) or straight to
// monitor.address, from a bounded queue, off the call path.
//
//	m, err := monitor.Start(ctx, monitor.Options{Config: cfg.Monitor.Server, Registry: reg})
//	...
//	rep, err := monitor.NewReporter(cfg.Monitor, monitor.ReporterOptions{Consumer: cons}, cons.Stats())
//	rep.Start()
//	...
//	rep.Close(ctx) // sends the last, partial interval
//	m.Shutdown(ctx)
package monitor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbo-lab/dubbo/monitor/store"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/report"
)

// Options configure the monitor role.
type Options struct {
	// Config is the [monitor.server] section.
	Config ServerConfig
	// Application is the Dubbo application the MonitorService is
	// registered under. Default "dubbo-monitor".
	Application string
	// Registry is where the MonitorService registers; "" = nowhere (nodes
	// need monitor.address).
	Registry string
	// Protocol is the dubbo server's host and settings; its port is
	// Config.Port.
	Protocol provider.ProtocolConfig
	// Store, when set, is the statistics store, opened by the caller
	// (who shares it with the web console and closes it after Shutdown).
	// Default nil: Start opens Config.DB, and Shutdown closes it.
	Store *store.Store
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now is the store's clock, for retention. Default time.Now.
	Now func() time.Time
	// RetainEvery is how often retention runs. Default a minute.
	RetainEvery time.Duration
	// Spool is where stopped nodes left the statistics they could not send
	// (monitor.spool): Start stores them in the background and removes
	// them. "" = none.
	Spool string
}

// Monitor is a running monitor role.
type Monitor struct {
	store   *store.Store
	ownsDB  bool // the store is ours to close
	coll    *Collector
	prov    *provider.Provider
	metrics *metrics
	log     *slog.Logger

	stopRetain context.CancelFunc
	retainDone chan struct{}
	spoolDone  chan struct{} // closed when the spool is stored; nil: none
}

// Start opens the store, starts its retention, serves and registers the
// MonitorService.
func Start(ctx context.Context, o Options) (_ *Monitor, err error) {
	if o.Application == "" {
		o.Application = "dubbo-monitor"
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	// Not the named result, which an error return sets to nil under the
	// deferred close and the retention goroutine.
	m := &Monitor{log: log, retainDone: make(chan struct{})}
	defer func() {
		if err != nil {
			m.close()
		}
	}()
	if m.store = o.Store; m.store == nil {
		if m.store, err = OpenStore(o.Config, o.Now, log); err != nil {
			return nil, err
		}
		m.ownsDB = true
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.stopRetain = cancel
	go func() {
		defer close(m.retainDone)
		m.store.Run(rctx, o.RetainEvery)
	}()
	m.coll = NewCollector(m.store, log)
	m.metrics = newMetrics(m.store, m.coll)
	if o.Spool != "" {
		m.spoolDone = make(chan struct{})
		go func() {
			defer close(m.spoolDone)
			storeSpool(rctx, m.store, &report.Spool{Dir: o.Spool}, log)
		}()
	}

	pc := o.Protocol
	pc.Port = o.Config.Port
	if pc.Port == 0 {
		pc.Port = DefaultPort
	}
	// The MonitorService's own calls are not counted, as in Dubbo; it is
	// found at interface level, as Dubbo's DubboMonitorFactory looks it up.
	m.prov, err = provider.Start(ctx, provider.Config{Application: o.Application, Registry: o.Registry,
		RegisterMode: provider.RegisterInterface, Protocol: pc}, provider.Options{Logger: log, NoStatistics: true})
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	for _, svc := range services(m.coll) {
		if err := m.prov.Export(ctx, svc); err != nil {
			return nil, fmt.Errorf("monitor: %w", err)
		}
	}
	log.Info("monitor started", "dubbo", m.prov.Addr(), "db", o.Config.DB)
	return m, nil
}

// OpenStore opens the statistics store as the [monitor.server] section
// says; now is its clock (nil: time.Now).
func OpenStore(cfg ServerConfig, now func() time.Time, log *slog.Logger) (*store.Store, error) {
	if cfg.DB == "" {
		return nil, errors.New("monitor: no database path (monitor.server.db)")
	}
	st, err := store.Open(cfg.DB, store.Options{RawRetention: cfg.RawRetention,
		RollupRetention: cfg.RollupRetention, Now: now, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	return st, nil
}

// Addr is the MonitorService's host:port.
func (m *Monitor) Addr() string { return m.prov.Addr() }

// Store is the statistics store.
func (m *Monitor) Store() *store.Store { return m.store }

// Collector is the monitor's own metrics (samples received and refused,
// rows stored, insert time, database size), for the process's /metrics.
func (m *Monitor) Collector() prometheus.Collector { return m.metrics }

// Ready says whether the MonitorService is exported and registered.
func (m *Monitor) Ready() (bool, string) {
	for _, s := range m.prov.Services() {
		if !s.Published {
			return false, "monitor service " + s.Key + " is not registered"
		}
	}
	return true, ""
}

// Provider is the MonitorService's provider (for QoS online/offline).
func (m *Monitor) Provider() *provider.Provider { return m.prov }

// Shutdown unregisters the MonitorService and lets calls in flight finish
// (their samples are stored), then stops retention and the store.
func (m *Monitor) Shutdown(ctx context.Context) error {
	var errs []error
	if m.prov != nil {
		errs = append(errs, m.prov.Shutdown(ctx))
		m.prov = nil
	}
	errs = append(errs, m.close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("monitor shutdown: %w", err)
	}
	return nil
}

// close stops what Start started, in reverse.
func (m *Monitor) close() error {
	var errs []error
	if m.prov != nil {
		errs = append(errs, m.prov.Close())
	}
	if m.coll != nil {
		m.coll.Close()
	}
	if m.stopRetain != nil {
		m.stopRetain()
		<-m.retainDone
	}
	if m.spoolDone != nil {
		<-m.spoolDone
	}
	if m.store != nil && m.ownsDB {
		errs = append(errs, m.store.Close())
	}
	m.store = nil
	return errors.Join(errs...)
}
