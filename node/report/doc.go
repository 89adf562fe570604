// Package report sends a node's statistics to Dubbo's monitor.
//
// A Reporter collects the node's stats.Recorders every interval into one
// Report, queues it and sends the queue, oldest first, from its own
// goroutine through a Sender; nothing of it runs on the call path. A
// monitor that is down, frozen or slow only makes the queue grow: failed
// reports are kept and sent again with backoff; past Config.Buffer (an
// hour of intervals by default) the oldest are dropped, counted
// (Dropped, dubbo_monitor_reports_dropped_total) and logged once until a
// report gets through. Close sends the last, partial interval and what is
// queued, within its context. Every sample carries the node's identity and
// the interval's end, so a report sent again after a lost answer is
// recognised by the monitor (stats.Sample.ID).
//
// InvokerSender is the Sender Dubbo nodes use: one
// org.apache.dubbo.monitor.MonitorService.collect(URL) call per sample over
// dubbo/hessian2, the URL as Dubbo 2.7's org.apache.dubbo.common.URL
// object (URLObject). On the monitor's side SampleFromArg reads that
// argument back, from our nodes or Java ones (2.7's or 3's URL form).
//
// Wiring, in a node with a provider and a consumer:
//
//	sender := &report.InvokerSender{Invoker: consumerInvoker} // or a transport.Client to monitor.address
//	rep, err := report.New(report.Config{Interval: cfg.Monitor.Interval, Logger: log}, sender, providerRec, consumerRec)
//	if err != nil { ... }
//	rep.Start()
//	...
//	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
//	defer cancel()
//	if err := rep.Close(ctx); err != nil { log.Warn("statistics", "err", err) }
//
// and, on the monitor, in the handler of MonitorService.collect:
//
//	sample, err := report.SampleFromArg(req.Args[0])
//	// store sample once per sample.ID()
package report
