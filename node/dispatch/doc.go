// Package dispatch decides where a provider's network events run, as
// Dubbo's dispatchers and thread pools do.
//
// A Pool runs tasks on a bounded set of worker goroutines. Its policy is one
// of Dubbo's thread pools, chosen by name in PoolConfig.Type:
//
//	fixed    threads workers, default 200; queues 0 means no queue, so a task
//	         that finds every worker busy is rejected at once (the default)
//	cached   grows without bound (or up to threads); idle workers above
//	         corethreads exit after alive (60s)
//	limited  grows up to threads and never shrinks
//	eager    grows up to threads before it queues, then queues
//
// Submit never blocks: a task the pool cannot take is refused with an error
// wrapping rpc.ErrPoolExhausted, so the IO goroutine can answer the caller
// with status 100 straight away.
//
// A Dispatcher routes each event Kind either to the pool or back to the
// caller (the connection's IO goroutine), by the names Dubbo users type:
// all, direct, message, execution, connection. The transport calls
// Dispatch for every event, or RunHere to run a request on its own
// goroutine, counted against the pool's threads, when it would only wait
// for a worker.
package dispatch
