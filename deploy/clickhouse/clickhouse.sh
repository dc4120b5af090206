#!/usr/bin/env bash
# clickhouse.sh runs a real ClickHouse 26.9 server on 127.0.0.1 for mcplens
# tests and local work: the server network code (native TCP and HTTP) that
# PyPI's chdb-core 26.9.0 ships, started from clickhouse-local with
# SYSTEM START LISTEN. It is the counterpart of deploy/kafka/kafka.sh.
#
# Usage: deploy/clickhouse/clickhouse.sh install|start|stop|kill|restart|status
#
#   install  pip-install the pinned chdb-core if this python lacks it
#   start    install if needed, write config.xml and users.xml, start the
#            server on the state dir's data, wait for /ping and print
#            CLICKHOUSE_DSN=clickhouse://default:@127.0.0.1:PORT/mcplens and
#            CLICKHOUSE_HTTP_URL=http://127.0.0.1:HTTP_PORT on stdout (one
#            line each); no-op if running
#   stop     SIGTERM, wait, then SIGKILL; the data dir is kept
#   kill     SIGKILL at once (fault tests); the data dir is kept
#   restart  stop then start on the same data dir
#   status   exit 0 if running (and say whether /ping answers), 3 if not
#
# Progress goes to stderr, so `while read -r kv; do export "$kv"; done < <(clickhouse.sh start)` works.
#
# Differences from clickhouse-server: the `default` database is an Overlay
# database and `system` is Memory, so mcplens keeps its tables in its own
# database (`ingest --migrate` creates it); there is no Keeper, so the
# cluster variant (ON CLUSTER, Replicated*) cannot run here.
#
# Users (users.xml, loopback only): `default` without a password (may
# manage access), `mcplens` with password `mcplens-test`, and `reader`
# with password `reader-test` and the readonly profile. Test passwords only.
#
# Environment (defaults in brackets):
#   MCPLENS_CLICKHOUSE_DIR            state: config, data, logs, pid [/tmp/mcplens-clickhouse]
#   MCPLENS_CLICKHOUSE_PORT           native TCP port [19000]
#   MCPLENS_CLICKHOUSE_HTTP_PORT      HTTP port [PORT+1]
#   MCPLENS_CLICKHOUSE_DATABASE       database named in the printed DSN [mcplens]
#   MCPLENS_CLICKHOUSE_START_TIMEOUT  seconds to wait for /ping [60]
#   MCPLENS_CLICKHOUSE_STOP_TIMEOUT   seconds between SIGTERM and SIGKILL [30]
#   PYTHON                            interpreter with (or to get) chdb-core [python3]
set -euo pipefail

readonly CHDB_VERSION=26.9.0
readonly STATE=${MCPLENS_CLICKHOUSE_DIR:-/tmp/mcplens-clickhouse}
readonly PORT=${MCPLENS_CLICKHOUSE_PORT:-19000}
readonly HTTP_PORT=${MCPLENS_CLICKHOUSE_HTTP_PORT:-$((PORT + 1))}
readonly DATABASE=${MCPLENS_CLICKHOUSE_DATABASE:-mcplens}
readonly START_TIMEOUT=${MCPLENS_CLICKHOUSE_START_TIMEOUT:-60}
readonly STOP_TIMEOUT=${MCPLENS_CLICKHOUSE_STOP_TIMEOUT:-30}
readonly PY=${PYTHON:-python3}
readonly PIDFILE=$STATE/clickhouse.pid

log() { echo "clickhouse.sh: $*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# --- install ----------------------------------------------------------------

have_chdb() {
	"$PY" -c "import chdb, sys; sys.exit(chdb.__version__ != '$CHDB_VERSION')" 2>/dev/null
}

install() {
	if have_chdb; then
		log "chdb-core $CHDB_VERSION installed for $PY"
		return
	fi
	log "installing chdb-core==$CHDB_VERSION for $PY"
	# A Debian-managed python refuses plain installs (PEP 668).
	"$PY" -m pip install --quiet "chdb-core==$CHDB_VERSION" </dev/null >&2 ||
		"$PY" -m pip install --quiet --break-system-packages "chdb-core==$CHDB_VERSION" </dev/null >&2 ||
		die "pip install chdb-core==$CHDB_VERSION failed"
	have_chdb || die "chdb-core $CHDB_VERSION still not importable by $PY"
}

# --- process state ----------------------------------------------------------

# pid prints the server's pid if it is alive and really this state dir's server.
pid() {
	alive || return 1
	local p
	p=$(<"$PIDFILE")
	[[ $(tr '\0' ' ' <"/proc/$p/cmdline") == *"START LISTEN"*"$STATE/data"* ]] || return 1
	echo "$p"
}

# alive says whether the process of the pid file runs, whatever its command
# line: while the inner shell execs, /proc/PID/cmdline can read empty, so
# pid's check of it is no proof that the server exited during its start.
alive() {
	[[ -f $PIDFILE ]] || return 1
	local p state
	p=$(<"$PIDFILE")
	[[ $p =~ ^[0-9]+$ ]] && kill -0 "$p" 2>/dev/null || return 1
	state=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) || return 1
	[[ $state != Z ]]
}

running_ports() { cat "$STATE/ports" 2>/dev/null || echo "$PORT $HTTP_PORT"; }

ready() { curl -sf --max-time 2 "http://127.0.0.1:$1/ping" 2>/dev/null | grep -q '^Ok\.$'; }

port_in_use() { (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

print_env() {
	local tcp http
	read -r tcp http < <(running_ports)
	echo "CLICKHOUSE_DSN=clickhouse://default:@127.0.0.1:$tcp/$DATABASE"
	echo "CLICKHOUSE_HTTP_URL=http://127.0.0.1:$http"
}

# --- start ------------------------------------------------------------------

write_config() {
	mkdir -p "$STATE/data" "$STATE/logs"
	cat >"$STATE/config.xml" <<-EOF
		<!-- Written by deploy/clickhouse/clickhouse.sh on every start; edits are lost. -->
		<clickhouse>
		    <listen_host>127.0.0.1</listen_host>
		    <tcp_port>$PORT</tcp_port>
		    <http_port>$HTTP_PORT</http_port>
		    <users_config>users.xml</users_config>
		</clickhouse>
	EOF
	cat >"$STATE/users.xml" <<-'EOF'
		<!-- Written by deploy/clickhouse/clickhouse.sh: test users, loopback only. -->
		<clickhouse>
		    <profiles>
		        <default/>
		        <readonly><readonly>1</readonly></readonly>
		    </profiles>
		    <quotas><default/></quotas>
		    <users>
		        <default>
		            <password></password>
		            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
		            <profile>default</profile><quota>default</quota>
		            <access_management>1</access_management>
		        </default>
		        <mcplens>
		            <password>mcplens-test</password>
		            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
		            <profile>default</profile><quota>default</quota>
		        </mcplens>
		        <reader>
		            <password>reader-test</password>
		            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
		            <profile>readonly</profile><quota>default</quota>
		        </reader>
		    </users>
		</clickhouse>
	EOF
}

start() {
	local p
	if p=$(pid); then
		log "already running (pid $p)"
		print_env
		return
	fi
	install
	port_in_use "$PORT" && die "port $PORT is taken by another process; set MCPLENS_CLICKHOUSE_PORT"
	port_in_use "$HTTP_PORT" && die "HTTP port $HTTP_PORT is taken; set MCPLENS_CLICKHOUSE_HTTP_PORT"
	write_config
	echo "$PORT $HTTP_PORT" >"$STATE/ports"
	rm -f "$PIDFILE"
	local mark
	mark=$(stat -c %s "$STATE/logs/server.log" 2>/dev/null || echo 0)

	log "starting clickhouse (chdb-core $CHDB_VERSION) on 127.0.0.1:$PORT, HTTP $HTTP_PORT, state $STATE"
	# The listeners live as long as this one query runs; clickhouse-local
	# reads ./config.xml, so the server runs in the state dir. setsid
	# detaches it from the caller's process group; the inner shell writes
	# its own pid and execs python, so the pid file is the server's.
	# shellcheck disable=SC2016 # expanded by the inner shell
	setsid bash -c 'echo $$ >"$1"; cd "$2" || exit 1; shift 2; exec "$@"' _ "$PIDFILE" "$STATE" \
		"$PY" -c 'import sys; from chdb import _chdb; _chdb.query("SYSTEM START LISTEN TCP; SYSTEM START LISTEN HTTP; SELECT sleepEachRow(1) FROM numbers(100000000) FORMAT Null SETTINGS max_block_size=1", "TabSeparated", path=sys.argv[1])' \
		"$STATE/data" </dev/null >>"$STATE/logs/server.log" 2>&1 9>&- &

	local deadline=$((SECONDS + START_TIMEOUT))
	until [[ -s $PIDFILE ]] && pid >/dev/null && ready "$HTTP_PORT"; do
		if [[ -s $PIDFILE ]] && ! alive; then
			tail -c +"$((mark + 1))" "$STATE/logs/server.log" | tail -n 30 >&2
			die "clickhouse exited during startup (log $STATE/logs/server.log)"
		fi
		if ((SECONDS >= deadline)); then
			tail -c +"$((mark + 1))" "$STATE/logs/server.log" | tail -n 30 >&2
			stop >/dev/null 2>&1 || true
			die "clickhouse not ready on 127.0.0.1:$HTTP_PORT after ${START_TIMEOUT}s (log $STATE/logs/server.log)"
		fi
		sleep 0.2
	done
	log "ready (pid $(pid))"
	print_env
}

# --- stop, kill, status -----------------------------------------------------

stop() {
	local p signal=${1:-TERM}
	if ! p=$(pid); then
		log "not running"
		rm -f "$PIDFILE"
		return
	fi
	log "stopping (pid $p, SIG$signal)"
	kill "-$signal" "$p" 2>/dev/null || true
	local deadline=$((SECONDS + STOP_TIMEOUT))
	while pid >/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
	if pid >/dev/null; then
		log "still running after ${STOP_TIMEOUT}s, sending SIGKILL"
		kill -KILL "$p" 2>/dev/null || true
		while pid >/dev/null; do sleep 0.1; done
	fi
	rm -f "$PIDFILE"
	log "stopped"
}

status() {
	local p tcp http
	if ! p=$(pid); then
		echo "clickhouse: not running (state $STATE)"
		return 3
	fi
	read -r tcp http < <(running_ports)
	if ready "$http"; then
		echo "clickhouse: running, ready (pid $p, 127.0.0.1:$tcp, HTTP $http, state $STATE)"
	else
		echo "clickhouse: running, not ready (pid $p, 127.0.0.1:$tcp, HTTP $http, state $STATE)"
	fi
}

# lock serializes start, stop and restart on one state dir (fd 9, closed
# for the server so it does not hold the lock).
lock() {
	mkdir -p "$STATE"
	exec 9>"$STATE/.lock"
	flock -w 120 9 || die "lock $STATE/.lock: another clickhouse.sh is still busy"
}

case ${1:-} in
install) install ;;
start) lock && start ;;
stop) lock && stop ;;
kill) lock && stop KILL ;;
restart) lock && stop && start ;;
status) status ;;
*)
	echo "usage: $0 install|start|stop|kill|restart|status" >&2
	exit 2
	;;
esac
