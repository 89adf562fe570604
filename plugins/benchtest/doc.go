// Package benchtest measures what serving a method from a handler plugin
// costs, the whole way a Dubbo call goes: dubbo client → TCP → provider
// (IO, dispatch) → handler, with the handler in the provider's process, in
// a plugin process, and on the floor (a child answering every call on a
// plugin link with canned bytes: the least a process boundary costs).
//
//	go test ./plugins/benchtest -run '^$' -bench ProviderPath -count 3
//
// BenchmarkProviderPath runs each at concurrency 1 and 32, one after the
// other, and reports qps, p50_us, p99_us and cpu_us.
// BenchmarkProviderPathTurns runs the plugin and the floor in alternating
// turns of a few thousand calls and reports vs_floor, the plugin's calls/s
// over the floor's: on a shared machine whose speed drifts over seconds,
// it is the steadier ratio. The goal: at least 0.9 of the floor at both
// concurrencies.
//
//	go test ./plugins/benchtest -run '^$' -bench ProtoPathTurns -benchtime 100000x -count 3
//
// BenchmarkProtoPath and BenchmarkProtoPathTurns measure the node's side
// of a plugin alone, the API a provider calls: a protobuf unary call to
// examples/greet's Greet ((*Plugin).CallProto, the messages as bytes)
// against a Dubbo call to the greeter's sayHello ((*Plugin).InvokeAsync),
// with calls/s and CPU time per call (this process and the plugins); the
// turns report proto_vs_dubbo, the protobuf call's calls/s over the Dubbo
// one's. The goal: the protobuf call costs no more CPU than the Dubbo one.
package benchtest
