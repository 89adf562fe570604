package watchdog

import (
	"sync/atomic"
	"testing"
	"time"
)

// The watchdog checks while pokes are recent, and stops checking once they
// are not.
func TestTicksOnlyAfterPokes(t *testing.T) {
	var checks atomic.Int32
	w := Start(time.Millisecond, 50*time.Millisecond, func() { checks.Add(1) })
	defer w.Stop()
	time.Sleep(30 * time.Millisecond)
	if n := checks.Load(); n != 0 {
		t.Fatalf("%d checks before any poke", n)
	}
	// Poke as work that keeps starting does: on a loaded machine the
	// watchdog's goroutine may first run after one poke's idle period.
	deadline := time.Now().Add(5 * time.Second)
	for checks.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no check while pokes keep coming")
		}
		w.Poke()
		time.Sleep(time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // well past idle
	n := checks.Load()
	time.Sleep(100 * time.Millisecond)
	if m := checks.Load(); m != n {
		t.Errorf("%d checks while idle", m-n)
	}
}
