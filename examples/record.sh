#!/usr/bin/env bash
# Records examples/gateway.ndjson again: the demo's real Go SDK traffic
# (normal calls and its fault plan) through cmd/tap into a file, without
# Kafka. Run from the repository root after `make build`.
set -euo pipefail
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
bin/demo --kafka off --workdir "$dir" >/dev/null
cp "$dir/events.ndjson" examples/gateway.ndjson
echo "examples/gateway.ndjson: $(wc -l <examples/gateway.ndjson) lines"
