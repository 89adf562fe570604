# make           build the dubbo binary
# make up        build and run the all-in-one environment (dubbo up)
# make test      vet, every test, and a short run of every fuzz target
# make bench     side-by-side benchmarks (ours vs Apache ZooKeeper, ours vs dubbo-go) with ratios
GO        ?= go
BIN       ?= ./dubbo
FUZZTIME  ?= 10000x
BENCHTIME ?= 2s
# Minutes of the monitor store benchmark's data set: 1440x is a day (28.8
# million rows, several minutes); 60x is an hour.
STORE_BENCHTIME ?= 1440x
# Packages that measure behaviour under load with real processes; they run
# one at a time after the rest so other packages' tests do not skew them.
SERIAL    := test/fault|test/e2e|test/interop|test/scale

.PHONY: all build up test unit fuzz bench clean

all: build

build:
	$(GO) build -o $(BIN) .
	$(GO) build -o examples/greeter/greeter ./examples/greeter
	$(GO) build -o examples/chain/chain ./examples/chain
	$(GO) build -o examples/greeter-caller/greeter-caller ./examples/greeter-caller

up: build
	$(BIN) up

test: unit fuzz

unit:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt -w needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 15m $$($(GO) list ./... | grep -v -E '$(SERIAL)')
	$(GO) test -count=1 -timeout 15m -p 1 $(addprefix ./,$(subst |, ,$(SERIAL)))

# Every fuzz target runs briefly on top of its committed corpus.
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) ./scripts/fuzz-all

# Registry: embedded vs Apache ZooKeeper 3.8, same go-zookeeper workload, one run.
# RPC: sayHello on our providers vs a stock dubbo-go provider, alternating,
# from two load generators (our client, and the stock dubbo-go consumer),
# with calls/s, latency and the providers' CPU time per call, and a raw TCP
# round trip as the floor (test/interop); the plugin path against its floor
# (plugins/benchtest).
# Console: the services page and a service page over 500 services and
# 5,000 providers in a real embedded registry (goal: under 50 ms each).
# Scale (test/scale, once each, 3-4 minutes): 10,000 provider nodes
# of 500 services and 200 consumers, on our registry and on Apache
# ZooKeeper (registration to every consumer p50/p99, 1,000 providers
# restarting at once, RSS of the registry and of consumer processes of 50
# and 500 services); a provider process with 5,000 connections.
# Monitor store: a day of 50 services x 10 methods x 20 nodes x 2 sides
# (rows/s, DB size, the console's heaviest query); not a pair, so benchratio
# leaves it out.
bench:
	$(GO) test -run '^$$' -bench 'BenchmarkRegistry|BenchmarkWatchLatency|BenchmarkStartup|BenchmarkMemory100k' \
		-benchtime $(BENCHTIME) -timeout 30m ./embeddedzk/ | tee bench.out
	$(GO) test -run '^$$' -bench 'BenchmarkSayHello' \
		-benchtime $(BENCHTIME) -timeout 30m ./test/interop/ | tee -a bench.out
	$(GO) test -run '^$$' -bench 'BenchmarkProviderPath' \
		-benchtime $(BENCHTIME) -timeout 30m ./plugins/benchtest/ | tee -a bench.out
	$(GO) test -run '^$$' -bench 'BenchmarkStoreDay' \
		-benchtime $(STORE_BENCHTIME) -timeout 60m ./monitor/store/ | tee -a bench.out
	$(GO) test -run '^$$' -bench 'BenchmarkScale' \
		-benchtime 1x -timeout 20m ./test/scale/ | tee -a bench.out
	$(GO) run ./tools/benchratio < bench.out
	$(GO) test -run '^$$' -bench 'BenchmarkServicesPage|BenchmarkServicePage' \
		-benchtime $(BENCHTIME) -timeout 10m ./console/

clean:
	rm -f $(BIN) bench.out
