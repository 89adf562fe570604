package monitor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/monitor/store"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/report"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats"
)

// Dubbo's monitor interfaces: 2.7 and later, and 2.6's. The monitor serves
// both.
const (
	ServiceInterface       = report.MonitorService
	LegacyServiceInterface = "com.alibaba.dubbo.monitor.MonitorService"
	legacyURLClass         = "com.alibaba.dubbo.common.URL"
)

// services are the MonitorService interfaces as provider services.
func services(inv rpc.Invoker) []provider.Service {
	svc := func(iface, urlClass string) provider.Service {
		return provider.Service{Interface: iface, Invoker: inv, Methods: []provider.Method{
			{Name: report.CollectMethod, ParamTypes: []string{urlClass}, ReturnType: "void"},
			{Name: "lookup", ParamTypes: []string{urlClass}, ReturnType: "java.util.List"},
		}}
	}
	return []provider.Service{svc(ServiceInterface, report.URLClass), svc(LegacyServiceInterface, legacyURLClass)}
}

// Collector is the MonitorService: collect(URL) reads one statistics
// sample, from our nodes or Java ones, and answers once it is stored, so a
// sample whose answer a node does not get is sent again (and stored once).
// Calls arriving together are stored in one transaction.
type Collector struct {
	store *store.Store
	log   *slog.Logger

	queue chan *pending
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once

	received, refused, failed atomic.Int64
	refusedLogged             atomic.Int64 // UnixNano of the last refusal logged
}

// pending is one stored row a collect call waits for.
type pending struct {
	row  store.Row
	done chan error
}

// maxBatch bounds the rows of one transaction.
const maxBatch = 1024

// NewCollector stores into st from a goroutine of its own; Close stops it.
func NewCollector(st *store.Store, log *slog.Logger) *Collector {
	if log == nil {
		log = slog.Default()
	}
	c := &Collector{store: st, log: log, queue: make(chan *pending, maxBatch), stop: make(chan struct{}), done: make(chan struct{})}
	go c.write()
	return c
}

// Close stops storing; calls waiting get an error.
func (c *Collector) Close() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
}

var errClosed = errors.New("monitor is stopping")

// Invoke serves MonitorService.collect and lookup.
func (c *Collector) Invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	switch inv.Method {
	case report.CollectMethod:
	case "lookup":
		// Dubbo's simple monitor answers queries from its own pages; ours
		// are GET /api/v1/stats.
		return &rpc.Result{Value: []any{}}, nil
	default:
		return nil, fmt.Errorf("MonitorService has no method %s", inv.Method)
	}
	c.received.Add(1)
	if len(inv.Args) != 1 {
		return nil, c.refuse(fmt.Errorf("collect takes one URL, got %d arguments", len(inv.Args)))
	}
	s, err := report.SampleFromArg(inv.Args[0])
	if err != nil {
		return nil, c.refuse(err)
	}
	row := RowOf(s)
	if err := row.Validate(); err != nil {
		return nil, c.refuse(err)
	}
	p := &pending{row: row, done: make(chan error, 1)}
	select {
	case c.queue <- p:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.stop:
		return nil, errClosed
	}
	select {
	case err := <-p.done:
		if err != nil {
			// Not the sender's fault: it sends the sample again later.
			return nil, fmt.Errorf("store statistics: %w", err)
		}
		return &rpc.Result{}, nil
	case <-ctx.Done():
		return nil, ctx.Err() // it may still be stored; a resend is stored once
	}
}

// refuse answers a sample that cannot be stored with an exception naming
// what is wrong, and logs it at most every 10 seconds.
func (c *Collector) refuse(err error) error {
	c.refused.Add(1)
	now := time.Now().UnixNano()
	if last := c.refusedLogged.Load(); now-last > int64(10*time.Second) && c.refusedLogged.CompareAndSwap(last, now) {
		c.log.Warn("statistics refused", "err", err, "refused_total", c.refused.Load())
	}
	return &rpc.Exception{Class: "java.lang.IllegalArgumentException", Message: "statistics refused: " + err.Error()}
}

// write stores what collect calls queue, all that is queued at once in
// one transaction.
func (c *Collector) write() {
	defer close(c.done)
	batch := make([]*pending, 0, maxBatch)
	rows := make([]store.Row, 0, maxBatch)
	for {
		select {
		case p := <-c.queue:
			batch = append(batch[:0], p)
		case <-c.stop:
			c.drain()
			return
		}
	more:
		for len(batch) < maxBatch {
			select {
			case p := <-c.queue:
				batch = append(batch, p)
			default:
				break more
			}
		}
		rows = rows[:0]
		for _, p := range batch {
			rows = append(rows, p.row)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := c.store.Insert(ctx, rows)
		cancel()
		if err != nil {
			c.failed.Add(1)
			c.log.Error("store statistics", "rows", len(rows), "err", err)
		}
		for _, p := range batch {
			p.done <- err
		}
	}
}

// drain fails the calls still queued when the collector stops.
func (c *Collector) drain() {
	for {
		select {
		case p := <-c.queue:
			p.done <- errClosed
		default:
			return
		}
	}
}

// RowOf is the store's row of a sample. A sample of a Java node, which
// names no node and no interval, is the node of its application and
// address, over Dubbo's default interval of a minute. Text longer than the
// store keeps is cut, so that a node whose names are too long still has
// its calls counted.
func RowOf(s stats.Sample) store.Row {
	self := hostPort(s.Host, s.Port)
	r := store.Row{
		Time:          s.Timestamp.Unix(),
		Interval:      intervalSeconds(s.Interval),
		Side:          s.Side.String(),
		Application:   cut(s.Application),
		Node:          cut(s.Node),
		Interface:     cut(s.Interface),
		Group:         cut(s.Group),
		Version:       cut(s.Version),
		Method:        cut(s.Method),
		Success:       s.Success,
		Failure:       s.Failure,
		Input:         s.Input,
		Output:        s.Output,
		ElapsedMs:     s.Elapsed,
		MaxElapsedMs:  s.MaxElapsed,
		Concurrent:    float64(s.Concurrent),
		MaxConcurrent: s.MaxConcurrent,
		MaxInput:      s.MaxInput,
		MaxOutput:     s.MaxOutput,
		Histogram:     s.Histogram,
	}
	if r.Node == "" {
		r.Node = cut(s.Application + "@" + self)
	}
	if s.Side == stats.Provider {
		r.Address, r.Consumer = cut(self), cut(s.Peer)
	} else {
		r.Address, r.Consumer = cut(s.Peer), cut(self)
	}
	return r
}

// maxText is the store's bound on a text field.
const maxText = 1024

func cut(s string) string {
	if len(s) > maxText {
		return s[:maxText]
	}
	return s
}

// intervalSeconds is an interval in whole seconds, rounded up, within the
// store's 1..3600; 60 (Dubbo's default) when the sender did not say.
func intervalSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 60
	}
	return min(max(int64((d+time.Second-1)/time.Second), 1), 3600)
}

func hostPort(host string, port int) string {
	if port == 0 {
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// storeSpool stores the reports stopped nodes left in sp (each sample
// once: the store ignores what it has) and removes them; a report that
// cannot be stored stays for the next start.
func storeSpool(ctx context.Context, st *store.Store, sp *report.Spool, log *slog.Logger) {
	spooled, bad, err := sp.Read()
	for _, e := range append(bad, err) {
		if e != nil {
			log.Warn("statistics left by a stopped node cannot be read; they are lost", "err", e)
		}
	}
	var reports, rows, stored int
	for _, r := range spooled {
		batch := make([]store.Row, 0, len(r.Samples))
		for _, s := range r.Samples {
			row := RowOf(s)
			if err := row.Validate(); err != nil {
				log.Warn("a spooled statistics sample is refused", "file", r.File, "err", err)
				continue
			}
			batch = append(batch, row)
		}
		n, err := st.Insert(ctx, batch)
		if err != nil {
			log.Warn("cannot store spooled statistics; they stay in the spool", "file", r.File, "err", err)
			continue
		}
		if err := sp.Remove(r.File); err != nil {
			log.Warn("cannot remove spooled statistics once stored", "err", err)
		}
		reports, rows, stored = reports+1, rows+len(batch), stored+n
	}
	if reports > 0 {
		log.Info("stored the statistics stopped nodes left in the spool", "spool", sp.Dir, "reports", reports, "rows", rows, "new", stored)
	}
}
