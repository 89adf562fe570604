package embeddedzk

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk/wire"
)

// serverStats are the counters `srvr`, `stat` and `mntr` print.
type serverStats struct {
	received atomic.Int64
	sent     atomic.Int64
	// outstanding are the requests handled whose reply is not written yet
	// (a gauge: reset leaves it).
	outstanding atomic.Int64

	mu  sync.Mutex
	lat latency
}

// latency keeps min/avg/max in milliseconds, like ZooKeeper's ServerStats.
type latency struct {
	min, max, total, count int64
	last                   int64
}

func (l *latency) add(ms int64) {
	if l.count == 0 || ms < l.min {
		l.min = ms
	}
	if ms > l.max {
		l.max = ms
	}
	l.total += ms
	l.count++
	l.last = ms
}

func (l *latency) avg() float64 {
	if l.count == 0 {
		return 0
	}
	return math.Round(float64(l.total)/float64(l.count)*10000) / 10000
}

func (st *serverStats) noteLatency(d time.Duration) {
	st.mu.Lock()
	st.lat.add(d.Milliseconds())
	st.mu.Unlock()
}

func (st *serverStats) latency() latency {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.lat
}

func (st *serverStats) reset() {
	st.received.Store(0)
	st.sent.Store(0)
	st.mu.Lock()
	st.lat = latency{}
	st.mu.Unlock()
}

// connStats are the per-connection fields `cons` prints.
type connStats struct {
	recv atomic.Int64
	sent atomic.Int64

	established time.Time

	mu       sync.Mutex
	lastOp   string
	lastCxid int32
	lastZxid int64
	lastResp time.Time
	lat      latency
}

func (cs *connStats) noteConnect() {
	cs.mu.Lock()
	cs.lastOp = "SESS"
	cs.lastResp = time.Now()
	cs.mu.Unlock()
}

func (cs *connStats) noteRequest(h wire.RequestHeader, zxid int64, start time.Time) {
	now := time.Now()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.lastOp = h.Type.Tag()
	if h.Xid >= 0 {
		cs.lastCxid = h.Xid
	}
	cs.lastZxid = zxid
	cs.lastResp = now
	cs.lat.add(now.Sub(start).Milliseconds())
}

func (cs *connStats) snapshot() (op string, cxid int32, zxid int64, resp time.Time, lat latency) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.lastOp, cs.lastCxid, cs.lastZxid, cs.lastResp, cs.lat
}

func (cs *connStats) reset() {
	cs.recv.Store(0)
	cs.sent.Store(0)
	cs.mu.Lock()
	cs.lat = latency{}
	cs.lastOp, cs.lastCxid, cs.lastZxid, cs.lastResp = "NA", 0, -1, time.Time{}
	cs.mu.Unlock()
}
