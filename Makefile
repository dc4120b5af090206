# mcplens developer entry points. `make test` is what CI runs (.ci/run).
GO       ?= go
PYTHON   ?= python3
FUZZTIME ?= 15s
PKGS     := ./...

.PHONY: all build test test-go fuzz bench lint demo run clean

all: build

build:
	$(GO) build -o bin/ ./cmd/...

## test: race-enabled unit and integration tests, then each fuzz target briefly.
test: test-go fuzz

test-go:
	$(GO) test -race -count=1 $(PKGS)

# Every parser of untrusted input, each for FUZZTIME (go test runs one fuzz
# target per invocation).
FUZZ_TARGETS := FuzzClassify:./classify FuzzDecode:./pipeline FuzzUnescape:./pipeline \
	FuzzRedact:./pipeline FuzzParseURL:./pipeline/kafkasource FuzzClientInfo:./tap

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		name=$${t%%:*}; pkg=$${t#*:}; \
		echo "fuzz $$name ($$pkg, $(FUZZTIME))"; \
		$(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) $$pkg; \
	done

## bench: benchmarks of the hot paths, printed as one table.
bench:
	$(GO) test -run='^$$' -bench=. -benchmem -count=1 ./classify ./pipeline | $(GO) run ./internal/benchtable

## demo: real MCP traffic through tap, Kafka (if a broker answers) or a file,
## ingest into DuckDB, the API, and the answers to the headline questions.
demo: build
	bin/demo $(DEMO_FLAGS)

lint:
	gofmt -l . | (! grep .)
	$(GO) vet $(PKGS)
	golangci-lint run

clean:
	rm -rf bin/
