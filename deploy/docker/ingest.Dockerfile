# syntax=docker/dockerfile:1
# mcplens ingest: Kafka or files in, exchange records out (ClickHouse,
# DuckDB, NDJSON). Build from the repository root:
#
#   docker build -f deploy/docker/ingest.Dockerfile -t mcplens/ingest:0.1.0 .
#
# Why glibc and not static: ingest links DuckDB (duckdb:PATH sinks) through
# cgo, and the DuckDB Go bindings ship a prebuilt libduckdb built against
# glibc and libstdc++; there is no musl build of it to link statically. So
# the binary is built with CGO_ENABLED=1 on Debian 12 and runs on
# distroless/cc-debian12 (glibc, libstdc++ and libgcc, no shell, no package
# manager), as the non-root user 65532. Builder and runtime must stay on the
# same Debian release: the binary needs the glibc it was linked against.
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=1 go build -trimpath -ldflags="-s -w" -o /out/ingest ./cmd/ingest

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/ingest /usr/local/bin/ingest
USER 65532:65532
# --listen: /metrics, /healthz, /readyz. The binary's default (auto) is
# 127.0.0.1:9464 for a kafka:// source and none for a file; containers
# must pass --listen 0.0.0.0:9464 (or MCPLENS_LISTEN) to be reachable by
# probes and scrapers.
EXPOSE 9464
ENTRYPOINT ["/usr/local/bin/ingest"]
