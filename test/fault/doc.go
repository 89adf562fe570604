// Package fault holds the fault-injection tests of the provider and
// consumer roles: the "never lose a call" promise, measured the way a user
// would measure it. It has no API; everything is in its tests.
//
// The providers are real processes: the test binary re-executes itself
// with FAULTTEST_ROLE=provider, and TestMain then runs node/provider with
// the example org.example.Greeter service (providertest.Greeter) against
// the registry in FAULTTEST_REGISTRY (in the group, register mode and with
// the stuck handler the other FAULTTEST_* variables ask for), prints
// "READY host:port" and serves until SIGTERM, which it answers with
// Provider.Shutdown (Dubbo's graceful path) before exiting 0. Every answer
// carries the provider's address in the result attachment
// "faulttest.served-by", so the test process can tell which provider
// served each call.
//
// The consumer (node/consumer, default failover with retries 2, random
// balancing, 1 s timeout) usually runs inside the test process, and so
// does the registry (embeddedzk, and Apache ZooKeeper where a test says
// so). Where the fault is a process's, the built dubbo command runs it:
// `dubbo run --role=registry` killed with -9 and started again on its data
// dir, `dubbo run --role=consumer` restarted from its cache file while the
// registry is down. A three-member Apache ensemble (internal/testkit/apachezk)
// loses its leader and then its quorum; a TCP proxy black-holes one
// provider's ZooKeeper traffic until its session expires. The tests put
// bounded load on the providers during the fault (kill -9, SIGTERM,
// SIGSTOP, a condition rule, deleted znodes, a consumer that stops reading,
// a stuck provider) and check the calls: none may fail, and the figures
// (calls in flight, latencies, detection and recovery times,
// distribution) are logged with t.Log for the README.
package fault
