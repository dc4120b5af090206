# syntax=docker/dockerfile:1
# mcplens api: the REST API over the exchange store (ClickHouse or DuckDB).
# Build from the repository root:
#
#   docker build -f deploy/docker/api.Dockerfile -t mcplens/api:0.1.0 .
#
# Why glibc and not static: api links DuckDB (--store duckdb:PATH) through
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
    CGO_ENABLED=1 go build -trimpath -ldflags="-s -w" -o /out/api ./cmd/api

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/api /usr/local/bin/api
USER 65532:65532
# --listen: the API, /healthz, /readyz and /metrics. The default is
# 127.0.0.1:8080; containers must pass --listen 0.0.0.0:8080 (or
# MCPLENS_LISTEN) to be reachable through a port mapping or a Service.
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/api"]
