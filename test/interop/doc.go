// Package interop proves, with real processes, that our provider, consumer,
// registry and CLI work with stock dubbo-go v3.3.0 and with the gRPC
// ecosystem's clients, and measures our providers against dubbo-go's (and,
// over Triple, a plain grpc-go server). It holds tests and benchmarks only.
//
// The dubbo-go side is examples/interop's dgprovider, dgconsumer and dgbench, built
// and run by internal/testkit/dubbogo; ours is node/provider serving
// providertest.Greeter (in this test process, or in a copy of the test
// binary for the benchmark), and the built `dubbo` binary running
// `run --role=provider` with the examples/greeter handler plugin. The
// registries are our embedded ZooKeeper-compatible server and a real Apache
// ZooKeeper (internal/testkit/apachezk); every pair is also tried by direct URL.
//
//	go test ./test/interop/                                  # interop tests
//	go test -run '^$' -bench BenchmarkSayHello ./test/interop/ | go run ./tools/benchratio
//	go test -run '^$' -bench BenchmarkTripleGreet ./test/interop/ -interop.rounds=3 | go run ./tools/benchratio
//
// BenchmarkSayHello calls sayHello("world") on our providers and on
// dgprovider from two load generators, our client (node/transport.Client,
// one connection as in Dubbo) and dubbo-go's consumer (dgbench), at
// concurrency 1 and 32, each provider in its own process, and a raw TCP
// echo of a frame of the same size as the floor. It reports qps, p50_us,
// p99_us and cpu_us, the CPU time of the provider's processes per call;
// allocs/op and B/op are those of our client in the test process, not of
// the providers.
//
// BenchmarkTripleGreet (triple_bench_test.go) calls greet.GreetService's
// Greet with ghz, an independent gRPC load generator, at 1 and 32 callers
// on one connection, against a plain grpc-go server
// (internal/testkit/greetgrpc/greetserver), dgprovider -protocol tri and
// the dubbo binary serving Triple with the examples/greet plugin,
// alternating; it reports ghz's qps, p50_us and p99_us and the servers'
// cpu_us.
//
// Triple, consumer side (triple_test.go): our consumer, its JSON layer
// (jsoncall, with the descriptor from dubbo-go's reflection) and `dubbo
// call` against dgprovider -protocol tri: greet.GreetService's four methods
// and org.example.Greeter in wrapper mode, through both registries, at
// application level and by url = "tri://...".
//
// The gRPC ecosystem's clients (grpc_test.go): grpcurl (list, describe and
// calls, learnt by reflection), Node's @grpc/grpc-js (the four kinds of
// call, from greet.proto) and the ghz load generator against every server
// of greet.GreetService in grpcTargets: a plain grpc-go server
// (internal/testkit/greetgrpc) and dgprovider -protocol tri. The tools are
// installed once per machine, outside go.mod (internal/testkit/toolbuild).
//
// Triple, provider side (tripletree_test.go): our Triple provider's
// ZooKeeper nodes against dgprovider -protocol tri's, node for node, in
// both registries; and dgconsumer -protocol tri calling our provider
// (greet.GreetService's four methods, org.example.Greeter's five in
// wrapper mode) at interface and application level and by url.
//
// Missing peers and tools (dubbo-go's modules, Apache ZooKeeper, grpcurl,
// ghz, node and npm) skip a test, or fail it when CI=true.
package interop
