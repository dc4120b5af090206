#!/bin/sh
# produce-sample.sh writes a contract-v1 NDJSON corpus to a Kafka topic, one
# event per message, keyed by session_id (else exchange_id, else event_id)
# so that both halves of an exchange and a session's retries reach the same
# partition. POSIX sh and sed: it runs in the apache/kafka image (busybox).
#
# Environment: KAFKA_BOOTSTRAP (host:port), KAFKA_TOPIC, CORPUS (the NDJSON
# file), KAFKA_BIN (directory of kafka-console-producer.sh, default
# /opt/kafka/bin).
set -eu
: "${KAFKA_BOOTSTRAP:?}" "${KAFKA_TOPIC:?}" "${CORPUS:?}"
KAFKA_BIN=${KAFKA_BIN:-/opt/kafka/bin}

# key|event: the top-level "session_id":"…" (inside bodies quotes are
# escaped, so only the event's own field matches), else exchange_id, else
# event_id, else "-". Blank lines are skipped.
keyed() {
	sed -n \
		-e '/^[[:space:]]*$/d' \
		-e '/"session_id":"[^"]/{s/^\(.*"session_id":"\([^"]*\)".*\)$/\2|\1/p;d;}' \
		-e '/"exchange_id":"[^"]/{s/^\(.*"exchange_id":"\([^"]*\)".*\)$/\2|\1/p;d;}' \
		-e '/"event_id":"[^"]/{s/^\(.*"event_id":"\([^"]*\)".*\)$/\2|\1/p;d;}' \
		-e 's/^/-|/p' \
		"$CORPUS"
}

count=$(keyed | wc -l)
echo "producing $count events from $CORPUS to $KAFKA_TOPIC at $KAFKA_BOOTSTRAP" >&2
keyed | "$KAFKA_BIN/kafka-console-producer.sh" \
	--bootstrap-server "$KAFKA_BOOTSTRAP" \
	--topic "$KAFKA_TOPIC" \
	--producer-property max.request.size=4194304 \
	--property parse.key=true \
	--property key.separator='|'
echo "done" >&2
