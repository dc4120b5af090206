package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/internal/demo"
	"github.com/mcplens/mcplens/pipeline/kafkatest"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store/chstore"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
)

// TestTapKafkaIngestClickHouseUnderFaults is TestTapKafkaIngestAPIUnderFaults
// on the production store: the demo traffic through the tap into Kafka and
// cmd/ingest into a real ClickHouse server, while the ingester is
// SIGKILLed and restarted, the server is SIGKILLed mid-ingest and
// restarted on its data directory, and a poison message is produced.
// With merges stopped the server holds every recorded exchange exactly
// once and the poison message in quarantine, and cmd/api over the server
// answers the headline questions.
func TestTapKafkaIngestClickHouseUnderFaults(t *testing.T) {
	b := kafkatest.StartBroker(t)
	srv := clickhousetest.Start(t)
	topic := "e2e-mcp-ch"
	ctx := context.Background()

	// The schema first, so that merges (which would hide a doubled row)
	// stay stopped from the first insert on, and again after a restart.
	st, err := chstore.Open(ctx, srv.DSN(), chstore.DefaultConfig(), zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := schema.DefaultOptions()
	opts.TTL, opts.BodyTTL = 0, 0 // the corpus has fixed dates: a TTL counted from today would delete it
	err = st.Migrate(ctx, opts)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"exchanges", "quarantine"} {
		srv.Query(t, "ALTER TABLE mcplens."+table+" MODIFY SETTING max_bytes_to_merge_at_max_space_in_pool = 1, max_bytes_to_merge_at_min_space_in_pool = 1")
	}
	stopMerges := func() {
		srv.Query(t, "SYSTEM STOP MERGES mcplens.exchanges")
		srv.Query(t, "SYSTEM STOP MERGES mcplens.quarantine")
	}
	stopMerges()

	tap, tapAddr := startTap(t, b.Addr, topic)

	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ingestArgs := ingestFlags(b.Addr, topic, "e2e-ch", metricsAddr, "--to", srv.DSN(), "--migrate", "--clickhouse-ttl", "0", "--clickhouse-body-ttl", "0", "--clickhouse-retry-attempts", "2")
	say := func(string, ...any) {}

	stored := func() int {
		out, err := clickhousetest.QueryHTTP(srv.HTTPURL(), "SELECT count() FROM mcplens.exchanges")
		n, _ := strconv.Atoi(strings.TrimSpace(out))
		if err != nil {
			return -1
		}
		return n
	}
	// Round 1, then a SIGKILL of the ingester as soon as its first rows
	// are in: often between a batch's rows and its marks.
	roundThenKill(t, tapAddr, ingestArgs, func() bool { return stored() > 0 })

	// Round 2 under a fresh ingester, with the server SIGKILLed as soon
	// as it has stored some of it; restarted once the ingester has seen
	// its writes fail.
	before := stored()
	ing := start(t, "ingest", ingestArgs...)
	if err := demo.Drive(ctx, "http://"+tapAddr, say); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the round's first rows on the server", 60*time.Second, func() bool { return stored() > before }, ing)
	srv.Kill(t)
	// The ingester sees the server gone either on a write or, when the
	// kill comes while it starts, on loading its state.
	waitFor(t, "failed sink writes", 60*time.Second, func() bool {
		tail := ing.tail()
		return strings.Contains(tail, "sink write failed") || strings.Contains(tail, "load ingest state failed")
	}, ing)
	srv.Restart(t)
	stopMerges()

	// A poison message, then round 3.
	kafkatest.ProduceRecords(t, b.Addr, topic, kafkatest.Record{Value: []byte(`{"poison": true`)})
	if err := demo.Drive(ctx, "http://"+tapAddr, say); err != nil {
		t.Fatal(err)
	}
	recorded := drainAndStop(t, b.Addr, topic, tap, ing, metricsAddr, 120*time.Second)

	counts := strings.Fields(srv.Query(t, "SELECT count(), uniqExact(exchange_id) FROM mcplens.exchanges"))
	if want := strconv.FormatInt(recorded, 10); len(counts) != 2 || counts[0] != want || counts[1] != want {
		stored := map[string]bool{}
		for _, id := range strings.Fields(srv.Query(t, "SELECT exchange_id FROM mcplens.exchanges")) {
			stored[id] = true
		}
		t.Errorf("the server holds %v (rows, distinct exchanges) for %d recorded events, want each once; not stored:\n%s\nstored twice (exchange, parts):\n%s\nparts:\n%s",
			counts, recorded, notStored(t, b.Addr, topic, func(id string) bool { return stored[id] }),
			srv.Query(t, "SELECT exchange_id, outcome, groupArray(_part) FROM mcplens.exchanges GROUP BY exchange_id, outcome HAVING count() > 1 ORDER BY exchange_id"),
			srv.Query(t, "SELECT name, rows, modification_time FROM system.parts WHERE database = 'mcplens' AND table = 'exchanges' AND active ORDER BY name"))
	}
	if q := strings.Fields(srv.Query(t, "SELECT count(), countIf(position(raw, 'poison') > 0) FROM mcplens.quarantine")); len(q) != 2 || q[0] != "1" || q[1] != "1" {
		t.Errorf("quarantine holds %v (rows, poison rows), want exactly the poison message", q)
	}

	checkHeadlines(t, srv.DSN())
}
