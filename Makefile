# mcplens developer entry points. `make test` is what CI runs (.ci/run).
GO       ?= go
PYTHON   ?= python3
FUZZTIME ?= 20s
PKGS     := ./...

.PHONY: all build test test-go fuzz bench lint demo run clean

all: build

build:
	$(GO) build -o bin/ ./cmd/...

## test: race-enabled unit and integration tests, then each fuzz target briefly.
test: test-go fuzz

test-go:
	$(GO) test -race -count=1 $(PKGS)

fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzClassify$$' -fuzztime=$(FUZZTIME) ./classify

## bench: benchmarks of the hot paths, printed as one table.
bench:
	$(GO) test -run='^$$' -bench=. -benchmem -count=1 ./classify | $(GO) run ./internal/benchtable

lint:
	gofmt -l . | (! grep .)
	$(GO) vet $(PKGS)
	golangci-lint run

clean:
	rm -rf bin/
