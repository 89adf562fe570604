package fastpath

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Inline lets the readers of many streams (a server's connections, a
// plugin link) run work inline, on the reading goroutine, and hands the
// reading of a stream to a new goroutine when its inline work runs for
// Stall: its watchdog ticks every Stall while inline work was started, or
// a late frame queued, in the last watchIdle, so an idle process stays
// idle and a quick run costs an atomic store and a timestamp. The same
// ticks write the late frames (Writer.Late) of the Writers made with it
// that no other write took within Stall.
type Inline struct {
	stall time.Duration
	born  time.Time
	last  atomic.Int64  // when the last run started, by now
	wake  chan struct{} // capacity 1: a run started
	stop  chan struct{}
	once  sync.Once

	mu      sync.Mutex
	readers map[*Reader]struct{}
	late    map[*Writer]struct{} // writers that queued late frames
}

// watchIdle is how long after the last inline run the watchdog goes on
// ticking.
const watchIdle = 100 * time.Millisecond

// NewInline starts the watchdog of the readers it makes: inline work that
// runs stall or longer has its stream's reading handed over.
func NewInline(stall time.Duration) *Inline {
	in := &Inline{stall: stall, born: time.Now(), wake: make(chan struct{}, 1), stop: make(chan struct{}),
		readers: make(map[*Reader]struct{}), late: make(map[*Writer]struct{})}
	go in.watch()
	return in
}

// Stop ends the watchdog: no hand-over starts after it (one in progress
// may finish). Readers' work still runs inline.
func (in *Inline) Stop() { in.once.Do(func() { close(in.stop) }) }

// now is the watchdog's clock: monotonic, for the timestamps it compares.
func (in *Inline) now() time.Duration { return time.Since(in.born) }

// poke says that a run started, or a late frame queued.
func (in *Inline) poke(at time.Duration) {
	in.last.Store(int64(at))
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

func (in *Inline) watch() {
	for {
		select {
		case <-in.stop:
			return
		case <-in.wake:
		}
		t := time.NewTicker(in.stall)
		for in.now()-time.Duration(in.last.Load()) < watchIdle {
			select {
			case <-in.stop:
				t.Stop()
				return
			case <-t.C:
			}
			in.handOverSlow()
			in.flushLate()
		}
		t.Stop()
	}
}

// handOverSlow hands over every reader whose run has run for stall.
func (in *Inline) handOverSlow() {
	now := in.now()
	var slow []*Run
	in.mu.Lock()
	for r := range in.readers {
		if run := r.run.Load(); run != nil && now-run.since >= in.stall {
			slow = append(slow, run)
		}
	}
	in.mu.Unlock()
	for _, run := range slow {
		run.HandOver()
	}
}

// watchLate has the watchdog write w's late frames once they waited for
// stall.
func (in *Inline) watchLate(w *Writer) {
	in.mu.Lock()
	in.late[w] = struct{}{}
	in.mu.Unlock()
	in.poke(in.now())
}

// flushLate writes the late frames that waited for stall; a writer whose
// late frames a write took meanwhile is no longer watched.
func (in *Inline) flushLate() {
	due := MonoNow() - int64(in.stall)
	var flush []*Writer
	in.mu.Lock()
	for w := range in.late {
		switch since := w.lateSince.Load(); {
		case since == 0:
			delete(in.late, w)
		case since <= due:
			delete(in.late, w)
			flush = append(flush, w)
		}
	}
	in.mu.Unlock()
	for _, w := range flush {
		w.FlushLate()
	}
}

// A Reader is the reading of one stream: one goroutine at a time reads it
// and may run work inline (Run). When that work runs long, or must wait
// for the stream itself (a call to the other side whose reply this stream
// brings), the reading is handed over: resume starts a new goroutine that
// reads on, and the old one, once its work returns, is no longer the
// reader.
type Reader struct {
	in     *Inline
	resume func()
	run    atomic.Pointer[Run] // the run in progress, if any
}

// NewReader makes the Reader of one stream; resume must start a goroutine
// that reads on (it is called at most once per hand-over). Close it when
// the stream ends.
func (in *Inline) NewReader(resume func()) *Reader {
	r := &Reader{in: in, resume: resume}
	in.mu.Lock()
	in.readers[r] = struct{}{}
	in.mu.Unlock()
	return r
}

// Close stops watching the reader.
func (r *Reader) Close() {
	r.in.mu.Lock()
	delete(r.in.readers, r)
	r.in.mu.Unlock()
}

// A Run is one piece of work running inline on a reader.
type Run struct {
	reader *Reader
	since  time.Duration // when it started, by the watchdog's clock
	state  atomic.Int32  // running, handedOver, finished
}

const (
	running int32 = iota
	handedOver
	finished
)

// Run runs f on the calling goroutine, the stream's reader, and says
// whether that goroutine is still the reader once f returned: false means
// the reading was handed over meanwhile, and the caller must stop reading.
func (r *Reader) Run(f func(run *Run)) (reader bool) {
	run := &Run{reader: r, since: r.in.now()}
	r.run.Store(run)
	r.in.poke(run.since)
	f(run)
	// A successor started by a hand-over may have stored its own run
	// meanwhile; that one the watchdog must go on seeing.
	r.run.CompareAndSwap(run, nil)
	return run.state.CompareAndSwap(running, finished)
}

// HandOver lets a new goroutine read the stream while run goes on. It does
// nothing once run finished or was handed over already.
func (run *Run) HandOver() {
	if run.state.CompareAndSwap(running, handedOver) {
		run.reader.resume()
	}
}

type runKey struct{}

// WithRun returns ctx carrying run, for the work it runs: work that is
// about to wait for run's own stream hands the reading over first
// (HandOverFor).
func WithRun(ctx context.Context, run *Run) context.Context {
	return context.WithValue(ctx, runKey{}, run)
}

// RunOf returns the inline run ctx's work is part of (WithRun), or nil.
func RunOf(ctx context.Context) *Run {
	run, _ := ctx.Value(runKey{}).(*Run)
	return run
}

// Elapsed is how long run has been running: its start was read anyway, for
// the watchdog, so timing work that runs inline costs one clock read.
func (run *Run) Elapsed() time.Duration { return run.reader.in.now() - run.since }

// HandOverFor hands r's reading over if ctx's work runs inline on r: the
// work is about to wait for something only r's stream brings.
func HandOverFor(ctx context.Context, r *Reader) {
	if run, ok := ctx.Value(runKey{}).(*Run); ok && run.reader == r {
		run.HandOver()
	}
}
