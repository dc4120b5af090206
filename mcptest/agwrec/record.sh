#!/usr/bin/env bash
# Re-records pipeline/agentgateway/testdata/recorded/{access.log,client.json}
# with a real agentgateway binary (AGENTGATEWAY=path; this repository does
# not build or ship one) on deploy/agentgateway/config.yaml. agentgateway
# binds its listeners on the wildcard address, so the recording runs in a
# network namespace of its own where only loopback exists (unshare -n, as
# root; as another user unshare -rn).
#
#   AGENTGATEWAY=/path/to/agentgateway bash mcptest/agwrec/record.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
: "${AGENTGATEWAY:?set AGENTGATEWAY to an agentgateway binary}"
WORK=${WORK:-${TMPDIR:-/tmp}/agwrec}
mkdir -p "$WORK"
go build -o "$WORK/agwrec" "$repo/mcptest/agwrec"
"$AGENTGATEWAY" --version >"$WORK/version.json" || true
cd "$repo"
unshare_flags=-n
[ "$(id -u)" = 0 ] || unshare_flags=-rn
unshare $unshare_flags sh -c 'ip link set lo up && exec "$0" -agentgateway "$1" -config deploy/agentgateway/config.yaml -out pipeline/agentgateway/testdata/recorded' \
  "$WORK/agwrec" "$AGENTGATEWAY"
echo "agentgateway: $(cat "$WORK/version.json")"
