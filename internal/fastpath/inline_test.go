package fastpath

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// Quick runs keep their reader; a run that blocks has the reading handed
// over after about Stall, while it goes on. (A stall of 50ms, so that a
// quick run the OS preempts on a busy machine is not taken for a slow one.)
func TestInlineHandsOverSlowRuns(t *testing.T) {
	in := NewInline(50 * time.Millisecond)
	defer in.Stop()
	resumed := make(chan struct{}, 10)
	r := in.NewReader(func() { resumed <- struct{}{} })
	defer r.Close()
	for i := range 100 {
		if !r.Run(func(*Run) {}) {
			t.Fatalf("quick run %d: the reading was handed over", i)
		}
	}
	select {
	case <-resumed:
		t.Fatal("a quick run had its reading handed over")
	default:
	}
	start := time.Now()
	reader := r.Run(func(*Run) {
		select {
		case <-resumed: // the watchdog started a new reader meanwhile
		case <-time.After(10 * time.Second):
			t.Error("a blocked run was not handed over within 10s")
		}
	})
	if reader {
		t.Error("Run says its goroutine is still the reader after a hand-over")
	}
	t.Logf("handed over after %v", time.Since(start))
}

// Work that must wait for its own stream hands the reading over at once,
// through the context, however wrapped; work on another reader's stream
// does not.
func TestHandOverFor(t *testing.T) {
	in := NewInline(time.Hour) // no watchdog hand-over in this test
	defer in.Stop()
	var resumed atomic.Int32
	r := in.NewReader(func() { resumed.Add(1) })
	other := in.NewReader(func() { t.Error("the other reader was handed over") })
	defer r.Close()
	defer other.Close()
	reader := r.Run(func(run *Run) {
		ctx, cancel := context.WithTimeout(WithRun(context.Background(), run), time.Minute)
		defer cancel()
		ctx = context.WithValue(ctx, filterKey{}, "a filter's value")
		HandOverFor(ctx, other)
		HandOverFor(ctx, r)
		HandOverFor(ctx, r) // once only
	})
	if reader || resumed.Load() != 1 {
		t.Errorf("reader %v, resumed %d times; want false, 1", reader, resumed.Load())
	}
	HandOverFor(context.Background(), r) // no run: nothing
	if resumed.Load() != 1 {
		t.Error("HandOverFor without a run handed over")
	}
}

// A reader whose work was handed over clears only its own run: the run its
// successor stored meanwhile stays for the watchdog to see. (The real
// interleaving needs the successor to store its run between the old work's
// return and the old reader's bookkeeping, a window of a few
// instructions; the work here does the successor's step inside it.)
func TestFinishedRunKeepsSuccessorsRun(t *testing.T) {
	in := NewInline(time.Hour)
	defer in.Stop()
	r := in.NewReader(func() {})
	defer r.Close()
	var succ *Run
	reader := r.Run(func(run *Run) {
		run.HandOver()                          // the watchdog's step
		succ = &Run{reader: r, since: in.now()} // the successor's run
		r.run.Store(succ)                       // the successor's step
	})
	if reader {
		t.Fatal("Run says it is still the reader after its work was handed over")
	}
	if got := r.run.Load(); got != succ {
		t.Fatalf("after the handed-over work ended, the reader's run is %p, want the successor's %p", got, succ)
	}
}

// The watchdog ticks only while runs keep starting, so an idle process
// stays idle.
func TestWatchdogTicksOnlyAfterRuns(t *testing.T) {
	in := NewInline(time.Millisecond)
	defer in.Stop()
	var checks atomic.Int32
	slowSeen := in.NewReader(func() { checks.Add(1) })
	defer slowSeen.Close()
	time.Sleep(30 * time.Millisecond)
	// A run that never finishes would be handed over at every tick; one
	// left in place counts the ticks.
	stuck := &Run{reader: slowSeen}
	slowSeen.run.Store(stuck)
	time.Sleep(30 * time.Millisecond)
	if n := checks.Load(); n != 0 {
		t.Fatalf("%d hand-overs before any run started", n)
	}
	// Runs start as work that keeps coming does: on a loaded machine the
	// watchdog's goroutine may first run after one run's idle period.
	r := in.NewReader(func() {})
	defer r.Close()
	deadline := time.Now().Add(5 * time.Second)
	for checks.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no check while runs keep starting")
		}
		r.Run(func(*Run) {})
		time.Sleep(time.Millisecond)
	}
	// Past watchIdle the watchdog stops; a new stuck run it would hand
	// over stays.
	time.Sleep(watchIdle + 200*time.Millisecond)
	stuck2 := &Run{reader: slowSeen}
	slowSeen.run.Store(stuck2)
	n := checks.Load()
	time.Sleep(100 * time.Millisecond)
	if m := checks.Load(); m != n {
		t.Errorf("%d hand-overs while no run started", m-n)
	}
}

// Work that runs inline finds its run in its context and times itself by
// it; other work finds none.
func TestRunOfAndElapsed(t *testing.T) {
	in := NewInline(time.Second)
	defer in.Stop()
	r := in.NewReader(func() {})
	defer r.Close()
	if RunOf(context.Background()) != nil {
		t.Error("a context without a run has one")
	}
	var took, measured time.Duration
	r.Run(func(run *Run) {
		start := time.Now()
		time.Sleep(5 * time.Millisecond)
		got := RunOf(WithRun(context.Background(), run))
		if got != run {
			t.Errorf("RunOf = %p, want %p", got, run)
			return
		}
		measured, took = got.Elapsed(), time.Since(start)
	})
	if measured < took || measured > took+time.Second {
		t.Errorf("Elapsed = %v, the work took %v", measured, took)
	}
}
