// Package dispatch decides where a provider's network events run, as
// Dubbo's dispatchers and thread pools do.
//
// A Pool runs tasks on a bounded set of worker goroutines. Its policy is one
// of Dubbo's thread pools, chosen by name in PoolConfig.Type from the
// table in pools.go:
//
//	fixed    threads workers, default 200; queues 0 means no queue, so a task
//	         that finds every worker busy is rejected at once (the default)
//	cached   grows without bound (or up to threads); idle workers above
//	         corethreads exit after alive (60s)
//	limited  grows up to threads and never shrinks
//	eager    grows up to threads before it queues, then queues (at least
//	         one task, as Java's TaskQueue)
//
// Submit never blocks: a task the pool cannot take is refused with an error
// wrapping rpc.ErrPoolExhausted, so the IO goroutine can answer the caller
// with status 100 straight away. Resize changes the size of a running pool
// (an override rule's threads, as Java's updateThreadpool).
//
// A Dispatcher routes each event Kind either to the pool or back to the
// caller (the connection's IO goroutine), by the names Dubbo users type,
// from the table in dispatcher.go: all, direct, message, execution,
// connection. The transport calls Dispatch for every event, RunHere to run
// a request on its own goroutine, counted against the pool's threads, when
// it would only wait for a worker, and Hold for a request that another
// goroutine completes (a plugin's call), so the pool bounds those too.
//
// The tables drive the constructors, the names (PoolNames,
// DispatcherNames) and the start-time checks of config values (CheckPool,
// CheckDispatcher).
package dispatch
