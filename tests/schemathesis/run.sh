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
# Needs schemathesis (pip install schemathesis; .ci/run installs it); it
# installs nothing itself. Knobs: MAX_EXAMPLES (default 30 per operation),
# SEED (default fixed, so a failure reproduces), GO, PYTHON.
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

work=$(mktemp -d)
api_pid=
cleanup() {
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
"$work/loadfixture" -out "$work/fixture.duckdb"

token=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
MCPLENS_TOKENS="$token scopes=read,bodies name=schemathesis" \
	"$work/api" --store "duckdb:$work/fixture.duckdb" --listen 127.0.0.1:0 \
	--rate-limit 0 --query-timeout 5s 2>"$work/api.log" &
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
	--request-timeout 10 \
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
