// Package benchtest measures what serving a method from a handler plugin
// costs against serving the same handler in the node's process, the whole
// way a Dubbo call goes: dubbo client → TCP → provider (IO, dispatch,
// business pool) → handler. Its only content is BenchmarkProviderPath:
//
//	go test ./plugins/benchtest -run '^$' -bench ProviderPath -count 3
//
// The target: at concurrency 1 and 32 the plugin path keeps at
// least 70% of the in-process throughput (qps) and adds under 50µs to the
// median latency (p50_us).
package benchtest
