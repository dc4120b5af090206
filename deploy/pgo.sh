#!/usr/bin/env bash
# pgo.sh: rebuild cmd/ingest/default.pgo, the CPU profile `go build`
# optimises the ingester with (profile-guided optimisation, -pgo=auto).
#
# It profiles the ingester itself (--cpu-profile), built without a
# profile, over production-shaped traffic from cmd/loadgen (a seed of its
# own, not the benchmarks' seed 1; secrets, bad UTF-8 and poison lines in
# it), through each path it serves: file -> stdout, file -> DuckDB and,
# when CLICKHOUSE_DSN and MCPLENS_KAFKA_BROKERS name running servers,
# file -> ClickHouse and Kafka -> ClickHouse. The profiles are merged, so
# each path weighs what its run cost. Run it from the module root:
#
#   bash deploy/pgo.sh            # or: make pgo
#
# PGO_MINUTES (default 6) sets the minutes of event time at 1,000 calls/s.
# The ClickHouse databases it writes are dropped after (through
# CLICKHOUSE_HTTP_URL, when set); the Kafka topic (pgo-*) is left.
set -euo pipefail

minutes=${PGO_MINUTES:-6}
calls=$((minutes * 60 * 1000))
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

say() { echo "pgo.sh: $*" >&2; }

go build -pgo=off -o "$work/ingest" ./cmd/ingest
go build -o "$work/loadgen" ./cmd/loadgen
shape=(-seed 4242 -calls "$calls" -secrets 0.02 -bad-utf8 0.005 -poison 0.0005 -client-share 0.15 -give-up 0.02)
say "generating $calls calls ($minutes minutes of event time)"
"$work/loadgen" "${shape[@]}" -out "$work/load.ndjson" 2>/dev/null

profiles=()
ingest() { # NAME ARGS...: one profiled run
	local name=$1
	shift
	say "profiling $name"
	# Quarantined lines go to stderr with a stdout sink: kept aside, shown
	# only if the run fails.
	if ! "$work/ingest" --log-level error --listen "" --progress never --cpu-profile "$work/$name.pprof" "$@" >/dev/null 2>"$work/$name.err"; then
		tail -n 20 "$work/$name.err" >&2
		return 1
	fi
	profiles+=("$work/$name.pprof")
}

ingest stdout --from "file:$work/load.ndjson" --to stdout
ingest duckdb --from "file:$work/load.ndjson" --to "duckdb:$work/pgo.duckdb"
if [ -n "${CLICKHOUSE_DSN:-}" ]; then
	base=${CLICKHOUSE_DSN%/*}
	db=pgo_$$
	ingest clickhouse --from "file:$work/load.ndjson" --to "$base/${db}_file" --migrate
	if [ -n "${MCPLENS_KAFKA_BROKERS:-}" ]; then
		topic=pgo-$$-$(date +%s)
		lines=$("$work/loadgen" "${shape[@]}" -kafka "$MCPLENS_KAFKA_BROKERS" -topic "$topic" -partitions 3 2>&1 >/dev/null |
			sed -n 's/.*"lines":\([0-9]*\).*/\1/p')
		[ -n "$lines" ] || { say "producing to $topic failed"; exit 1; }
		say "profiling kafka-clickhouse ($lines lines on $topic)"
		port=$((20000 + $$ % 10000))
		"$work/ingest" --log-level error --listen "127.0.0.1:$port" --progress never \
			--cpu-profile "$work/kafka.pprof" --migrate --to "$base/${db}_kafka" \
			--from "kafka://${MCPLENS_KAFKA_BROKERS}/$topic?group=pgo" >/dev/null &
		pid=$!
		for _ in $(seq 1200); do
			n=$(curl -s "127.0.0.1:$port/metrics" | awk '/^mcplens_ingest_events_total/{s+=$2} END{print s+0}') || n=0
			[ "${n:-0}" -ge "$lines" ] && break
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.5
		done
		kill -TERM "$pid" && wait "$pid"
		profiles+=("$work/kafka.pprof")
	fi
else
	say "CLICKHOUSE_DSN is not set: no ClickHouse or Kafka paths in the profile"
fi

if [ -n "${CLICKHOUSE_DSN:-}" ] && [ -n "${CLICKHOUSE_HTTP_URL:-}" ]; then
	for d in "${db}_file" "${db}_kafka"; do
		curl -fsS "$CLICKHOUSE_HTTP_URL" --data-binary "DROP DATABASE IF EXISTS $d" >/dev/null || say "could not drop $d"
	done
fi

go tool pprof -proto "${profiles[@]}" >"$work/merged.pgo" 2>/dev/null
mv "$work/merged.pgo" cmd/ingest/default.pgo
say "wrote cmd/ingest/default.pgo ($(wc -c <cmd/ingest/default.pgo) bytes) from ${#profiles[@]} profiles"
