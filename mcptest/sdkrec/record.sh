#!/usr/bin/env bash
# Re-records testdata/real/{python,rust,typescript,typescript2}.ndjson:
# installs each SDK outside the repository (PyPI mcp 2.3.0, crates.io rmcp
# 3.11.0, npm @modelcontextprotocol/sdk 1.32.2, and the v2 SDK's
# @modelcontextprotocol/server and /client 2.4.0) under $WORK, then runs
# every scenario of plans.go through sdkrec. Ports 22100 (server) and 22200
# (proxy).
#
#   bash mcptest/sdkrec/record.sh            # all four
#   bash mcptest/sdkrec/record.sh python     # one
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
WORK=${WORK:-${TMPDIR:-/tmp}/sdkrec}
mkdir -p "$WORK"
go build -o "$WORK/sdkrec" "$repo/mcptest/sdkrec"

record() { # sdk scenario server client
  "$WORK/sdkrec" -sdk "$1" -scenario "$2" -server "$3" -client "$4" -out "$WORK/$1.ndjson"
}

python() {
  [ -x "$WORK/venv/bin/python" ] || python3 -m venv "$WORK/venv"
  "$WORK/venv/bin/pip" install -q mcp==2.3.0
  rm -f "$WORK/python.ndjson"
  for sc in legacy modern; do
    record python $sc "$WORK/venv/bin/python $here/python/server.py" "$WORK/venv/bin/python $here/python/client.py"
  done
}

rust() {
  mkdir -p "$WORK/rust/src"
  cp "$here/rust/Cargo.toml" "$WORK/rust/" && cp "$here/rust/src/main.rs" "$WORK/rust/src/"
  CARGO_TARGET_DIR="$WORK/rust-target" cargo build --release --manifest-path "$WORK/rust/Cargo.toml"
  rm -f "$WORK/rust.ndjson"
  for sc in legacy modern; do
    record rust $sc "$WORK/rust-target/release/rmcprec server" "$WORK/rust-target/release/rmcprec client"
  done
}

typescript() {
  mkdir -p "$WORK/ts"
  cp "$here/typescript/package.json" "$here/typescript/"*.mjs "$here/steps.mjs" "$WORK/ts/"
  (cd "$WORK/ts" && npm install --silent --no-audit --no-fund)
  rm -f "$WORK/typescript.ndjson"
  record typescript legacy "node $WORK/ts/server.mjs" "node $WORK/ts/client.mjs"
}

typescript2() {
  mkdir -p "$WORK/ts2"
  cp "$here/typescript2/package.json" "$here/typescript2/"*.mjs "$here/steps.mjs" "$WORK/ts2/"
  (cd "$WORK/ts2" && npm install --silent --no-audit --no-fund)
  rm -f "$WORK/typescript2.ndjson"
  for sc in modern legacy; do
    record typescript2 $sc "node $WORK/ts2/server.mjs" "node $WORK/ts2/client.mjs"
  done
}

for sdk in "${@:-python rust typescript typescript2}"; do
  for s in $sdk; do
    "$s"
    cp "$WORK/$s.ndjson" "$repo/testdata/real/$s.ndjson"
    echo "recorded testdata/real/$s.ndjson: $(wc -l < "$repo/testdata/real/$s.ndjson") events"
  done
done
