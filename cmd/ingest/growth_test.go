package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/internal/loadgen"
	"github.com/mcplens/mcplens/internal/metricstest"
	"github.com/mcplens/mcplens/pipeline/kafkatest"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
)

// TestSlowClickHouseGrowsAndKillsMatchTruth: production-shaped traffic on
// three unkeyed partitions of the real broker, into the real ClickHouse
// server while it holds every insert into exchanges and exchange_bodies
// back by at least 300 ms (parts_to_delay_insert 1, as a server that is
// behind on its merges does). The next batch grows past --batch-size
// while each write is in flight (up to the default --batch-max-size and
// --batch-max-bytes), and the ingester is SIGKILLed twice while it
// catches up (right after its first commit, and a second after its first
// write), and restarted from the committed offsets and the stored state
// each time. The store must hold the generator's truth, every call once,
// and some acknowledged write must have held more than twice
// --batch-size rows (mcplens_ingest_sink_batch_rows).
func TestSlowClickHouseGrowsAndKillsMatchTruth(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	dsn, db := clickhousetest.NewDatabase(t, clickhousetest.DSN(t))
	web := clickhousetest.HTTPURL(t)
	query := func(stmt string) string { return clickhousetest.Query(t, web, stmt) }
	topic, truth, lines := kafkatest.UnkeyedLoad(t, brokers, 3, loadgen.Config{Seed: 303, Calls: 30_000, ClientShare: 0.1})

	// Migrate first (no TTL: the load's dates are fixed, today moves on),
	// then slow the two large tables' inserts down.
	empty := filepath.Join(t.TempDir(), "empty.ndjson")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	mig := startIngest(t, "--from", "file:"+empty, "--to", dsn, "--listen", "", "--migrate", "--clickhouse-ttl", "0", "--clickhouse-body-ttl", "0")
	if err := mig.cmd.Wait(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, mig.stderr)
	}
	for _, table := range []string{"exchanges", "exchange_bodies"} {
		query("ALTER TABLE " + db + "." + table + " MODIFY SETTING parts_to_delay_insert = 1, min_delay_to_insert_ms = 300")
	}

	const batchSize = 1000
	group := "grow-" + topic
	metrics := fmt.Sprintf("127.0.0.1:%d", kafkatest.FreePortPair(t))
	args := []string{"--from", fmt.Sprintf("kafka://%s/%s?group=%s", brokers, topic, group), "--to", dsn,
		"--listen", metrics, "--pair-window", "40s", "--batch-size", strconv.Itoa(batchSize)}
	committed := func() int64 {
		n, err := kafkatest.Committed(brokers, group, topic)
		if err != nil {
			return -1
		}
		return n
	}
	writes := map[string]int{}
	scrape := func() {
		for le, n := range batchRows(metrics) {
			writes[le] += n
		}
	}
	for i, after := range []time.Duration{0, time.Second} {
		p := startIngest(t, args...)
		waitFor(t, "a commit", 120*time.Second, func() bool {
			return committed() > 0 && (i == 0 || metricstest.Sums(metrics)["mcplens_ingest_sink_batch_rows_count"] > 0)
		})
		time.Sleep(after)
		scrape()
		at := committed()
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
		if at >= int64(lines) {
			t.Fatalf("kill %d came after every line was committed (%d): it proves nothing", i+1, at)
		}
		t.Logf("kill %d at %d of %d lines committed", i+1, at, lines)
	}
	last := startIngest(t, args...)
	waitDrained(t, metrics, lines, committed)
	scrape()
	if err := last.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := last.cmd.Wait(); err != nil {
		t.Fatalf("graceful stop: %v\n%s", err, last.stderr)
	}
	// Without the growth (--batch-max-size at --batch-size), all 68 writes
	// of a run held at most 2,048 rows (--batch-size and what one line
	// released on top); with it, 3 of 14-16 held more in each run.
	t.Logf("acknowledged writes by rows (at most): %v", writes)
	if grown := writes["+Inf"] - writes["2048"]; grown == 0 {
		t.Errorf("none of %d writes held more than 2,048 rows: the batches did not grow while the slow store wrote", writes["+Inf"])
	}

	// FINAL: a row stored again whole (a batch re-sent after a kill, its
	// token past the dedup window) is one row to every reader.
	out := query("SELECT exchange_id, request_event_id, outcome, sources, toUnixTimestamp64Milli(ts) AS ts_ms, toUnixTimestamp64Milli(end_ts) AS end_ms FROM " + db + ".exchanges FINAL FORMAT JSONEachRow")
	var stored []schema.Exchange
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r struct {
			ExchangeID     string   `json:"exchange_id"`
			RequestEventID string   `json:"request_event_id"`
			Outcome        string   `json:"outcome"`
			Sources        []string `json:"sources"`
			TS             int64    `json:"ts_ms"`
			EndTS          int64    `json:"end_ms"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		x := schema.Exchange{ExchangeID: r.ExchangeID, RequestEventID: r.RequestEventID, Sources: r.Sources, TS: time.UnixMilli(r.TS).UTC(), EndTS: time.UnixMilli(r.EndTS).UTC()}
		x.Outcome = classify.Outcome(r.Outcome)
		stored = append(stored, x)
	}
	waiting := map[string]bool{}
	for _, id := range strings.Fields(query("SELECT event_id FROM " + db + ".ingest_waiting WHERE (stream, stream_offset, event_id) NOT IN (SELECT stream, stream_offset, event_id FROM " + db + ".ingest_released) FORMAT TabSeparated")) {
		waiting[id] = true
	}
	matchTruth(t, truth, stored, func(id string) bool { return waiting[id] })
}

// batchRows scrapes an ingester's mcplens_ingest_sink_batch_rows: per
// bucket bound, how many acknowledged writes held at most that many rows
// ("+Inf": all of them).
func batchRows(addr string) map[string]int {
	out := map[string]int{}
	resp, err := http.Get("http://" + addr + "/metrics") //nolint:noctx // a test's short scrape of a local port
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, v, _ := strings.Cut(sc.Text(), " ")
		if le, ok := strings.CutPrefix(name, `mcplens_ingest_sink_batch_rows_bucket{le="`); ok {
			n, _ := strconv.ParseFloat(v, 64)
			out[strings.TrimSuffix(le, `"}`)] = int(n)
		}
	}
	return out
}
