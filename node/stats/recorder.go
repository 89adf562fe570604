package stats

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/node/stats/histogram"
)

// Side is which end of a call a Recorder counts.
type Side uint8

// Sides.
const (
	Provider Side = iota + 1
	Consumer
)

func (s Side) String() string {
	switch s {
	case Provider:
		return "provider"
	case Consumer:
		return "consumer"
	}
	return "unknown"
}

// Key is what one Counter counts: one method of one service, with one peer.
type Key struct {
	Interface, Group, Version, Method string
	// Peer is, on a provider, the consumer's IP (without port, as Dubbo
	// records it); on a consumer, the provider's host:port.
	Peer string
}

// Other is the Peer (and, past the hard bound, every field) that keys
// beyond Config.MaxKeys are counted under.
const Other = "other"

// DefaultMaxKeys is Config.MaxKeys's default.
const DefaultMaxKeys = 10000

// Config describes the node side a Recorder counts for.
type Config struct {
	Side        Side
	Application string // application.name
	// Host and Port are this node's address in its statistics URLs: a
	// provider's protocol host and port, a consumer's IP and 0 (as Dubbo).
	Host string
	Port int
	// MaxKeys bounds the distinct keys (default DefaultMaxKeys). Past it a
	// new key is counted under its method with Peer Other; past another
	// eighth of it, under one key whose fields are all Other. Folded calls
	// are counted (Recorder.Folded).
	MaxKeys int
}

// Recorder holds the Counters of one side of one node. Counter lookups of
// known keys read an immutable map behind an atomic pointer: no lock, no
// allocation. New keys go to a small map under a mutex and are moved into
// a new immutable map in batches, so the copying stays linear in the
// number of keys.
type Recorder struct {
	cfg   Config
	read  atomic.Pointer[map[Key]*Counter]
	mu    sync.Mutex
	fresh map[Key]*Counter // keys not yet in read; under mu
	// hits of fresh keys since the last promotion; under mu
	freshHits int
	total     int // keys in read and fresh; under mu
	folded    atomic.Int64

	epoch time.Time // the counters' time base

	collectMu   sync.Mutex
	lastCollect time.Time // under collectMu
}

// NewRecorder returns an empty Recorder; Collect's first interval starts now.
func NewRecorder(cfg Config) *Recorder {
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = DefaultMaxKeys
	}
	now := time.Now()
	r := &Recorder{cfg: cfg, fresh: map[Key]*Counter{}, epoch: now, lastCollect: now}
	empty := map[Key]*Counter{}
	r.read.Store(&empty)
	return r
}

// Config is the recorder's configuration, defaults filled in.
func (r *Recorder) Config() Config { return r.cfg }

// Counter returns the counter of k, creating it on first use.
func (r *Recorder) Counter(k Key) *Counter {
	if c := (*r.read.Load())[k]; c != nil {
		return c
	}
	return r.slow(k)
}

func (r *Recorder) slow(k Key) *Counter {
	// Past the bound a new key is folded. Its folded key is normally in
	// read already, so a flood of new peers takes no lock.
	folded := false
	if len(*r.read.Load()) >= r.cfg.MaxKeys {
		k, folded = foldPeer(k), true
		r.folded.Add(1)
		if c := (*r.read.Load())[k]; c != nil {
			return c
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.lookupLocked(k); c != nil {
		return c
	}
	if !folded && r.total >= r.cfg.MaxKeys {
		k, folded = foldPeer(k), true
		r.folded.Add(1)
		if c := r.lookupLocked(k); c != nil {
			return c
		}
	}
	if r.total >= r.cfg.MaxKeys+r.cfg.MaxKeys/8 {
		k = Key{Interface: Other, Group: Other, Version: Other, Method: Other, Peer: Other}
		if !folded {
			r.folded.Add(1)
		}
		if c := r.lookupLocked(k); c != nil {
			return c
		}
	}
	c := &Counter{key: k, epoch: r.epoch}
	r.fresh[k] = c
	r.total++
	r.maybePromote()
	return c
}

func foldPeer(k Key) Key {
	k.Peer = Other
	return k
}

// lookupLocked finds k in read or fresh. Called with mu held.
func (r *Recorder) lookupLocked(k Key) *Counter {
	if c := (*r.read.Load())[k]; c != nil {
		return c
	}
	if c := r.fresh[k]; c != nil {
		r.freshHits++
		r.maybePromote()
		return c
	}
	return nil
}

// maybePromote moves the fresh keys into a new read map once they (or
// their lookups) amount to an eighth of it, so each key is copied a
// bounded number of times on average. At the bound it always does: the
// lock-free fold in slow must not hide a key still in fresh. Called with
// mu held.
func (r *Recorder) maybePromote() {
	old := *r.read.Load()
	if len(r.fresh) == 0 || (r.total < r.cfg.MaxKeys && len(r.fresh)+r.freshHits < max(1, len(old)/8)) {
		return
	}
	m := make(map[Key]*Counter, len(old)+len(r.fresh))
	for k, c := range old {
		m[k] = c
	}
	for k, c := range r.fresh {
		m[k] = c
	}
	r.read.Store(&m)
	clear(r.fresh)
	r.freshHits = 0
}

// Folded is how many lookups were counted under a folded key because the
// recorder held MaxKeys keys.
func (r *Recorder) Folded() int64 { return r.folded.Load() }

// counters returns every counter, in no particular order.
func (r *Recorder) counters() []*Counter {
	r.mu.Lock()
	read := *r.read.Load()
	out := make([]*Counter, 0, len(read)+len(r.fresh))
	for _, c := range r.fresh {
		out = append(out, c)
	}
	r.mu.Unlock()
	for _, c := range read {
		out = append(out, c)
	}
	return out
}

// Collect returns the interval since the previous Collect (or since
// NewRecorder) as one Sample per key that had activity, sorted by key, and
// starts the next interval. now is the interval's end, the samples'
// Timestamp. A call that ends while Collect reads its counter may have
// some of its fields in this interval and the rest in the next; nothing
// is lost or counted twice across intervals.
func (r *Recorder) Collect(now time.Time) []Sample {
	r.collectMu.Lock()
	defer r.collectMu.Unlock()
	interval := now.Sub(r.lastCollect)
	r.lastCollect = now
	var out []Sample
	var hist histogram.Counts
	for _, c := range r.counters() {
		t := c.totals()
		p := c.prev
		c.prev = t
		c.readHist(&hist)
		for i, n := range c.prevHist {
			c.prevHist[i] = hist[i]
			hist[i] -= n
		}
		maxIn, maxOut := c.maxInput.Swap(0), c.maxOutput.Swap(0)
		maxEl, maxConc := c.maxElapsed.Swap(0), c.maxConc.Swap(0)
		raiseMax(&c.maxRT, maxEl)
		calls := (t.succeeded + t.failed) - (p.succeeded + p.failed)
		if calls == 0 && t.input == p.input && t.output == p.output && maxConc == 0 {
			continue
		}
		s := Sample{
			Side:          r.cfg.Side,
			Application:   r.cfg.Application,
			Host:          r.cfg.Host,
			Port:          r.cfg.Port,
			Interface:     c.key.Interface,
			Group:         c.key.Group,
			Version:       c.key.Version,
			Method:        c.key.Method,
			Peer:          c.key.Peer,
			Success:       t.succeeded - p.succeeded,
			Failure:       t.failed - p.failed,
			Input:         t.input - p.input,
			Output:        t.output - p.output,
			Elapsed:       t.elapsed/1e6 - p.elapsed/1e6, // whole ms; the remainder carries over
			MaxInput:      maxIn,
			MaxOutput:     maxOut,
			MaxElapsed:    maxEl / 1e6,
			MaxConcurrent: maxConc,
			Timestamp:     now,
			Interval:      interval,
			Histogram:     hist.Sparse(),
		}
		if calls > 0 {
			s.Concurrent = ((t.concSum - p.concSum) + calls/2) / calls
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return keyLess(out[i].key(), out[j].key()) })
	return out
}

func keyLess(a, b Key) bool {
	switch {
	case a.Interface != b.Interface:
		return a.Interface < b.Interface
	case a.Group != b.Group:
		return a.Group < b.Group
	case a.Version != b.Version:
		return a.Version < b.Version
	case a.Method != b.Method:
		return a.Method < b.Method
	}
	return a.Peer < b.Peer
}
