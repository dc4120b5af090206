# syntax=docker/dockerfile:1
# mcplens tap: a recording MCP reverse proxy (no DuckDB, pure Go). Build from
# the repository root:
#
#   docker build -f deploy/docker/tap.Dockerfile -t mcplens/tap:0.1.0 .
#
# Fully static (CGO_ENABLED=0) on distroless/static-debian12: no libc, no
# shell, non-root user 65532.
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/tap ./cmd/tap

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/tap /usr/local/bin/tap
USER 65532:65532
# --listen: the proxy. The default is 127.0.0.1:8787; containers must pass
# --listen 0.0.0.0:8787 to be reachable.
EXPOSE 8787
ENTRYPOINT ["/usr/local/bin/tap"]
