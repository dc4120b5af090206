#!/usr/bin/env bash
# Sourced by .ci/run after Kafka: starts the ClickHouse server the tests
# use (deploy/clickhouse/clickhouse.sh, chdb-core 26.9.0 installed if
# missing), exports CLICKHOUSE_DSN and CLICKHOUSE_HTTP_URL, and stops it on
# exit unless it was already running. Under CI=true the ClickHouse tests
# fail without these variables, so a server that does not start fails CI.
clickhouse() { bash deploy/clickhouse/clickhouse.sh "$@"; }
if clickhouse status >/dev/null 2>&1; then
	echo "reusing the clickhouse server already running"
else
	# Chain onto the trap .ci/run set for Kafka (if any).
	ch_prev_trap=$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT$/\1/")
	# shellcheck disable=SC2064 # expand the previous trap now
	trap "section 'stop clickhouse'; bash deploy/clickhouse/clickhouse.sh stop || true; ${ch_prev_trap:-:}" EXIT
fi
while IFS= read -r kv; do
	[[ $kv == CLICKHOUSE_*=?* ]] || { echo "clickhouse.sh start printed '$kv'" >&2; exit 1; }
	export "${kv?}"
	echo "$kv"
done < <(clickhouse start)
[[ -n ${CLICKHOUSE_DSN:-} && -n ${CLICKHOUSE_HTTP_URL:-} ]] || { echo "clickhouse.sh start printed no DSN" >&2; exit 1; }
