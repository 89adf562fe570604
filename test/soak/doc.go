// Package soak is the long run of the whole system under load with faults
// mixed in: `make soak` (never `make test` or CI; its test needs the
// build tag soak).
//
// It builds the dubbo binary and the example greeter plugin, starts `dubbo
// up` (registry, monitor with a 1 s monitor.interval, console) and three
// `dubbo run --role=provider` processes serving Greeter through the
// plugin, and keeps a steady `dubbo bench --rps` load on them for
// SOAK_DURATION (30m by default). Every SOAK_FAULT_EVERY (1m) one fault
// is drawn from the list: a provider killed with -9 and started again, a
// provider stopped with SIGTERM and started again, a provider frozen with
// SIGSTOP for 5 s, a provider's plugin killed with -9, a provider's node
// deleted from the registry, `dubbo up` itself (registry, monitor and
// console) killed with -9 and started again on its data, the consumer
// (the bench process) restarted.
//
// At the end it prints and checks: the calls made and failed (none may
// fail), the calls stored in the monitor (GET /api/v1/stats: the
// consumers' successes must equal the successful calls made), and the RSS
// and goroutines of every process at the start and the end, against the
// bound in the test (RSS at most 1.5x its start plus 32 MB, goroutines at
// most 1.5x plus 32).
package soak
