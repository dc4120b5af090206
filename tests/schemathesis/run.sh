#!/usr/bin/env bash
# Property-based fuzzing of the REST API from its OpenAPI document.
#
# Builds cmd/api, loads the storage conformance corpus into a fresh DuckDB
# file, serves it on a free loopback port with a token that has every
# scope, and runs schemathesis against http://ADDR/openapi.json: no 5xx,
# every status, content type, header and body as the document says, bad
# input rejected with 4xx, auth not ignored, other methods answered 405.
# Then stops the API with SIGTERM and expects a clean exit.
#
# STORE=clickhouse loads the corpus into a fresh database on the server of
# CLICKHOUSE_DSN instead (.ci/run starts it) and drops it afterwards.
#
# Needs schemathesis (pip install schemathesis; .ci/run installs it); it
# installs nothing itself. Knobs: STORE (duckdb or clickhouse), MAX_EXAMPLES
# (default 30 per operation), SEED (default fixed, so a failure
# reproduces), GO, PYTHON.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

GO=${GO:-go}
PYTHON=${PYTHON:-python3}
MAX_EXAMPLES=${MAX_EXAMPLES:-30}
SEED=${SEED:-20261103}

if command -v schemathesis >/dev/null; then
	st=(schemathesis)
elif "$PYTHON" -c 'import schemathesis.cli' 2>/dev/null; then
	st=("$PYTHON" -c 'import sys; from schemathesis.cli import schemathesis; sys.argv[0] = "schemathesis"; sys.exit(schemathesis())')
else
	echo "tests/schemathesis: schemathesis is not installed (python3 -m pip install schemathesis)" >&2
	exit 1
fi

STORE=${STORE:-duckdb}
work=$(mktemp -d)
api_pid=
drop_db=
cleanup() {
	if [[ -n $drop_db ]]; then
		curl -sf "${CLICKHOUSE_HTTP_URL%/}/" --data-binary "DROP DATABASE IF EXISTS $drop_db" >/dev/null || true
	fi
	if [[ -n $api_pid ]] && kill -0 "$api_pid" 2>/dev/null; then
		kill -TERM "$api_pid" 2>/dev/null || true
		wait "$api_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

echo "schemathesis: building cmd/api and the fixture loader"
"$GO" build -o "$work/api" ./cmd/api
"$GO" build -o "$work/loadfixture" ./tests/schemathesis/loadfixture
query_timeout=5s
request_timeout=10
case $STORE in
duckdb)
	"$work/loadfixture" -out "$work/fixture.duckdb"
	store="duckdb:$work/fixture.duckdb"
	;;
clickhouse)
	if [[ -z ${CLICKHOUSE_DSN:-} || -z ${CLICKHOUSE_HTTP_URL:-} ]]; then
		echo "tests/schemathesis: STORE=clickhouse needs CLICKHOUSE_DSN and CLICKHOUSE_HTTP_URL (deploy/clickhouse/clickhouse.sh start)" >&2
		exit 1
	fi
	db=mcplens_schemathesis_$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
	drop_db=$db
	"$work/loadfixture" -clickhouse "$CLICKHOUSE_DSN" -db "$db"
	store="${CLICKHOUSE_DSN%/*}/$db"
	# A bundle reads failed exchanges one query at a time: on a loaded
	# machine a ClickHouse round trip can take 100 ms.
	query_timeout=60s
	request_timeout=70
	;;
*)
	echo "tests/schemathesis: STORE=$STORE: want duckdb or clickhouse" >&2
	exit 2
	;;
esac
echo "schemathesis: store $STORE"

token=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
MCPLENS_TOKENS="$token scopes=read,bodies name=schemathesis" \
	"$work/api" --store "$store" --listen 127.0.0.1:0 \
	--rate-limit 0 --query-timeout "$query_timeout" 2>"$work/api.log" &
api_pid=$!

addr=
for _ in $(seq 1 300); do
	addr=$(sed -n 's/.*"addr":"\([^"]*\)".*"message":"serving the API".*/\1/p' "$work/api.log" | head -n1)
	[[ -n $addr ]] && break
	kill -0 "$api_pid" 2>/dev/null || { echo "api exited:" >&2; cat "$work/api.log" >&2; exit 1; }
	sleep 0.1
done
[[ -n $addr ]] || { echo "api did not start within 30s:" >&2; cat "$work/api.log" >&2; exit 1; }
echo "schemathesis: api on $addr"

status=0
# From the scratch directory: schemathesis keeps a cache in ./.schemathesis.
(cd "$work" && "${st[@]}" run "http://$addr/openapi.json" \
	--header "Authorization: Bearer $token" \
	--checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,negative_data_rejection,ignored_auth,unsupported_method,allow_header_conformance \
	--phases examples,coverage,fuzzing \
	--max-examples "$MAX_EXAMPLES" \
	--seed "$SEED" \
	--workers 2 \
	--request-timeout "$request_timeout" \
	--generation-database none \
	--no-color) || status=$?

kill -TERM "$api_pid"
api_status=0
wait "$api_pid" || api_status=$?
api_pid=
if grep -q '"handler panicked"\|"level":"error"' "$work/api.log"; then
	echo "schemathesis: the api logged errors:" >&2
	grep '"handler panicked"\|"level":"error"' "$work/api.log" | head -n 20 >&2
	status=1
fi
if [[ $api_status != 0 ]]; then
	echo "schemathesis: api exited $api_status after SIGTERM" >&2
	tail -n 20 "$work/api.log" >&2
	status=1
fi
exit "$status"
