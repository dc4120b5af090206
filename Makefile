# mcplens developer entry points. `make test` is what CI runs (.ci/run).
GO       ?= go
PYTHON   ?= python3
CARGO    ?= cargo
# deploy/shippers/vrlrun's build, outside the tree, shared by worktrees.
VRLRUN_TARGET ?= $(HOME)/.cache/mcplens/vrlrun
VRLRUN   := $(VRLRUN_TARGET)/debug/vrlrun
FUZZTIME ?=
PKGS     := ./...
# The ingester is built with profile-guided optimisation: go build picks
# up cmd/ingest/default.pgo (make pgo rebuilds it). Benchmarks that run its
# code in process, not the built binary, are compiled with the same
# profile, so that they measure what ships.
PGO      := -pgo=$(CURDIR)/cmd/ingest/default.pgo

.PHONY: all build test test-go fuzz bench lint demo run clean

all: build

build:
	$(GO) build -o bin/ ./cmd/...

## test: race-enabled unit and integration tests, then each fuzz target briefly.
test: lint test-go fuzz test-chdb test-dashboards test-api test-api-clickhouse test-shippers-ottl test-shippers-vrl

test-go:
	$(GO) test -race -count=1 -timeout 30m $(PKGS)

# Every parser of untrusted input, each for a number of calls that takes
# about 10 s on the CI machine (go test runs one fuzz target per
# invocation). A count, not a duration: go1.26's fuzz coordinator can fail
# a target with a bare "context deadline exceeded" when a -fuzztime
# duration ends while a worker is mid-call (golang/go#75804, fixed in
# go1.27); a count never arms that deadline. FUZZTIME=2m (or 1000000x)
# overrides every budget for a longer hunt.
FUZZ_TARGETS := FuzzClassify:./classify:300000x FuzzDecode:./pipeline:150000x \
	FuzzUnescape:./pipeline:150000x FuzzRedact:./redact:150000x \
	FuzzParseURL:./pipeline/kafkasource:150000x FuzzClientInfo:./tap:200000x \
	FuzzParseCursor:./queries:300000x FuzzLikePattern:./queries:300000x \
	FuzzGateway:./deploy/shippers:200000x FuzzParseTime:./queries:70000x \
	FuzzTokens:./api:30000x FuzzExpand:./pipeline/otlpsource:30000x \
	FuzzEvent:./pipeline/agentgateway:100000x FuzzScanMatchesFastjson:./pipeline:80000x \
	FuzzAppendString:./schema:200000x

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		name=$${t%%:*}; rest=$${t#*:}; pkg=$${rest%%:*}; budget=$(if $(FUZZTIME),$(FUZZTIME),$${rest#*:}); \
		echo "fuzz $$name ($$pkg, $$budget)"; \
		$(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$$budget $$pkg; \
	done

## bench: every figure the issues name, measured in one run on this
## machine and printed as one table: classifier vs a plain JSON decode,
## pipeline file -> stdout (one core) vs the naive decoder, memory per
## pending request, file -> DuckDB (one core), Kafka -> DuckDB on a real
## broker (started here if none runs), Kafka -> ClickHouse, once beside the
## OpenTelemetry collector if bench-otel has built it (one 31-minute round),
## ClickHouse block encoding, and each API route's and web page's p50/p99
## over 1,000,000 stored exchanges.
bench:
	@started=; bench_db=; \
	if [ -z "$$MCPLENS_BENCH_DB" ]; then \
		bench_db=$$(mktemp -d); export MCPLENS_BENCH_DB=$$bench_db/bench-1m.duckdb; \
	fi; \
	if [ -z "$$MCPLENS_KAFKA_BROKERS" ]; then \
		bash deploy/kafka/kafka.sh fetch >/dev/null; \
		if ! bash deploy/kafka/kafka.sh status >/dev/null 2>&1; then started=1; fi; \
		export $$(bash deploy/kafka/kafka.sh start); \
	fi; \
	{ $(GO) test $(PGO) -run='^$$' -bench='^BenchmarkClassifyRatio$$' -count=1 ./classify && \
	  $(GO) test $(PGO) -run='^$$' -bench='^(BenchmarkPipeline|BenchmarkNaiveLineDecode|BenchmarkPendingMemory)$$' -benchtime=5x -cpu=1 -benchmem -count=1 ./pipeline && \
	  $(MAKE) -s bench-steady && \
	  $(GO) test $(PGO) -run='^$$' -bench='^BenchmarkEndToEnd$$' -benchtime=5x -benchmem -count=1 ./store/duckstore && \
	  $(GO) test -run='^$$' -bench='^BenchmarkKafkaToDuckDB$$' -benchtime=3x -count=1 ./e2e && \
	  $(GO) test -run='^$$' -bench='^BenchmarkKafkaToClickHouse$$' -benchtime=3x -cpu=1 -count=1 ./e2e && \
	  if otelcol=$$(bash deploy/otelcol-compare/build.sh --cached 2>/dev/null); then \
		MCPLENS_OTELCOL=$$otelcol $(GO) test -run='^$$' -bench='^BenchmarkKafkaToClickHouseVsOtelcol$$' -benchtime=1x -count=1 -timeout=120m ./e2e; \
	  else echo "make bench: the collector is not built, so no side-by-side run (make bench-otel builds it)" >&2; fi && \
	  $(GO) test $(PGO) -run='^$$' -bench='^(BenchmarkEncodeExchanges|BenchmarkEncodeBodies)$$' -benchtime=20x -benchmem -count=1 ./store/chstore && \
	  $(GO) test $(PGO) -run='^$$' -bench='^BenchmarkFileToClickHouse$$' -benchtime=2x -cpu=1 -benchmem -count=1 ./store/chstore && \
	  $(GO) test -run='^$$' -bench='^BenchmarkTapAddedLatency$$' -benchtime=3000x -count=1 ./cmd/tap && \
	  $(GO) test -run='^$$' -bench='^BenchmarkRoutes$$' -benchtime=50x -count=1 -timeout=30m ./api && \
	  $(GO) test -run='^$$' -bench='^BenchmarkRoutesClickHouse$$' -benchtime=50x -count=1 -timeout=30m ./api && \
	  $(GO) test -run='^$$' -bench='^(BenchmarkPages|BenchmarkOverviewRatio|BenchmarkPagesClickHouse)$$' -benchtime=10x -count=1 -timeout=30m ./web; } | $(GO) run ./internal/benchtable; \
	status=$$?; if [ -n "$$started" ]; then bash deploy/kafka/kafka.sh stop >/dev/null; fi; \
	if [ -n "$$bench_db" ]; then rm -rf "$$bench_db"; fi; exit $$status

## demo: real MCP traffic through tap, Kafka (if a broker answers) or a file,
## ingest into DuckDB, the API, and the answers to the headline questions.
## STORE=clickhouse: into a ClickHouse server of the demo's own instead.
demo: build
	bin/demo $(if $(STORE),--store $(STORE)) $(DEMO_FLAGS)

lint:
	gofmt -l . | (! grep .)
	$(GO) vet $(PKGS)
	golangci-lint run --allow-serial-runners

clean:
	rm -rf bin/

## test-dashboards: every Grafana panel's SQL, expanded as the ClickHouse
## plugin does, on the real ClickHouse engine (chDB) over the conformance
## fixture, and a lint of dashboards/ (needs pytest and chdb-core).
.PHONY: test-dashboards
test-dashboards:
	$(PYTHON) -m pytest -q -p no:cacheprovider tests/dashboards

## test-shippers-ottl: the OTTL of deploy/shippers/otelcol.yaml run by the
## collector's own OTTL package over the OTel samples, expecting the Go
## reference's events (a module of its own: the collector's dependencies
## stay out of go.mod; its first build takes a few minutes).
.PHONY: test-shippers-ottl
test-shippers-ottl:
	cd deploy/shippers/ottlrun && $(GO) vet ./... && $(GO) test -count=1 ./...

## vrlrun: deploy/shippers/vrlrun, the VRL programs run by the vrl crate's
## compiler and standard library as the vrl CLI runs them (a Rust crate of
## its own, built with its Cargo.lock into $(VRLRUN_TARGET); the first
## build takes minutes, later ones none).
.PHONY: vrlrun
vrlrun:
	cd deploy/shippers/vrlrun && CARGO_TARGET_DIR=$(VRLRUN_TARGET) $(CARGO) build --locked --quiet

## test-shippers-vrl: gateway.vrl and agentgateway.vrl run by vrlrun over
## the shipper corpora, expecting the Go references' events (part of
## `make test`; needs cargo). MCPLENS_VRL=/path/to/vrl runs them with
## another binary taking the CLI's flags, the vrl CLI itself for one.
.PHONY: test-shippers-vrl
test-shippers-vrl: $(if $(MCPLENS_VRL),,vrlrun)
	MCPLENS_REQUIRE_VRL=1 MCPLENS_VRL=$(or $(MCPLENS_VRL),$(VRLRUN)) $(GO) test -count=1 -run 'VRL' -v ./deploy/shippers

## test-api: schemathesis fuzzes a live cmd/api from its OpenAPI document
## (needs `pip install schemathesis`, which .ci/run does).
.PHONY: test-api
test-api:
	GO=$(GO) PYTHON=$(PYTHON) bash tests/schemathesis/run.sh

## test-chdb: every question of queries/ and the ClickHouse DDL of schema/
## on the real ClickHouse engine (chDB), against the same expected answers
## the Go suite checks on DuckDB (needs pytest and chdb-core).
.PHONY: test-chdb
test-chdb:
	$(PYTHON) -m pytest -q -p no:cacheprovider tests/chdb

## pgo: rebuild cmd/ingest/default.pgo, the profile the ingester is built
## with, by profiling it over production-shaped traffic through file ->
## stdout, file -> DuckDB and, when CLICKHOUSE_DSN and MCPLENS_KAFKA_BROKERS
## name running servers, file -> ClickHouse and Kafka -> ClickHouse
## (deploy/pgo.sh; about 2 minutes).
.PHONY: pgo
pgo:
	bash deploy/pgo.sh

## bench-store: storage benchmarks as one table: DuckDB sink and end to end
## on one core, ClickHouse block encoding without a server, and each
## question's p50/p99 over 1,000,000 stored exchanges.
.PHONY: bench-store
bench-store:
	{ $(GO) test $(PGO) -run='^$$' -bench='^(BenchmarkSinkWrite|BenchmarkEndToEnd)$$' -benchtime=5x -benchmem -count=1 ./store/duckstore && \
	  $(GO) test $(PGO) -run='^$$' -bench='^(BenchmarkEncodeExchanges|BenchmarkEncodeBodies)$$' -benchtime=20x -benchmem -count=1 ./store/chstore && \
	  $(GO) test -run='^$$' -bench='^BenchmarkTapAddedLatency$$' -benchtime=3000x -count=1 ./cmd/tap && \
	  $(GO) test -run='^$$' -bench='^BenchmarkQuestions$$' -benchtime=30x -benchmem -count=1 -timeout=30m ./store/duckstore; } | $(GO) run ./internal/benchtable

## test-api-clickhouse: every API test again on the ClickHouse server of
## CLICKHOUSE_DSN (.ci/run starts it), then schemathesis over a cmd/api on
## that server; test-go already ran them on DuckDB with the race detector
## (and TestEnginesAgree, which compares both).
.PHONY: test-api-clickhouse
test-api-clickhouse:
	MCPLENS_TEST_ENGINE=clickhouse $(GO) test -count=1 -timeout 30m -skip '^TestEnginesAgree$$' ./api/...
	STORE=clickhouse MAX_EXAMPLES=8 GO=$(GO) PYTHON=$(PYTHON) bash tests/schemathesis/run.sh

## bench-steady: the steady-state figures of issue 13: each windowed
## stage's cost at 1x/3x/10x its population, the Kafka source's choice of
## the next message with 1 to 256 partitions and the correlator's release
## with 1 to 96, the output encoder against
## encoding/json, and 31 minutes of production-shaped traffic (internal/loadgen,
## 1,000 calls/s, 3x the longest window) through the whole engine on one core:
## throughput and RSS per third, ratio to a plain JSON decode; the bytes per
## call and per event id the windows hold, and the ingest binary's peak RSS
## over 1,000,000 events with and without --memory-limit; then freshness
## (a response's arrival to its exchange acknowledged, paced at 1,000 calls/s)
## into the stdout sink, DuckDB and the ClickHouse server of CLICKHOUSE_DSN,
## and file -> DuckDB, a minute of traffic and the 31 minutes with throughput
## per third. About 15 minutes and 5 for freshness;
## MCPLENS_BENCH_MINUTES shortens the run.
.PHONY: bench-steady
bench-steady:
	$(GO) test $(PGO) -run='^$$' -bench='^BenchmarkExchangeJSON$$' -benchtime=100000x -benchmem -count=1 ./schema && \
	$(GO) test $(PGO) -run='^$$' -bench='^BenchmarkWindowCost$$' -benchtime=200000x -cpu=1 -benchmem -count=1 -timeout=30m ./pipeline && \
	$(GO) test $(PGO) -run='^$$' -bench='^BenchmarkPick$$' -benchtime=300000x -cpu=1 -count=1 ./pipeline/kafkasource && \
	$(GO) test $(PGO) -run='^$$' -bench='^BenchmarkReleaseStreams$$' -benchtime=3x -cpu=1 -count=1 ./pipeline && \
	$(GO) test $(PGO) -run='^$$' -bench='^BenchmarkSteadyState$$' -benchtime=1x -cpu=1 -count=1 -timeout=90m ./pipeline && \
	$(GO) test $(PGO) -run='^$$' -bench='^(BenchmarkChainsMemory|BenchmarkDedupeMemory|BenchmarkClockMemory)$$' -benchtime=1x -count=1 ./pipeline && \
	$(GO) test -run='^$$' -bench='^BenchmarkIngestRSS$$' -benchtime=1x -count=1 -timeout=30m ./cmd/ingest && \
	$(GO) test $(PGO) -run='^$$' -bench='^BenchmarkFreshness$$' -benchtime=1x -count=1 ./pipeline && \
	$(GO) test $(PGO) -run='^$$' -bench='^(BenchmarkFreshnessDuckDB|BenchmarkLoadgenToDuckDB|BenchmarkLoadgenToDuckDBSteady)$$' -benchtime=1x -count=1 -timeout=60m ./store/duckstore && \
	$(GO) test $(PGO) -run='^$$' -bench='^BenchmarkFreshnessClickHouse$$' -benchtime=1x -count=1 ./store/chstore

## bench-otel: issue 13's side by side with the OpenTelemetry collector
## contrib (kafkareceiver -> clickhouseexporter v0.165.1, built once by
## deploy/otelcol-compare/build.sh from the Go module proxy into a cache
## outside the repo): one 3-partition topic of loadgen traffic, 31 minutes
## of event time at 1,000 calls/s (MCPLENS_BENCH_MINUTES), read by the
## collector and by ingest in turn, each pinned to one core (GOMAXPROCS=1),
## into the ClickHouse server of CLICKHOUSE_DSN; events/s from start to the
## last row visible, per wall and per CPU second, mid-stream, and the ratio
## mcplens/collector, twice. Starts a broker and a ClickHouse server of its
## own when none is named. make bench runs it only once the collector is
## built (a first build takes several minutes).
.PHONY: bench-otel
bench-otel:
	@otelcol=$$(bash deploy/otelcol-compare/build.sh) || exit 1; \
	kafka=; ch=; \
	if [ -z "$$MCPLENS_KAFKA_BROKERS" ]; then \
		bash deploy/kafka/kafka.sh fetch >/dev/null; \
		if ! bash deploy/kafka/kafka.sh status >/dev/null 2>&1; then kafka=1; fi; \
		export $$(bash deploy/kafka/kafka.sh start); \
	fi; \
	if [ -z "$$CLICKHOUSE_DSN" ]; then \
		if ! bash deploy/clickhouse/clickhouse.sh status >/dev/null 2>&1; then ch=1; fi; \
		export $$(bash deploy/clickhouse/clickhouse.sh start); \
	fi; \
	MCPLENS_OTELCOL=$$otelcol $(GO) test -run='^$$' -bench='^BenchmarkKafkaToClickHouseVsOtelcol$$' -benchtime=2x -count=1 -timeout=120m ./e2e | \
		tee /dev/stderr | $(GO) run ./internal/benchtable; \
	status=$$?; \
	if [ -n "$$kafka" ]; then bash deploy/kafka/kafka.sh stop >/dev/null; fi; \
	if [ -n "$$ch" ]; then bash deploy/clickhouse/clickhouse.sh stop >/dev/null; fi; \
	exit $$status

# The long chaos form of issue 12 (a broker of its own; CLICKHOUSE_DSN and
# CLICKHOUSE_HTTP_URL as make test has them): CHAOS_SECONDS of traffic at
# CHAOS_RATE events/s into DuckDB under SIGKILLs and a broker restart, and
# into ClickHouse with members joining, killed and leaving. make test runs
# the short form (TestChaos with its defaults) inside test-go.
CHAOS_SECONDS ?= 600
CHAOS_RATE ?= 20000
.PHONY: chaos
chaos:
	CHAOS_SECONDS=$(CHAOS_SECONDS) CHAOS_RATE=$(CHAOS_RATE) $(GO) test -count=1 -run '^TestChaos$$' -v -timeout 90m ./cmd/ingest
