#!/usr/bin/env bash
# build.sh builds the OpenTelemetry collector of builder.yaml (the contrib
# kafkareceiver and clickhouseexporter) with the collector builder, both
# from the Go module proxy, into a cache directory outside the repo, once,
# and prints the binary's path on stdout. Nothing it builds is committed.
#
# Usage: deploy/otelcol-compare/build.sh [--cached]
#
#   --cached  print the path only if that build is already there (exit 3
#             if not): make bench runs the side-by-side benchmark only then
#
# A build takes several minutes (about 600 packages) and runs at nice 19;
# it is redone when builder.yaml changes.
#
# Environment: MCPLENS_OTELCOL_DIR, the cache directory
# [${XDG_CACHE_HOME:-$HOME/.cache}/mcplens/otelcol-0.165.1]; GO [go].
set -euo pipefail

readonly BUILDER_VERSION=v0.165.0
readonly HERE=$(cd "$(dirname "$0")" && pwd)
readonly CACHE=${MCPLENS_OTELCOL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mcplens/otelcol-0.165.1}
readonly BIN=$CACHE/build/mcplens-otelcol
GO=${GO:-go}

want=$(sha256sum <"$HERE/builder.yaml" | cut -d' ' -f1)
if [ -x "$BIN" ] && [ "$(cat "$CACHE/builder.sha256" 2>/dev/null)" = "$want" ]; then
	echo "$BIN"
	exit 0
fi
if [ "${1:-}" = "--cached" ]; then
	echo "build.sh: no collector built from this builder.yaml in $CACHE" >&2
	exit 3
fi
mkdir -p "$CACHE"
echo "build.sh: building the collector builder $BUILDER_VERSION and the collector into $CACHE (nice 19, several minutes)" >&2
GOBIN=$CACHE/bin nice -n 19 "$GO" install "go.opentelemetry.io/collector/cmd/builder@$BUILDER_VERSION" >&2
rm -f "$CACHE/builder.sha256"
(cd "$CACHE" && nice -n 19 "$CACHE/bin/builder" --config "$HERE/builder.yaml" --output-path "$CACHE/build") >&2
echo "$want" >"$CACHE/builder.sha256"
echo "$BIN"
