package dispatch

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Dubbo's defaults for the pool settings.
const (
	DefaultThreads = 200
	DefaultAlive   = 60 * time.Second
	// unboundedQueue stands in for Java's unbounded LinkedBlockingQueue
	// (queues < 0): a channel needs a capacity.
	unboundedQueue = 1 << 16
)

// PoolConfig holds the thread pool settings of a protocol or service.
type PoolConfig struct {
	// Type is fixed (default), cached, limited or eager.
	Type string
	// Threads is the most workers that run at once. Default 200 for fixed and
	// limited; unbounded for cached and eager, as in Dubbo.
	Threads int
	// CoreThreads are kept alive when idle (cached, limited, eager). Default
	// 0. A fixed pool keeps all its workers.
	CoreThreads int
	// Queues is how many tasks may wait when every worker is busy. Default 0:
	// no queue, reject at once. Negative means "as many as memory allows"
	// (Java's unbounded queue), capped here at 65536. An eager pool always
	// queues at least one, as Java's TaskQueue does.
	Queues int
	// Alive is how long an idle worker above CoreThreads lives (cached,
	// eager). Default 60s.
	Alive time.Duration
	// Name and Where describe the pool in rejection messages, as Java does:
	// "DubboServerHandler-127.0.0.1:20880" and "dubbo://127.0.0.1:20880".
	Name, Where string
}

// Pool runs tasks on at most Threads worker goroutines. Workers start on
// demand and, for cached and eager pools, exit after Alive idle. Safe for
// concurrent use.
type Pool struct {
	typ         string
	alive       time.Duration // 0: workers never exit
	growFirst   bool          // start workers up to max before queueing (fixed, eager)
	name, where string

	// handoff reaches a worker parked waiting for work; a send succeeds only
	// when one is idle, which is what gives a queueless pool its
	// reject-when-busy behaviour. A nil task asks an idle worker to exit if
	// the pool has more workers than max (Resize).
	handoff chan func()
	queue   chan func() // nil: no queue
	done    chan struct{}
	wg      sync.WaitGroup

	// max bounds the tasks running at once and core the workers kept
	// idle; read without mu, written under mu (Resize). excess is set while
	// Resize left more workers than max.
	max, core atomic.Int64
	excess    atomic.Bool

	mu      sync.Mutex
	workers int
	largest int
	closed  bool

	active, tasks, completed, rejected atomic.Int64
}

// NewPool returns a pool for cfg with Dubbo's defaults filled in.
func NewPool(cfg PoolConfig) (*Pool, error) {
	if cfg.Type == "" {
		cfg.Type = PoolFixed
	}
	newPolicy, ok := pools[cfg.Type]
	if !ok {
		return nil, CheckPool(cfg.Type)
	}
	if cfg.Threads < 0 || cfg.CoreThreads < 0 || cfg.Alive < 0 {
		return nil, fmt.Errorf("thread pool %q: threads, corethreads and alive must not be negative", cfg.Type)
	}
	pol := newPolicy(cfg)
	if pol.core > pol.max {
		return nil, fmt.Errorf("thread pool %q: corethreads %d exceeds threads %d", cfg.Type, pol.core, pol.max)
	}
	p := &Pool{
		typ:       cfg.Type,
		alive:     pol.alive,
		growFirst: pol.growFirst,
		name:      cfg.Name,
		where:     cfg.Where,
		handoff:   make(chan func()),
		done:      make(chan struct{}),
	}
	p.max.Store(int64(pol.max))
	p.core.Store(int64(pol.core))
	if pol.queue > 0 {
		p.queue = make(chan func(), pol.queue)
	}
	if p.name == "" {
		p.name = "DubboServerHandler"
	}
	return p, nil
}

// Submit runs task on a worker, or refuses it at once with a
// *RejectedError (errors.Is rpc.ErrPoolExhausted) when every worker is busy
// and the queue, if any, is full. It never blocks.
func (p *Pool) Submit(task func()) error {
	// A task for a worker takes its slot here, before the hand-off: counted
	// only once the worker ran it, a Hold in between (tasks run by RunHere
	// and held slots count against Threads too) could take one slot more
	// than Threads. Queued tasks take theirs when a worker runs them.
	max := int(p.max.Load())
	room := p.reserve()
	if room {
		// Counted before the hand-off: the task may be done before Submit
		// returns.
		p.tasks.Add(1)
		select {
		case p.handoff <- task:
			return nil
		default:
			p.tasks.Add(-1)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
	case room && (p.workers < int(p.core.Load()) || p.growFirst && p.workers < max):
		p.spawn(task)
		return nil
	case p.queue != nil && p.enqueue(task):
		if room {
			p.active.Add(-1)
		}
		if p.workers == 0 { // every worker retired since the handoff failed
			p.spawn(nil)
		}
		return nil
	case room && p.workers < max:
		p.spawn(task)
		return nil
	}
	if room {
		p.active.Add(-1)
	}
	p.rejected.Add(1)
	return &RejectedError{Stats: p.statsLocked(), Name: p.name, Where: p.where, Shutdown: p.closed}
}

// reserve takes one of the Threads slots if one is free.
func (p *Pool) reserve() bool {
	for {
		a := p.active.Load()
		if a >= p.max.Load() {
			return false
		}
		if p.active.CompareAndSwap(a, a+1) {
			return true
		}
	}
}

// RunHere runs task on the calling goroutine, counted as one of the
// pool's busy workers (Submit refuses what would exceed Threads with it),
// when the pool has room for it (fewer than Threads tasks running, not
// closed); otherwise it runs nothing and says so. It lets a caller that
// would only wait for the task (the connection's reader when nothing else
// of its connection is running) skip the hand-off to a worker, which on a
// small VM costs tens of µs of latency.
func (p *Pool) RunHere(task func()) bool {
	release, ok := p.Hold()
	if !ok {
		return false
	}
	defer release()
	task()
	return true
}

// Hold takes one of the pool's Threads for work that runs elsewhere (a
// call started here and completed by another goroutine), when the pool has
// room and is open; release gives it back, once. Held slots count against
// Threads like running tasks, so the pool bounds such work too.
func (p *Pool) Hold() (release func(), ok bool) {
	if !p.reserve() {
		return nil, false
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		p.active.Add(-1)
		return nil, false
	}
	p.tasks.Add(1)
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			p.active.Add(-1)
			p.completed.Add(1)
		}
	}, true
}

// Resize sets the pool's size to threads while it runs, as Java's
// DefaultExecutorRepository.updateThreadpool does when an override rule
// changes a provider's threads: a pool whose core and max were equal
// (fixed) gets both; otherwise threads below the core lowers the core,
// and any other value sets the max. Tasks running beyond a lowered max
// finish; idle workers beyond it exit. threads <= 0 changes nothing.
func (p *Pool) Resize(threads int) {
	if threads <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	core, max := int(p.core.Load()), int(p.max.Load())
	if threads < core {
		p.core.Store(int64(threads))
		if core == max {
			p.max.Store(int64(threads))
		}
	} else {
		p.max.Store(int64(threads))
		if core == max {
			p.core.Store(int64(threads))
		}
	}
	excess := p.workers - int(p.max.Load())
	p.excess.Store(excess > 0)
	for ; excess > 0; excess-- {
		select {
		case p.handoff <- nil: // an idle worker exits
		default:
			return // the rest are busy and exit after their task
		}
	}
}

func (p *Pool) enqueue(task func()) bool {
	p.tasks.Add(1)
	select {
	case p.queue <- task:
		return true
	default:
		p.tasks.Add(-1)
		return false
	}
}

// spawn starts a worker, with the first task it runs, whose slot Submit
// reserved, or none; p.mu is held.
func (p *Pool) spawn(first func()) {
	p.workers++
	if p.workers > p.largest {
		p.largest = p.workers
	}
	if first != nil {
		p.tasks.Add(1)
	}
	p.wg.Add(1)
	go p.work(first)
}

func (p *Pool) work(task func()) {
	defer p.wg.Done()
	var idle *time.Timer
	if p.alive > 0 {
		idle = time.NewTimer(p.alive)
		defer idle.Stop()
	}
	reserved := task != nil // a task from Submit's hand-off has its slot
	for {
		if task != nil {
			p.run(task, reserved)
			task = nil
		}
		if p.retireExcess() {
			return
		}
		// Queued tasks waited longest; take them before parking.
		select {
		case task = <-p.queue:
			reserved = false
			continue
		default:
		}
		var expired <-chan time.Time
		if p.shrinks() {
			idle.Reset(p.alive)
			expired = idle.C
		}
		select {
		case task = <-p.handoff:
			reserved = true
		case task = <-p.queue:
			reserved = false
		case <-expired:
			if p.retire() {
				return
			}
		case <-p.done:
			p.drain()
			return
		}
	}
}

// shrinks says whether idle workers above the core exit after alive.
func (p *Pool) shrinks() bool {
	return p.alive > 0 && p.core.Load() < p.max.Load()
}

// retireExcess lets a worker exit when the pool has more workers than its
// max (after Resize lowered it).
func (p *Pool) retireExcess() bool {
	if !p.excess.Load() {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.workers <= int(p.max.Load()) {
		p.excess.Store(false)
		return false
	}
	p.workers--
	return true
}

// run runs task on this worker; reserved says its slot is taken already.
func (p *Pool) run(task func(), reserved bool) {
	if !reserved {
		p.active.Add(1)
	}
	defer func() {
		p.active.Add(-1)
		p.completed.Add(1)
	}()
	task()
}

// drain runs what is left in the queue after shutdown.
func (p *Pool) drain() {
	for {
		select {
		case task := <-p.queue:
			p.run(task, false)
		default:
			p.mu.Lock()
			p.workers--
			p.mu.Unlock()
			return
		}
	}
}

// retire lets an idle worker above the core size exit, unless work is
// queued (Submit relies on a queued task finding a worker).
func (p *Pool) retire() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.workers <= int(p.core.Load()) || len(p.queue) > 0 {
		return false
	}
	p.workers--
	return true
}

// Close stops taking tasks; workers finish what they run and what is
// queued, then exit. It does not wait for them.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		close(p.done)
	}
}

// Shutdown closes the pool and waits for its workers to finish, or for ctx.
func (p *Pool) Shutdown(ctx context.Context) error {
	p.Close()
	idle := make(chan struct{})
	go func() { // owned here: ends when the workers do
		p.wg.Wait()
		close(idle)
	}()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("thread pool %s: %d tasks still running: %w", p.name, p.active.Load(), ctx.Err())
	}
}

// PoolStats is a snapshot of a pool, for stats and rejection messages.
type PoolStats struct {
	Type      string
	Workers   int   // goroutines alive now
	Active    int   // running a task now
	Core, Max int   // configured bounds
	Largest   int   // most workers ever alive at once
	Queued    int   // tasks waiting in the queue
	Tasks     int64 // accepted
	Completed int64
	Rejected  int64
}

// Stats returns a snapshot of the pool.
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.statsLocked()
}

func (p *Pool) statsLocked() PoolStats {
	return PoolStats{
		Type:      p.typ,
		Workers:   p.workers,
		Active:    int(p.active.Load()),
		Core:      int(p.core.Load()),
		Max:       int(p.max.Load()),
		Largest:   p.largest,
		Queued:    len(p.queue),
		Tasks:     p.tasks.Load(),
		Completed: p.completed.Load(),
		Rejected:  p.rejected.Load(),
	}
}

// RejectedError is a task the pool refused. Its message follows Java's
// AbortPolicyWithReport, which operators grep logs for.
type RejectedError struct {
	Stats    PoolStats
	Name     string
	Where    string
	Shutdown bool
}

func (e *RejectedError) Error() string {
	s := e.Stats
	return fmt.Sprintf("Thread pool is EXHAUSTED! Thread Name: %s, Pool Size: %d (active: %d, core: %d, max: %d, largest: %d), "+
		"Task: %d (completed: %d), Executor status:(isShutdown:%t, isTerminated:%t, isTerminating:%t), in %s!",
		e.Name, s.Workers, s.Active, s.Core, s.Max, s.Largest, s.Tasks, s.Completed,
		e.Shutdown, e.Shutdown && s.Workers == 0, e.Shutdown && s.Workers > 0, e.Where)
}

// Unwrap makes errors.Is(err, rpc.ErrPoolExhausted) true.
func (e *RejectedError) Unwrap() error { return rpc.ErrPoolExhausted }
