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
// queued, within its context (CloseTimeout): a monitor registered but not
// reached (killed, restarting) is tried again until then; one not
// registered at all (a send failing with ErrNoMonitor) is not waited for.
// What Close could not send of a monitor that was there goes to the
// Spool (Config.Spool, <data-dir>/spool): one file per report, bounded in
// size, which the next process started with that data directory sends
// first (and the monitor role stores); a loss is a warning with its
// count. Every sample carries the node's identity and the interval's
// end, so a report sent again (after a lost answer, or from the spool by
// two processes) is recognised by the monitor (stats.Sample.ID).
//
// InvokerSender is the Sender Dubbo nodes use: one
// org.apache.dubbo.monitor.MonitorService.collect(URL) call per sample over
// dubbo/hessian2, the URL as Dubbo 2.7's org.apache.dubbo.common.URL
// object (URLObject). On the monitor's side SampleFromArg reads that
// argument back, from our nodes or Java ones (2.7's or 3's URL form).
//
// Reporter is the one reporter of a node. monitor.NewReporter makes it as
// the [monitor] section says (through the node's consumer, or to
// monitor.address); report.New with a Sender of one's own serves tests and
// other destinations:
//
//	rep, err := monitor.NewReporter(cfg.Monitor, monitor.ReporterOptions{Consumer: cons}, providerRec, consumerRec)
//	if err != nil || rep == nil { ... } // nil: monitor.enabled = false
//	rep.Start()
//	...
//	ctx, cancel := context.WithTimeout(context.Background(), report.CloseTimeout)
//	defer cancel()
//	if err := rep.Close(ctx); errors.Is(err, report.ErrNoMonitor) {
//		// normal for a node run without a monitor
//	} else if err != nil {
//		log.Warn("statistics not sent", "err", err)
//	}
//
// and, on the monitor, in the handler of MonitorService.collect:
//
//	sample, err := report.SampleFromArg(req.Args[0])
//	// store sample once per sample.ID()
package report
