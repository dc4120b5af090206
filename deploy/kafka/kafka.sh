#!/usr/bin/env bash
# kafka.sh runs a single-node Apache Kafka broker (KRaft, combined
# broker+controller) on 127.0.0.1 for mcplens tests and local work, from jars
# that Maven resolves from Maven Central (pom.xml beside this file).
#
# Usage: deploy/kafka/kafka.sh fetch|start|stop|restart|status
#
#   fetch    resolve Kafka and its runtime jars into the cache (once)
#   start    fetch if needed, format storage on first use, start the broker,
#            wait until it answers a metadata request, and print
#            MCPLENS_KAFKA_BROKERS=127.0.0.1:PORT on stdout; no-op if running
#   stop     SIGTERM, wait, then SIGKILL; the data dir is kept
#   restart  stop then start on the same data dir (broker-restart tests)
#   status   exit 0 if running (and say whether it is ready), 3 if not
#
# Progress goes to stderr, so `export "$(deploy/kafka/kafka.sh start)"` works.
#
# Environment (defaults in brackets):
#   MCPLENS_KAFKA_VERSION        Kafka version to fetch [4.4.0]
#   MCPLENS_CACHE                cache root [$HOME/.cache/mcplens]
#   MCPLENS_KAFKA_DIR            state: config, data, logs, pid [/tmp/mcplens-kafka]
#   MCPLENS_KAFKA_PORT           client port [9092]; the controller uses PORT+1
#   MCPLENS_KAFKA_HEAP           JVM max heap [512m]
#   MCPLENS_KAFKA_START_TIMEOUT  seconds to wait for readiness [120]
#   MCPLENS_KAFKA_STOP_TIMEOUT   seconds between SIGTERM and SIGKILL [30]
#   JAVA_HOME                    JDK 17+ to use [java on PATH]
set -euo pipefail

readonly VERSION=${MCPLENS_KAFKA_VERSION:-4.4.0}
readonly CACHE_ROOT=${MCPLENS_CACHE:-$HOME/.cache/mcplens}
readonly KAFKA_HOME=$CACHE_ROOT/kafka-$VERSION
readonly STATE=${MCPLENS_KAFKA_DIR:-/tmp/mcplens-kafka}
readonly PORT=${MCPLENS_KAFKA_PORT:-9092}
readonly CONTROLLER_PORT=$((PORT + 1))
readonly HEAP=${MCPLENS_KAFKA_HEAP:-512m}
readonly START_TIMEOUT=${MCPLENS_KAFKA_START_TIMEOUT:-120}
readonly STOP_TIMEOUT=${MCPLENS_KAFKA_STOP_TIMEOUT:-30}
readonly PIDFILE=$STATE/kafka.pid
readonly JAVA=${JAVA_HOME:+$JAVA_HOME/bin/}java
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly HERE

log() { echo "kafka.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

# --- fetch ------------------------------------------------------------------

fetch() {
	if [[ -f $KAFKA_HOME/.complete ]]; then
		log "kafka $VERSION cached in $KAFKA_HOME"
		return
	fi
	command -v mvn >/dev/null || die "mvn not found: install Maven (apt-get install maven)"
	mkdir -p "$CACHE_ROOT"
	rm -rf "$KAFKA_HOME" # an unfinished earlier fetch
	local tmp
	tmp=$(mktemp -d "$CACHE_ROOT/.kafka-$VERSION.XXXXXX")
	cp "$HERE/pom.xml" "$tmp/pom.xml"
	log "fetching kafka $VERSION and its runtime dependencies from Maven Central"
	if ! (cd "$tmp" && mvn -B -q -Dkafka.version="$VERSION" \
		dependency:copy-dependencies -DincludeScope=runtime \
		-DoutputDirectory="$tmp/libs" </dev/null >"$tmp/mvn.log" 2>&1); then
		tail -n 40 "$tmp/mvn.log" >&2
		rm -rf "$tmp"
		die "fetch kafka $VERSION: mvn failed (output above)"
	fi
	local jar
	for jar in "kafka_2.13-$VERSION.jar" "kafka-clients-$VERSION.jar" log4j-core-*.jar; do
		compgen -G "$tmp/libs/$jar" >/dev/null || { rm -rf "$tmp"; die "fetch kafka $VERSION: $jar missing"; }
	done
	touch "$tmp/.complete"
	# A concurrent fetch may have won the race; either copy is complete.
	mv -T "$tmp" "$KAFKA_HOME" 2>/dev/null || rm -rf "$tmp"
	log "kafka $VERSION ready in $KAFKA_HOME ($(find "$KAFKA_HOME/libs" -name '*.jar' | wc -l) jars)"
}

# --- process state ----------------------------------------------------------

# pid prints the broker's pid if it is alive and really our broker.
pid() {
	alive || return 1
	local p
	p=$(<"$PIDFILE")
	[[ $(tr '\0' ' ' <"/proc/$p/cmdline") == *kafka.Kafka* ]] || return 1
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

running_port() { cat "$STATE/port" 2>/dev/null || echo "$PORT"; }

# ready sends a Kafka Metadata request (v4, all topics) and succeeds when the
# broker answers with our correlation id and at least one live broker.
ready() {
	local port=$1 reply
	# shellcheck disable=SC2016 # expanded by the inner shell
	reply=$(timeout 5 bash -c '
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		# size=22 | api_key=3 | version=4 | correlation_id=7 | client_id="mcplens"
		# | topics=null | allow_auto_topic_creation=false
		printf "\x00\x00\x00\x16\x00\x03\x00\x04\x00\x00\x00\x07\x00\x07mcplens\xff\xff\xff\xff\x00" >&3
		head -c 16 <&3 | od -An -tu1 -v
	' _ "$port" 2>/dev/null) || return 1
	# size(4) correlation_id(4) throttle_time_ms(4) broker_count(4)
	local -a b
	read -r -a b <<<"$reply"
	((${#b[@]} == 16)) || return 1
	((b[4] == 0 && b[5] == 0 && b[6] == 0 && b[7] == 7)) || return 1
	(((b[12] << 24 | b[13] << 16 | b[14] << 8 | b[15]) > 0))
}

port_in_use() { (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# log_mark records the log sizes before a start, so log_tail shows only
# what that start wrote.
declare -A LOG_MARK=()
log_mark() {
	local f
	for f in "$STATE/logs/server.log" "$STATE/logs/stdout.log"; do
		LOG_MARK[$f]=$(stat -c %s "$f" 2>/dev/null || echo 0)
	done
}

log_tail() {
	local f new
	for f in "$STATE/logs/server.log" "$STATE/logs/stdout.log"; do
		new=$(tail -c +"$((${LOG_MARK[$f]:-0} + 1))" "$f" 2>/dev/null | tail -n 30)
		[[ -n $new ]] || continue
		printf -- '--- last lines of %s\n%s\n' "$f" "$new" >&2
	done
}

# --- start ------------------------------------------------------------------

write_config() {
	mkdir -p "$STATE/data" "$STATE/logs"
	cat >"$STATE/server.properties" <<-EOF
		# Written by deploy/kafka/kafka.sh on every start; edits are lost.
		process.roles=broker,controller
		node.id=1
		controller.quorum.voters=1@127.0.0.1:$CONTROLLER_PORT
		listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
		advertised.listeners=PLAINTEXT://127.0.0.1:$PORT
		controller.listener.names=CONTROLLER
		inter.broker.listener.name=PLAINTEXT
		listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
		log.dirs=$STATE/data
		num.partitions=1
		default.replication.factor=1
		auto.create.topics.enable=true
		delete.topic.enable=true
		offsets.topic.replication.factor=1
		offsets.topic.num.partitions=1
		transaction.state.log.replication.factor=1
		transaction.state.log.min.isr=1
		share.coordinator.state.topic.replication.factor=1
		share.coordinator.state.topic.min.isr=1
		group.initial.rebalance.delay.ms=0
		num.network.threads=2
		num.io.threads=2
		log.retention.hours=24
	EOF
	cat >"$STATE/log4j2.properties" <<-EOF
		status = warn
		appender.file.type = RollingFile
		appender.file.name = file
		appender.file.fileName = $STATE/logs/server.log
		appender.file.filePattern = $STATE/logs/server.log.%i
		appender.file.layout.type = PatternLayout
		appender.file.layout.pattern = [%d] %p %m (%c)%n
		appender.file.policies.type = Policies
		appender.file.policies.size.type = SizeBasedTriggeringPolicy
		appender.file.policies.size.size = 20MB
		appender.file.strategy.type = DefaultRolloverStrategy
		appender.file.strategy.max = 3
		rootLogger.level = info
		rootLogger.appenderRef.file.ref = file
	EOF
}

java_opts() {
	printf '%s\n' "-Xms128m" "-Xmx$HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
		-XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true \
		"-Dlog4j2.configurationFile=$STATE/log4j2.properties" \
		"-Dkafka.logs.dir=$STATE/logs" -cp "$KAFKA_HOME/libs/*"
}

format_storage() {
	[[ -f $STATE/data/meta.properties ]] && return
	local id opts
	# A base64url UUID, redrawn if it starts with '-' (as Kafka's own
	# Uuid.randomUuid does) so it cannot be read as an option.
	id=-
	while [[ $id == -* ]]; do
		id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
	done
	log "formatting KRaft storage in $STATE/data (cluster $id)"
	mapfile -t opts < <(java_opts)
	if ! "$JAVA" "${opts[@]}" kafka.tools.StorageTool format \
		--cluster-id "$id" --config "$STATE/server.properties" --ignore-formatted \
		</dev/null >"$STATE/logs/format.log" 2>&1; then
		cat "$STATE/logs/format.log" >&2
		die "format storage in $STATE/data: failed (output above)"
	fi
}

start() {
	local p
	if p=$(pid); then
		log "already running (pid $p)"
		echo "MCPLENS_KAFKA_BROKERS=127.0.0.1:$(running_port)"
		return
	fi
	command -v "$JAVA" >/dev/null || die "java not found: install a JDK 17+ or set JAVA_HOME"
	fetch
	port_in_use "$PORT" && die "port $PORT is taken by another process; set MCPLENS_KAFKA_PORT"
	port_in_use "$CONTROLLER_PORT" && die "controller port $CONTROLLER_PORT is taken; set MCPLENS_KAFKA_PORT"
	write_config
	format_storage
	echo "$PORT" >"$STATE/port"
	rm -f "$PIDFILE"

	local opts
	mapfile -t opts < <(java_opts)
	log_mark
	log "starting kafka $VERSION on 127.0.0.1:$PORT (controller $CONTROLLER_PORT, state $STATE)"
	# setsid detaches from the caller's session and process group; the inner
	# shell writes its own pid and execs java, so the pid file is java's.
	# shellcheck disable=SC2016 # expanded by the inner shell
	setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$PIDFILE" \
		"$JAVA" "${opts[@]}" kafka.Kafka "$STATE/server.properties" \
		</dev/null >>"$STATE/logs/stdout.log" 2>&1 9>&- &

	local deadline=$((SECONDS + START_TIMEOUT))
	until [[ -s $PIDFILE ]] && pid >/dev/null && ready "$PORT"; do
		if [[ -s $PIDFILE ]] && ! alive; then
			log_tail
			die "kafka exited during startup (logs in $STATE/logs)"
		fi
		if ((SECONDS >= deadline)); then
			log_tail
			stop >/dev/null 2>&1 || true
			die "kafka not ready on 127.0.0.1:$PORT after ${START_TIMEOUT}s (logs in $STATE/logs)"
		fi
		sleep 0.5
	done
	log "ready (pid $(pid))"
	echo "MCPLENS_KAFKA_BROKERS=127.0.0.1:$PORT"
}

# --- stop, status -----------------------------------------------------------

stop() {
	local p
	if ! p=$(pid); then
		log "not running"
		rm -f "$PIDFILE"
		return
	fi
	log "stopping (pid $p)"
	kill -TERM "$p" 2>/dev/null || true
	local deadline=$((SECONDS + STOP_TIMEOUT))
	while pid >/dev/null && ((SECONDS < deadline)); do sleep 0.3; done
	if pid >/dev/null; then
		log "still running after ${STOP_TIMEOUT}s, sending SIGKILL"
		kill -KILL "$p" 2>/dev/null || true
		while pid >/dev/null; do sleep 0.1; done
	fi
	rm -f "$PIDFILE"
	log "stopped"
}

status() {
	local p port
	if ! p=$(pid); then
		echo "kafka: not running (state $STATE)"
		return 3
	fi
	port=$(running_port)
	if ready "$port"; then
		echo "kafka: running, ready (pid $p, 127.0.0.1:$port, state $STATE)"
	else
		echo "kafka: running, not ready (pid $p, 127.0.0.1:$port, state $STATE)"
	fi
}

# lock serializes start, stop and restart on one state dir (fd 9, closed
# for the broker so it does not hold the lock).
lock() {
	mkdir -p "$STATE"
	exec 9>"$STATE/.lock"
	flock -w 300 9 || die "lock $STATE/.lock: another kafka.sh is still busy"
}

case ${1:-} in
fetch) fetch ;;
start) lock && start ;;
stop) lock && stop ;;
restart) lock && stop && start ;;
status) status ;;
*)
	echo "usage: $0 fetch|start|stop|restart|status" >&2
	exit 2
	;;
esac
