// Package faulttest holds the fault-injection tests of the provider and
// consumer roles: the "never lose a call" promise, measured the way a user
// would measure it. It has no API; everything is in its tests.
//
// The providers are real processes: the test binary re-executes itself
// with FAULTTEST_ROLE=provider, and TestMain then runs node/provider with
// the example org.example.Greeter service (providertest.Greeter) against
// the registry in FAULTTEST_REGISTRY, prints "READY host:port" and serves
// until SIGTERM, which it answers with Provider.Shutdown (Dubbo's graceful
// path) before exiting 0. Every answer carries the provider's address in
// the result attachment "faulttest.served-by", so the test process can tell
// which provider served each call.
//
// The consumer (node/consumer, default failover with retries 2, random
// balancing, 1 s timeout) and the registry (embeddedzk, and Apache
// ZooKeeper for one test when installed) run inside the test process. The
// tests put bounded load on two providers and then kill -9, SIGTERM or
// SIGSTOP one of them, or publish a condition rule, and check the calls:
// none may fail, and the figures (calls in flight, latencies, node-removal
// time, distribution) are logged with t.Log for the README.
package faulttest
