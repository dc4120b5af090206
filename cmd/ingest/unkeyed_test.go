package main

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mcplens/mcplens/internal/loadgen"
	"github.com/mcplens/mcplens/internal/metricstest"
	"github.com/mcplens/mcplens/pipeline/kafkatest"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store/duckstore"
)

// TestUnkeyedKillsMatchTruth: production-shaped traffic, 30% also logged
// by the client, on three partitions of the real broker with no key (as a
// sticky producer writes lines without a session), into DuckDB. The
// ingester is SIGKILLed twice while it catches up, and restarted each
// time from the committed offsets and the stored state. What the store
// holds must be the generator's truth: every call one record, its views
// merged. Before, the events held at the kill were read again against the
// event time the state gave back, newer than theirs: each view read again
// was released at once, before its other view came from another
// partition, and 76 of 31,000 calls were stored as the client's view
// alone (the gateway's record, of the same exchange id, then skipped).
// Clients give up on 30% of the slow calls and send them again while they
// run, so re-sends stored before a kill name attempts released after it;
// the retry links (retry_of, attempt) must be the truth's but for at most
// 1% of the re-sends: read from unkeyed partitions, with or without kills
// and give-ups, a few re-sends still miss their earlier attempt (13 of
// 3,506; 21 before an attempt released after its re-send kept its own
// retry_of): in the in-memory harness every such miss is among the last
// calls of the load, where a later attempt's client view released apart
// took the chain's place first (README, "Held events"). Without the index of unreleased
// calls 1,463 of the 3,506 miss it.
func TestUnkeyedKillsMatchTruth(t *testing.T) {
	truth, stored := unkeyedKills(t, 3, loadgen.Config{Seed: 101, Calls: 30_000, ClientShare: 0.3, GiveUpShare: 0.3}, 4*time.Second, 9*time.Second)
	byReq := map[string]schema.Exchange{}
	for _, x := range stored {
		byReq[x.RequestEventID] = x
	}
	wrong, resent := 0, 0
	for _, e := range truth.Calls {
		x, ok := byReq[e.RequestEventID]
		if !ok {
			continue
		}
		want := ""
		if e.RetryOf != "" {
			resent++
			want = byReq[e.RetryOf].ExchangeID
		}
		if x.RetryOf != want || (e.RetryOf != "" && x.Attempt != e.Attempt) {
			wrong++
			if wrong <= 5 {
				t.Logf("retry link of %s: retry_of %q attempt %d, want %q %d", x.ExchangeID, x.RetryOf, x.Attempt, want, e.Attempt)
			}
		}
	}
	t.Logf("%d of %d re-sent calls linked otherwise than the truth says", wrong, resent)
	if resent < 1000 || wrong*100 > resent {
		t.Errorf("%d of %d re-sent calls linked otherwise than the truth says: want at most 1%%", wrong, resent)
	}
}

// waitDrained waits until the group has committed every one of lines and
// the ingester at metrics has nothing waiting to merge or to be stored,
// for two seconds on end (the gauges are set at each flush).
func waitDrained(t *testing.T, metrics string, lines int, committed func() int64) {
	t.Helper()
	since := time.Time{}
	waitFor(t, "every line committed, nothing waiting to merge", 180*time.Second, func() bool {
		m := metricstest.Sums(metrics)
		if committed() != int64(lines) || m == nil || m["mcplens_ingest_merge_waiting"] != 0 || m["mcplens_ingest_pending"] != 0 {
			since = time.Time{}
			return false
		}
		if since.IsZero() {
			since = time.Now()
		}
		return time.Since(since) > 2*time.Second
	})
}

// matchTruth fails unless stored is the truth: every call one record of
// its outcome, nothing else. A request never answered whose pair window
// had not passed at the stop is in the stored state (waiting says whether
// its event is), not lost: the next run emits it.
func matchTruth(t *testing.T, truth *loadgen.Truth, stored []schema.Exchange, waiting func(eventID string) bool) {
	t.Helper()
	r := truth.Tally(stored, loadgen.DefaultStart)
	got := map[string]bool{}
	for _, x := range stored {
		got[x.RequestEventID] = true
	}
	held := 0
	for _, e := range truth.Calls {
		if got[e.RequestEventID] {
			continue
		}
		if e.Outcome == "NO_RESPONSE" && waiting(e.RequestEventID) {
			held++
		} else {
			t.Logf("lost: %+v", e)
		}
	}
	r.Lost -= held
	t.Logf("%d records for %d calls, %d unanswered requests still waiting: %+v", len(stored), truth.Exchanges, held, r)
	if r != (loadgen.Tally{}) || len(stored)+held != truth.Exchanges {
		t.Errorf("%d records, %+v: want the truth, every call once", len(stored), r)
	}
}

// TestManyPartitionsMatchTruth: the same shape on 24 unkeyed partitions,
// as an ingester that owns many partitions reads them: the Kafka source
// picks among 24 buffers filled by 24 readers, and the correlator releases
// 24 streams, passing over those with nothing due. SIGKILLed once while it
// catches up, the store must hold the generator's truth.
func TestManyPartitionsMatchTruth(t *testing.T) {
	unkeyedKills(t, 24, loadgen.Config{Seed: 241, Calls: 20_000, ClientShare: 0.3}, 5*time.Second)
}

// unkeyedKills produces cfg's traffic on partitions unkeyed partitions of
// the real broker, ingests it into DuckDB with a SIGKILL the given time
// after each first commit and a restart from the stored state, then a
// last run until everything is committed and stored. It fails unless the
// store holds the truth (matchTruth), and returns the truth and the
// stored records.
func unkeyedKills(t *testing.T, partitions int, cfg loadgen.Config, kills ...time.Duration) (*loadgen.Truth, []schema.Exchange) {
	t.Helper()
	brokers := kafkatest.Brokers(t)
	topic, truth, lines := kafkatest.UnkeyedLoad(t, brokers, partitions, cfg)

	db := filepath.Join(t.TempDir(), "unkeyed.duckdb")
	group := "unkeyed-" + topic
	metrics := fmt.Sprintf("127.0.0.1:%d", kafkatest.FreePortPair(t))
	args := []string{"--from", fmt.Sprintf("kafka://%s/%s?group=%s", brokers, topic, group), "--to", "duckdb:" + db,
		"--listen", metrics, "--pair-window", "40s"}
	committed := func() int64 {
		n, err := kafkatest.Committed(brokers, group, topic)
		if err != nil {
			return -1
		}
		return n
	}
	for _, after := range kills {
		p := startIngest(t, args...)
		waitFor(t, "a first commit", 120*time.Second, func() bool { return committed() > 0 })
		time.Sleep(after)
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
	}
	last := startIngest(t, args...)
	waitDrained(t, metrics, lines, committed)
	if err := last.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := last.cmd.Wait(); err != nil {
		t.Fatalf("graceful stop: %v\n%s", err, last.stderr)
	}

	store, err := duckstore.OpenReadOnly(context.Background(), db, duckstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rows, err := store.DB().QueryContext(context.Background(), `SELECT exchange_id, request_event_id, outcome, sources, ts, end_ts, retry_of, attempt FROM exchanges`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var stored []schema.Exchange
	for rows.Next() {
		var x schema.Exchange
		var sources []any
		if err := rows.Scan(&x.ExchangeID, &x.RequestEventID, &x.Outcome, &sources, &x.TS, &x.EndTS, &x.RetryOf, &x.Attempt); err != nil {
			t.Fatal(err)
		}
		for _, s := range sources {
			x.Sources = append(x.Sources, fmt.Sprint(s))
		}
		stored = append(stored, x)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	matchTruth(t, truth, stored, func(id string) bool {
		var n int
		if err := store.DB().QueryRow(`SELECT count(*) FROM ingest_waiting WHERE event_id = $1`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	})
	return truth, stored
}
