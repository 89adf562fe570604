package dispatch

import (
	"fmt"
	"math"
	"time"
)

// Pool types, by the names Dubbo users put in the threadpool parameter.
const (
	PoolFixed   = "fixed"
	PoolCached  = "cached"
	PoolLimited = "limited"
	PoolEager   = "eager"
)

// pools is the thread pool extension table: each name Dubbo users write
// in protocol.threadpool, and the policy it gives a pool. It drives
// NewPool, PoolNames and CheckPool; adding a pool is one row and one
// function. Read-only.
var pools = map[string]func(PoolConfig) policy{
	PoolFixed:   fixedPolicy,
	PoolCached:  cachedPolicy,
	PoolLimited: limitedPolicy,
	PoolEager:   eagerPolicy,
}

// policy is how a pool grows, queues and shrinks.
type policy struct {
	core, max int
	alive     time.Duration // 0: workers never exit
	growFirst bool          // start workers up to max before queueing
	queue     int           // capacity of the queue; 0: none
}

// fixedPolicy is Java's FixedThreadPool: threads workers (200), kept.
func fixedPolicy(cfg PoolConfig) policy {
	n := orDefault(cfg.Threads, DefaultThreads)
	return policy{core: n, max: n, growFirst: true, queue: queueSize(cfg.Queues)}
}

// cachedPolicy is Java's CachedThreadPool: grows without bound (or to
// threads) once the queue is full; workers above corethreads exit after
// alive idle.
func cachedPolicy(cfg PoolConfig) policy {
	return policy{core: cfg.CoreThreads, max: orDefault(cfg.Threads, math.MaxInt32),
		alive: orDefault(cfg.Alive, DefaultAlive), queue: queueSize(cfg.Queues)}
}

// limitedPolicy is Java's LimitedThreadPool: grows to threads (200) and
// never shrinks.
func limitedPolicy(cfg PoolConfig) policy {
	return policy{core: cfg.CoreThreads, max: orDefault(cfg.Threads, DefaultThreads), queue: queueSize(cfg.Queues)}
}

// eagerPolicy is Java's EagerThreadPool: starts workers up to threads
// before it queues. Its TaskQueue always holds at least one task: queues
// of 0 or less mean 1 (Java's `queues <= 0 ? 1 : queues`).
func eagerPolicy(cfg PoolConfig) policy {
	return policy{core: cfg.CoreThreads, max: orDefault(cfg.Threads, math.MaxInt32),
		alive: orDefault(cfg.Alive, DefaultAlive), growFirst: true, queue: max(cfg.Queues, 1)}
}

// queueSize is the queue of Java's fixed, cached and limited pools: a
// SynchronousQueue for 0 (no queue), an unbounded one below 0.
func queueSize(queues int) int {
	if queues < 0 {
		return unboundedQueue
	}
	return queues
}

func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// PoolNames lists the thread pool names, sorted.
func PoolNames() []string { return sortedKeys(pools) }

// CheckPool reports whether name ("" is fixed) is a thread pool, with
// the known names when it is not.
func CheckPool(name string) error {
	if _, ok := pools[orName(name, PoolFixed)]; !ok {
		return fmt.Errorf("unknown thread pool %q; known: %s", name, joinNames(PoolNames()))
	}
	return nil
}
