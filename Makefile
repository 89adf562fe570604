# make           build the dubbo binary
# make up        build and run the all-in-one environment (dubbo up)
# make test      gofmt, vet, staticcheck, every test, and a short run of every fuzz target
# make soak      30 minutes (SOAK_DURATION) of dubbo up, providers and load with a fault a minute; not in make test
# make bench     every benchmark, ours and the peers' (Apache ZooKeeper, dubbo-go, grpc-go), in one run: bench/REPORT.md
GO        ?= go
BIN       ?= ./dubbo
FUZZTIME  ?= 10000x
# staticcheck at a pinned version, fetched and built by the go command on
# first use (then from its build cache): nothing to install, on CI or here.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
BENCHTIME ?= 2s
# Minutes of the monitor store benchmark's data set: 1440x is a day (28.8
# million rows, several minutes); 60x is an hour.
STORE_BENCHTIME ?= 1440x
# Packages that measure behaviour under load with real processes; they run
# one at a time after the rest so other packages' tests do not skew them.
SERIAL    := test/fault|test/e2e|test/interop|test/scale

.PHONY: all build up test unit fuzz bench soak clean

all: build

build:
	$(GO) build -o $(BIN) .
	$(GO) build -o examples/greeter/greeter ./examples/greeter
	$(GO) build -o examples/chain/chain ./examples/chain
	$(GO) build -o examples/greeter-caller/greeter-caller ./examples/greeter-caller
	$(GO) build -o examples/greet/greet ./examples/greet

up: build
	$(BIN) up

test: unit fuzz

unit:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt -w needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...
	$(GO) test -count=1 -timeout 15m $$($(GO) list ./... | grep -v -E '$(SERIAL)')
	$(GO) test -count=1 -timeout 15m -p 1 $(addprefix ./,$(subst |, ,$(SERIAL)))

# Every fuzz target runs briefly on top of its committed corpus.
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) ./scripts/fuzz-all

# Every benchmark below runs in one go on this machine, its output kept in
# bench/out/, then tools/benchreport writes bench/REPORT.md with its SVG
# charts and the README's headline table.
# Registry: embedded vs Apache ZooKeeper 3.8, same go-zookeeper workload.
# RPC: sayHello on our providers vs a stock dubbo-go provider, alternating,
# from two load generators (our client, and the stock dubbo-go consumer),
# with calls/s, latency and the providers' CPU time per call, and a raw TCP
# round trip as the floor (test/interop); the plugin path against its floor
# (plugins/benchtest).
# Triple: Greet from ghz (c=1 and c=32 on one connection) on our
# plugin-backed Triple provider, a plain grpc-go server and dubbo-go's
# Triple provider, alternating TRIPLE_ROUNDS times, with the servers' CPU
# per call (test/interop).
# Faults: detection and recovery times (test/fault), FAULT_BENCHTIME
# scenarios each.
# Scale: every BenchmarkScale* of the tree (test/scale, 3-4 minutes):
# 10,000 provider nodes of 500 services and 200 consumers on our registry
# and on Apache ZooKeeper, 1,000 providers restarting at once, consumer
# processes of 50 and 500 services, a provider with 5,000 connections.
# Monitor store: a day of 50 services x 10 methods x 20 nodes x 2 sides
# (rows/s, DB size, the console's heaviest query).
# Console: the services page and a service page over 500 services and
# 10,000 providers and 10,000 consumers in a real embedded registry (goal:
# under 50 ms each).
BENCH_OUT       := bench/out
FAULT_BENCHTIME ?= 3x
TRIPLE_ROUNDS   ?= 3
SCALE_BENCHTIME ?= 1x
SCALE_PKGS       = $(shell grep -rl --include='*_test.go' '^func BenchmarkScale' . | xargs -r -n1 dirname | sort -u)
BENCHFLAGS       = -run '^$$' -timeout 60m

bench: SHELL := /bin/bash
bench: .SHELLFLAGS := -o pipefail -c
bench:
	mkdir -p $(BENCH_OUT) && rm -f $(BENCH_OUT)/*.txt
	{ echo "date: $$(date -u '+%Y-%m-%d %H:%M UTC')"; \
	  echo "cpu: $$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"; \
	  echo "cores: $$(nproc)"; \
	  echo "loadavg: $$(cut -d' ' -f1-3 /proc/loadavg)"; \
	  echo "go: $$($(GO) version)"; \
	  echo "kernel: $$(uname -sr)"; \
	  echo "settings: BENCHTIME=$(BENCHTIME) STORE_BENCHTIME=$(STORE_BENCHTIME) FAULT_BENCHTIME=$(FAULT_BENCHTIME) TRIPLE_ROUNDS=$(TRIPLE_ROUNDS) SCALE_BENCHTIME=$(SCALE_BENCHTIME)"; \
	} > $(BENCH_OUT)/machine.txt
	cat $(BENCH_OUT)/machine.txt
	$(GO) test $(BENCHFLAGS) -bench 'BenchmarkRegistry|BenchmarkWatchLatency|BenchmarkStartup|BenchmarkMemory100k' \
		-benchtime $(BENCHTIME) ./embeddedzk/ | tee $(BENCH_OUT)/registry.txt
	$(GO) test $(BENCHFLAGS) -bench 'BenchmarkSayHello' -benchtime $(BENCHTIME) ./test/interop/ | tee $(BENCH_OUT)/rpc.txt
	$(GO) test $(BENCHFLAGS) -bench 'BenchmarkTripleGreet' -benchtime $(BENCHTIME) ./test/interop/ -interop.rounds=$(TRIPLE_ROUNDS) | tee $(BENCH_OUT)/triple.txt
	$(GO) test $(BENCHFLAGS) -bench 'BenchmarkProviderPath|BenchmarkProtoPath' -benchtime $(BENCHTIME) ./plugins/benchtest/ | tee $(BENCH_OUT)/plugin.txt
	$(GO) test $(BENCHFLAGS) -bench 'BenchmarkFault' -benchtime $(FAULT_BENCHTIME) ./test/fault/ | tee $(BENCH_OUT)/fault.txt
	$(if $(SCALE_PKGS),$(GO) test $(BENCHFLAGS) -bench 'BenchmarkScale' -benchtime $(SCALE_BENCHTIME) $(SCALE_PKGS) | tee $(BENCH_OUT)/scale.txt)
	$(GO) test $(BENCHFLAGS) -bench 'BenchmarkStoreDay' -benchtime $(STORE_BENCHTIME) ./monitor/store/ | tee $(BENCH_OUT)/store.txt
	$(GO) test $(BENCHFLAGS) -bench 'BenchmarkPages' -benchtime $(BENCHTIME) ./console/ | tee $(BENCH_OUT)/console.txt
	cat $(BENCH_OUT)/*.txt | $(GO) run ./tools/benchratio
	$(GO) run ./tools/benchreport -machine $(BENCH_OUT)/machine.txt -out bench -readme README.md $(BENCH_OUT)/*.txt
	@echo "wrote bench/REPORT.md"

# The soak (test/soak, build tag soak): dubbo up, three provider processes
# with the greeter plugin and a steady dubbo bench --rps load for
# SOAK_DURATION, a fault every SOAK_FAULT_EVERY; then calls made, failed and
# stored in the monitor, and every process's RSS and goroutines.
SOAK_DURATION    ?= 30m
SOAK_FAULT_EVERY ?= 1m
SOAK_RPS         ?= 300

soak:
	SOAK_DURATION=$(SOAK_DURATION) SOAK_FAULT_EVERY=$(SOAK_FAULT_EVERY) SOAK_RPS=$(SOAK_RPS) \
		$(GO) test -tags soak -count=1 -v -timeout 6h -run TestSoak ./test/soak/

clean:
	rm -f $(BIN)
