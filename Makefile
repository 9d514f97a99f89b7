# streamledger: `make test` is the one command CI runs (through .ci/run).
SHELL := /bin/bash
GO ?= go
# The library packages (the core and the consumer runtime under ledger/) run under the race
# detector; the DLQ client, the examples and the test helpers run without it, to keep CI time in
# bounds (their end-to-end tests are the long ones, and librdkafka's threads are not
# instrumented anyway).
RACE := ./ledger/... ./window/... ./watermark/... ./sink/...
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/test?sslmode=disable
export DATABASE_URL
MYSQL_DSN ?= root@tcp(127.0.0.1:3306)/test
export MYSQL_DSN

.PHONY: test fmt-check vet test-race test-rest bench lint fuzz demo chaos

test: fmt-check vet test-race test-rest

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

test-race:
	$(GO) test -race -count=1 $(RACE)

test-rest:
	@rest=$$($(GO) list ./... | grep -v -E '/(ledger|window|watermark|sink)(/|$$)'); \
	if [ -n "$$rest" ]; then $(GO) test -count=1 -timeout 14m $$rest; fi

# Micro benchmarks in benchstat's format, with allocations. A time-based -benchtime, never Nx:
# some benchmarks do a lot per op (the ledger's BenchmarkPendingMemoryInOrder adds 10 M
# entries). Compare runs with: make bench BENCHCOUNT=6 > new.txt; benchstat old.txt new.txt.
# The end-to-end benchmark is `go run ./examples/ov bench [--quick] [--json FILE]`.
BENCHTIME ?= 300ms
BENCHCOUNT ?= 1
BENCH ?= .
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -benchtime $(BENCHTIME) -count $(BENCHCOUNT) ./...

# Each fuzz target runs for FUZZTIME; `go test -fuzz` takes one target per run.
FUZZTIME ?= 60s
FUZZ := \
	./ledger:FuzzDecodeMetadata ./ledger:FuzzPartition ./watermark:FuzzPartition \
	./window:FuzzStatsUnmarshal ./sink/internal/merge:FuzzMerge ./sink/internal/fold:FuzzDecode ./dlq:FuzzDecode \
	./examples/ov/event:FuzzDecode ./examples/ov/feed:FuzzReader \
	./examples/credits/internal/credit:FuzzDecode ./examples/credits/internal/credit:FuzzCanonical

fuzz:
	@set -e; for t in $(FUZZ); do \
		echo "fuzz $$t"; $(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) "$${t%%:*}"; \
	done

# The OV demo: in-process broker, accelerated feed, processor, Postgres at DATABASE_URL.
demo:
	$(GO) run ./examples/ov demo

# The full reliability harness of the OV example (over 1 M records); it stops and starts the
# Postgres server, so never on a shared one. `make test` runs the short version.
chaos:
	$(GO) run ./examples/ov chaos --full

lint:
	$(GO) run $(STATICCHECK) ./...
