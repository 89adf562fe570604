package dispatch

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// blocker submits tasks that hold a worker until release.
type blocker struct {
	release chan struct{}
	started chan struct{}
}

func newBlocker() *blocker {
	return &blocker{release: make(chan struct{}), started: make(chan struct{}, 1000)}
}

func (b *blocker) task() func() {
	return func() {
		b.started <- struct{}{}
		<-b.release
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// step is one Submit and what the pool must look like after it.
type step struct {
	accept  bool
	workers int
	queued  int
}

func TestPoolGrowthAndRejection(t *testing.T) {
	tests := []struct {
		name  string
		cfg   PoolConfig
		steps []step
	}{
		{"fixed no queue rejects when busy", PoolConfig{Type: PoolFixed, Threads: 2},
			[]step{{true, 1, 0}, {true, 2, 0}, {false, 2, 0}}},
		{"fixed with queue", PoolConfig{Type: PoolFixed, Threads: 2, Queues: 1},
			[]step{{true, 1, 0}, {true, 2, 0}, {true, 2, 1}, {false, 2, 1}}},
		{"default is fixed 200", PoolConfig{},
			[]step{{true, 1, 0}}},
		{"limited grows to threads", PoolConfig{Type: PoolLimited, Threads: 3},
			[]step{{true, 1, 0}, {true, 2, 0}, {true, 3, 0}, {false, 3, 0}}},
		{"cached queues before growing past core", PoolConfig{Type: PoolCached, CoreThreads: 1, Threads: 3, Queues: 1},
			[]step{{true, 1, 0}, {true, 1, 1}, {true, 2, 1}, {true, 3, 1}, {false, 3, 1}}},
		{"eager grows before queueing", PoolConfig{Type: PoolEager, CoreThreads: 1, Threads: 2, Queues: 2},
			[]step{{true, 1, 0}, {true, 2, 0}, {true, 2, 1}, {true, 2, 2}, {false, 2, 2}}},
		// Java's EagerThreadPool builds its TaskQueue with capacity
		// queues <= 0 ? 1 : queues: one task waits even with queues = 0.
		{"eager with queues 0 keeps a queue of one", PoolConfig{Type: PoolEager, Threads: 2},
			[]step{{true, 1, 0}, {true, 2, 0}, {true, 2, 1}, {false, 2, 1}}},
		{"eager with negative queues keeps a queue of one", PoolConfig{Type: PoolEager, Threads: 1, Queues: -1},
			[]step{{true, 1, 0}, {true, 1, 1}, {false, 1, 1}}},
		{"cached unbounded", PoolConfig{Type: PoolCached},
			[]step{{true, 1, 0}, {true, 2, 0}, {true, 3, 0}, {true, 4, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPool(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			b := newBlocker()
			defer func() {
				close(b.release)
				if err := p.Shutdown(ctxTimeout(t)); err != nil {
					t.Error(err)
				}
			}()
			running := 0
			for i, s := range tt.steps {
				err := p.Submit(b.task())
				if s.accept != (err == nil) {
					t.Fatalf("step %d: accepted=%v, want %v (err %v)", i, err == nil, s.accept, err)
				}
				if err != nil {
					if !errors.Is(err, rpc.ErrPoolExhausted) {
						t.Fatalf("step %d: %v does not wrap ErrPoolExhausted", i, err)
					}
					if !strings.HasPrefix(err.Error(), "Thread pool is EXHAUSTED! ") {
						t.Fatalf("step %d: message %q", i, err)
					}
				}
				if s.queued == 0 && s.accept {
					running++
				}
				// Let started workers block so the next step sees them busy.
				for ; running > 0; running-- {
					<-b.started
				}
				st := p.Stats()
				if st.Workers != s.workers || st.Queued != s.queued {
					t.Fatalf("step %d: workers=%d queued=%d, want %d and %d", i, st.Workers, st.Queued, s.workers, s.queued)
				}
			}
		})
	}
}

func ctxTimeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestPoolShrink(t *testing.T) {
	tests := []struct {
		name       string
		cfg        PoolConfig
		busy       int
		wantShrunk int // workers after idling past alive
	}{
		{"cached shrinks to core", PoolConfig{Type: PoolCached, CoreThreads: 1, Alive: 20 * time.Millisecond}, 4, 1},
		{"eager shrinks to core", PoolConfig{Type: PoolEager, Threads: 5, Alive: 20 * time.Millisecond}, 3, 0},
		{"limited never shrinks", PoolConfig{Type: PoolLimited, Threads: 5, Alive: 20 * time.Millisecond}, 3, 3},
		{"fixed never shrinks", PoolConfig{Type: PoolFixed, Threads: 5, Alive: 20 * time.Millisecond}, 3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPool(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			b := newBlocker()
			for i := 0; i < tt.busy; i++ {
				if err := p.Submit(b.task()); err != nil {
					t.Fatal(err)
				}
				<-b.started
			}
			close(b.release)
			waitFor(t, "idle workers", func() bool { return p.Stats().Active == 0 })
			if tt.wantShrunk < tt.busy {
				waitFor(t, "shrink", func() bool { return p.Stats().Workers == tt.wantShrunk })
			} else {
				time.Sleep(5 * tt.cfg.Alive)
				if w := p.Stats().Workers; w != tt.wantShrunk {
					t.Fatalf("workers=%d, want %d", w, tt.wantShrunk)
				}
			}
			// A shrunk pool still takes work.
			done := make(chan struct{})
			if err := p.Submit(func() { close(done) }); err != nil {
				t.Fatal(err)
			}
			<-done
		})
	}
}

func TestPoolReusesIdleWorkers(t *testing.T) {
	p, err := NewPool(PoolConfig{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		for p.Submit(wg.Done) != nil { // a worker between tasks is briefly not parked
			runtime.Gosched()
		}
		wg.Wait()
	}
	waitFor(t, "completion count", func() bool { return p.Stats().Completed == 100 })
	if st := p.Stats(); st.Largest > 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestPoolShutdownDrainsQueueAndRejects(t *testing.T) {
	p, err := NewPool(PoolConfig{Threads: 1, Queues: 5})
	if err != nil {
		t.Fatal(err)
	}
	b := newBlocker()
	if err := p.Submit(b.task()); err != nil {
		t.Fatal(err)
	}
	<-b.started
	var mu sync.Mutex
	ran := 0
	for i := 0; i < 3; i++ {
		if err := p.Submit(func() { mu.Lock(); ran++; mu.Unlock() }); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	if err := p.Submit(func() {}); !errors.Is(err, rpc.ErrPoolExhausted) || !strings.Contains(err.Error(), "isShutdown:true") {
		t.Fatalf("submit after close: %v", err)
	}
	close(b.release)
	if err := p.Shutdown(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}
	if ran != 3 {
		t.Fatalf("ran %d queued tasks, want 3", ran)
	}
}

func TestPoolConfigErrors(t *testing.T) {
	for _, cfg := range []PoolConfig{
		{Type: "bogus"},
		{Threads: -1},
		{Type: PoolLimited, Threads: 2, CoreThreads: 3},
	} {
		if _, err := NewPool(cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

func goid() string {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	f := bytes.Fields(buf[:n])
	return string(f[1])
}

func TestDispatcherRouting(t *testing.T) {
	const I, P, S = inline, pooled, serial
	tests := []struct {
		name string
		want [4]target // Connect, Disconnect, Request, Response
	}{
		{All, [4]target{P, P, P, P}},
		{"", [4]target{P, P, P, P}},
		{Direct, [4]target{I, I, I, I}},
		{Message, [4]target{I, I, P, P}},
		{Execution, [4]target{I, I, P, I}},
		{Connection, [4]target{S, S, P, P}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPool(PoolConfig{Threads: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			d, err := NewDispatcher(tt.name, p)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			for k := Connect; k <= Response; k++ {
				before := p.Stats().Tasks
				ran := make(chan string, 1)
				me := goid()
				if err := d.Dispatch(k, func() { ran <- goid() }); err != nil {
					t.Fatal(err)
				}
				var got target
				switch g := <-ran; {
				case g == me:
					got = inline
				case p.Stats().Tasks > before:
					got = pooled
				default:
					got = serial
				}
				if got != tt.want[k] {
					t.Errorf("%v ran %v, want %v", k, got, tt.want[k])
				}
			}
		})
	}
}

func TestDispatcherFullPool(t *testing.T) {
	p, err := NewPool(PoolConfig{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	d, err := NewDispatcher(All, p)
	if err != nil {
		t.Fatal(err)
	}
	b := newBlocker()
	defer close(b.release)
	if err := d.Dispatch(Request, b.task()); err != nil {
		t.Fatal(err)
	}
	<-b.started
	if err := d.Dispatch(Request, func() {}); !errors.Is(err, rpc.ErrPoolExhausted) {
		t.Fatalf("request on a full pool: %v", err)
	}
	// Losing a disconnect would leak the connection's state: it runs inline.
	ran := false
	if err := d.Dispatch(Disconnect, func() { ran = true }); err != nil || !ran {
		t.Fatalf("disconnect on a full pool: ran=%v err=%v", ran, err)
	}
}

func TestConnectionDispatcherKeepsOrder(t *testing.T) {
	p, _ := NewPool(PoolConfig{Threads: 4})
	defer p.Close()
	d, err := NewDispatcher(Connection, p)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for i := 0; i < 100; i++ {
		k := Connect
		if i%2 == 1 {
			k = Disconnect
		}
		if err := d.Dispatch(k, func() { got = append(got, i) }); err != nil {
			t.Fatal(err)
		}
	}
	d.Close() // runs what is queued, then stops
	for i, v := range got {
		if v != i {
			t.Fatalf("event %d ran as %d", v, i)
		}
	}
	if len(got) != 100 {
		t.Fatalf("ran %d of 100", len(got))
	}
}

func TestDispatcherErrors(t *testing.T) {
	if _, err := NewDispatcher("bogus", nil); err == nil ||
		err.Error() != `unknown dispatcher "bogus"; known: all, connection, direct, execution, message` {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := NewDispatcher(All, nil); err == nil {
		t.Error("all without a pool accepted")
	}
	if _, err := NewDispatcher(Direct, nil); err != nil {
		t.Errorf("direct needs no pool: %v", err)
	}
}

func (t target) String() string { return [...]string{"inline", "pooled", "serial"}[t] }

// RunHere runs on the caller's goroutine within the pool's limit, and the
// pool counts what it runs against Threads.
func TestPoolRunHere(t *testing.T) {
	p, err := NewPool(PoolConfig{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	if !p.RunHere(func() { ran = true }) || !ran {
		t.Fatal("RunHere on an idle pool did not run the task")
	}
	inside := make(chan struct{})
	release := make(chan struct{})
	go p.RunHere(func() { close(inside); <-release })
	<-inside
	if st := p.Stats(); st.Active != 1 {
		t.Errorf("Active = %d while a task runs here, want 1", st.Active)
	}
	if p.RunHere(func() {}) {
		t.Error("RunHere ran a second task on a pool of one")
	}
	if err := p.Submit(func() {}); err == nil {
		t.Error("Submit accepted a task while the pool's one slot runs a task here")
	}
	close(release)
	for p.Stats().Active != 0 {
		time.Sleep(time.Millisecond)
	}
	done := make(chan struct{})
	if err := p.Submit(func() { close(done) }); err != nil {
		t.Fatalf("Submit after the task here ended: %v", err)
	}
	<-done
	p.Close()
	if p.RunHere(func() {}) {
		t.Error("RunHere ran a task on a closed pool")
	}
}

// The extension tables drive the names, the start-time checks and New:
// every listed name builds, and a misspelt one is refused naming them all.
func TestExtensionTables(t *testing.T) {
	if got := DispatcherNames(); !slices.Equal(got, []string{"all", "connection", "direct", "execution", "message"}) {
		t.Errorf("DispatcherNames() = %v", got)
	}
	if got := PoolNames(); !slices.Equal(got, []string{"cached", "eager", "fixed", "limited"}) {
		t.Errorf("PoolNames() = %v", got)
	}
	for _, name := range append(PoolNames(), "") {
		if err := CheckPool(name); err != nil {
			t.Errorf("CheckPool(%q) = %v", name, err)
		}
		p, err := NewPool(PoolConfig{Type: name, Threads: 2})
		if err != nil {
			t.Fatalf("NewPool(%q): %v", name, err)
		}
		for _, d := range append(DispatcherNames(), "") {
			if err := CheckDispatcher(d); err != nil {
				t.Errorf("CheckDispatcher(%q) = %v", d, err)
			}
			disp, err := NewDispatcher(d, p)
			if err != nil {
				t.Fatalf("NewDispatcher(%q): %v", d, err)
			}
			disp.Close()
		}
		p.Close()
	}
	for _, tt := range []struct {
		err  error
		want string
	}{
		{CheckPool("fixd"), `unknown thread pool "fixd"; known: cached, eager, fixed, limited`},
		{CheckDispatcher("al"), `unknown dispatcher "al"; known: all, connection, direct, execution, message`},
	} {
		if tt.err == nil || tt.err.Error() != tt.want {
			t.Errorf("got %v, want %s", tt.err, tt.want)
		}
	}
	if _, err := NewPool(PoolConfig{Type: "fixd"}); err == nil || !strings.Contains(err.Error(), "known: cached, eager, fixed, limited") {
		t.Errorf("NewPool(fixd): %v", err)
	}
}

// Resize changes a running pool's size as Java's updateThreadpool does;
// tasks beyond a lowered size are refused, and idle workers beyond it exit.
func TestPoolResize(t *testing.T) {
	p, err := NewPool(PoolConfig{Type: PoolFixed, Threads: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	b := newBlocker()
	for i := 0; i < 3; i++ {
		if err := p.Submit(b.task()); err != nil {
			t.Fatal(err)
		}
		<-b.started
	}
	if err := p.Submit(func() {}); err == nil {
		t.Fatal("a fourth task ran on a pool of three")
	}
	p.Resize(5)
	if st := p.Stats(); st.Max != 5 || st.Core != 5 {
		t.Fatalf("after Resize(5) core/max = %d/%d, want 5/5", st.Core, st.Max)
	}
	for i := 0; i < 2; i++ {
		if err := p.Submit(b.task()); err != nil {
			t.Fatalf("task %d after growing to 5: %v", 4+i, err)
		}
		<-b.started
	}
	if err := p.Submit(func() {}); err == nil {
		t.Fatal("a sixth task ran on a pool of five")
	}
	p.Resize(1)
	if st := p.Stats(); st.Max != 1 || st.Core != 1 {
		t.Fatalf("after Resize(1) core/max = %d/%d, want 1/1", st.Core, st.Max)
	}
	close(b.release)
	waitFor(t, "the five tasks to end", func() bool { return p.Stats().Active == 0 })
	waitFor(t, "workers beyond the new size to exit", func() bool { return p.Stats().Workers <= 1 })
	// One slot: one task holds it, the next is refused.
	b2 := newBlocker()
	defer close(b2.release)
	for p.Submit(b2.task()) != nil { // the remaining worker may be between tasks
		runtime.Gosched()
	}
	<-b2.started
	if err := p.Submit(func() {}); !errors.Is(err, rpc.ErrPoolExhausted) {
		t.Fatalf("second task on a pool resized to one: %v", err)
	}
	p.Resize(0) // ignored, as in Java
	if st := p.Stats(); st.Max != 1 {
		t.Fatalf("Resize(0) changed max to %d", st.Max)
	}

	// A pool whose core differs from its max: below the core lowers the
	// core; above sets the max.
	c, err := NewPool(PoolConfig{Type: PoolCached, CoreThreads: 2, Threads: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Resize(1)
	if st := c.Stats(); st.Core != 1 || st.Max != 4 {
		t.Fatalf("cached 2/4 Resize(1): core/max = %d/%d, want 1/4", st.Core, st.Max)
	}
	c.Resize(8)
	if st := c.Stats(); st.Core != 1 || st.Max != 8 {
		t.Fatalf("cached 1/4 Resize(8): core/max = %d/%d, want 1/8", st.Core, st.Max)
	}
}

// Hold counts work that runs elsewhere against the pool's threads.
func TestPoolHold(t *testing.T) {
	p, err := NewPool(PoolConfig{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDispatcher(All, p)
	if err != nil {
		t.Fatal(err)
	}
	r1, ok1 := d.Hold()
	r2, ok2 := d.Hold()
	if !ok1 || !ok2 {
		t.Fatal("two holds on a pool of two were refused")
	}
	if _, ok := d.Hold(); ok {
		t.Fatal("a third hold on a pool of two was granted")
	}
	if err := p.Submit(func() {}); !errors.Is(err, rpc.ErrPoolExhausted) {
		t.Fatalf("Submit while both threads are held: %v", err)
	}
	r1()
	r1() // a second release gives nothing back
	if st := p.Stats(); st.Active != 1 {
		t.Fatalf("Active = %d after one release, want 1", st.Active)
	}
	r3, ok := d.Hold()
	if !ok {
		t.Fatal("hold after a release was refused")
	}
	r2()
	r3()
	p.Close()
	if _, ok := d.Hold(); ok {
		t.Fatal("hold on a closed pool was granted")
	}
	direct, err := NewDispatcher(Direct, nil)
	if err != nil {
		t.Fatal(err)
	}
	if release, ok := direct.Hold(); !ok {
		t.Fatal("the direct dispatcher, which has no pool, refused a hold")
	} else {
		release()
	}
}

// Tasks handed to workers and held slots together never exceed Threads,
// even when a Hold comes between a task's hand-off and its worker
// starting it (it was counted only once running, so a pool of two could
// run three at once). Pools without a queue: a queued task (eager, or
// queues > 0) still takes its slot when a worker runs it, whatever the
// holds.
func TestPoolThreadsBoundTasksAndHolds(t *testing.T) {
	for _, typ := range []string{PoolFixed, PoolCached, PoolLimited} {
		t.Run(typ, func(t *testing.T) {
			const threads = 2
			p, err := NewPool(PoolConfig{Type: typ, Threads: threads})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			var mu sync.Mutex
			inUse, most := 0, 0
			enter := func() {
				mu.Lock()
				inUse++
				most = max(most, inUse)
				mu.Unlock()
			}
			leave := func() {
				mu.Lock()
				inUse--
				mu.Unlock()
			}
			work := func() { enter(); runtime.Gosched(); leave() }
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					for i := range 2000 {
						if (g+i)%2 == 0 {
							_ = p.Submit(work)
						} else if release, ok := p.Hold(); ok {
							work()
							release()
						}
					}
				})
			}
			wg.Wait()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := p.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			if most > threads {
				t.Errorf("%d tasks and holds at once in a pool of %d threads", most, threads)
			}
			if st := p.Stats(); st.Active != 0 || st.Tasks != st.Completed {
				t.Errorf("after the shutdown: %+v; want none active and every task completed", st)
			}
		})
	}
}
