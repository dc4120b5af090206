package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"

	"github.com/mcplens/mcplens/api"
	"github.com/mcplens/mcplens/api/apitest"
	"github.com/mcplens/mcplens/internal/metricstest"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/kafkatest"
	"github.com/mcplens/mcplens/pipeline/pipelinetest"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/redact"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store/chstore"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
	"github.com/mcplens/mcplens/store/duckstore"
)

// envInt reads a positive integer from the environment, else def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// chaosLines is a production-shaped corpus with the faults of issue 12
// mixed in: 2% of lines sent again later, poison lines, invalid UTF-8 in
// a text field, and tokens in bodies.
func chaosLines(n int, span time.Duration, seed uint64) (keys, lines [][]byte) {
	// An hour ago: within every store's retention (ClickHouse drops rows
	// past its TTL), and the same traffic for a seed.
	c, _ := pipelinetest.Production(pipelinetest.Shape{Exchanges: n, Span: span, Seed: seed,
		Start: time.Now().UTC().Add(-time.Hour).Truncate(time.Hour)})
	rng := rand.New(rand.NewPCG(seed, 99))
	for i, l := range c.Lines {
		if i%50 == 7 { // a token a logger left in a body
			l = []byte(strings.Replace(string(l), `\"key\":\"k`, `\"auth\":\"authorization: bearer chaos-secret-token-0123456789\",\"key\":\"k`, 1))
		}
		keys, lines = append(keys, c.Keys[i]), append(lines, l)
		switch r := rng.IntN(1000); {
		case r < 20 && i > 10: // re-sent: an earlier line again
			j := i - 1 - rng.IntN(min(i, 200))
			keys, lines = append(keys, c.Keys[j]), append(lines, c.Lines[j])
		case r < 21:
			keys, lines = append(keys, c.Keys[i]), append(lines, []byte(`{"poison": "not a contract event`))
		case r < 22:
			// A raw 0xFF byte in a text field (a raw string would
			// hold the four characters \xff, a JSON escape the
			// decoder keeps as text).
			keys, lines = append(keys, c.Keys[i]), append(lines, fmt.Appendf(nil,
				`{"event_id":"bad-%d","ts":"2026-11-02T10:00:00Z","kind":"exchange","source":"gateway","server":"k`+"\xff"+`v","http.method":"POST","http.status":200,"request_body":"","response_body":""}`, i))
		}
	}
	return keys, lines
}

// TestChaos produces production-shaped traffic at a fixed rate into a
// 6-partition topic on a broker of its own while ingesters are SIGKILLed
// and restarted and the broker restarted; then it compares what the store
// holds with the ground truth read back from the topic: nothing lost,
// nothing doubled, every bad line quarantined, no secret stored.
//
// On DuckDB (one writer per file) one ingester is killed twice. On the
// real ClickHouse server the group scales out: a second and a third
// ingester join, the second is SIGKILLed and added back, the broker
// restarts, the third leaves. CHAOS_SECONDS (default 30) and CHAOS_RATE
// (events/s, default 500) set its size; `make chaos` runs a long form.
func TestChaos(t *testing.T) {
	t.Run("duckdb", func(t *testing.T) { chaos(t, "duckdb") })
	t.Run("clickhouse", func(t *testing.T) { chaos(t, "clickhouse") })
}

// chaosStore is where a chaos run's ingesters write and how its contents
// are counted.
type chaosStore struct {
	to      string
	migrate bool
	// requests counts, per request event id, the distinct stored contents
	// (exchange id, outcome, response) of the exchanges that hold it: a
	// replay of the same row is what readers collapse, two contents are
	// a double.
	requests func() map[string]int
	// counts are the distinct exchanges, quarantined positions and bodies
	// that hold the planted token.
	counts func() (stored, quarantined, secrets int)
	// explain says what the store holds of a lost request (nil: nothing).
	explain func(id string) string
	// open opens the store for reading, as cmd/api does.
	open func() readStore
}

// readStore is a store cmd/api reads.
type readStore interface {
	queries.Store
	Close() error
}

func newChaosStore(t *testing.T, engine string) chaosStore {
	if engine == "duckdb" {
		db := filepath.Join(t.TempDir(), "chaos.duckdb")
		open := func() *duckstore.Store {
			store, err := duckstore.OpenReadOnly(context.Background(), db, duckstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return store
		}
		return chaosStore{to: "duckdb:" + db,
			open: func() readStore { return open() },
			requests: func() map[string]int {
				store := open()
				defer store.Close()
				got := map[string]int{}
				rows, err := store.DB().QueryContext(context.Background(), `SELECT request_event_id FROM exchanges`)
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				for rows.Next() {
					var id string
					if err := rows.Scan(&id); err != nil {
						t.Fatal(err)
					}
					got[id]++
				}
				if err := rows.Err(); err != nil {
					t.Fatal(err)
				}
				return got
			},
			counts: func() (stored, quarantined, secrets int) {
				store := open()
				defer store.Close()
				if err := store.DB().QueryRowContext(context.Background(), `SELECT (SELECT count(*) FROM exchanges), (SELECT count(*) FROM quarantine),
					(SELECT count(*) FROM exchange_bodies WHERE contains(CAST(request_body AS VARCHAR), $1))`, "chaos-secret-token").Scan(&stored, &quarantined, &secrets); err != nil {
					t.Fatal(err)
				}
				return stored, quarantined, secrets
			}}
	}
	dsn, db := clickhousetest.NewDatabase(t, clickhousetest.DSN(t))
	web := clickhousetest.HTTPURL(t)
	query := func(stmt string) string { return clickhousetest.Query(t, web, stmt) }
	return chaosStore{to: dsn, migrate: true,
		open: func() readStore {
			s, err := chstore.Open(context.Background(), dsn, chstore.DefaultConfig(), zerolog.Nop(), nil)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		explain: func(id string) string {
			return query("SELECT 'waiting', stream, stream_offset, written_at FROM "+db+".ingest_waiting WHERE event_id = '"+id+"' UNION ALL "+
				"SELECT 'released', stream, stream_offset, written_at FROM "+db+".ingest_released WHERE event_id = '"+id+"' UNION ALL "+
				"SELECT 'exchange ' || exchange_id || ' ' || outcome || ' resp=' || response_event_id, '', 0, now() FROM "+db+".exchanges WHERE request_event_id = '"+id+"' OR exchange_id = '"+id+"' FORMAT TabSeparated") +
				"\n  marks: " + query("SELECT groupArray((next_offset, low_offset, toString(written_at))) FROM "+db+".ingest_streams WHERE stream IN (SELECT stream FROM "+db+".ingest_waiting WHERE event_id = '"+id+"') AND written_at > (SELECT max(written_at) FROM "+db+".ingest_waiting WHERE event_id = '"+id+"') - 3 FORMAT TabSeparated")
		},
		requests: func() map[string]int {
			got := map[string]int{}
			out := query("SELECT request_event_id, count(DISTINCT (exchange_id, outcome, response_event_id)) FROM " + db + ".exchanges GROUP BY request_event_id FORMAT TabSeparated")
			for _, line := range strings.Split(out, "\n") {
				id, n, ok := strings.Cut(line, "\t")
				if !ok {
					continue
				}
				got[id], _ = strconv.Atoi(n)
			}
			return got
		},
		counts: func() (stored, quarantined, secrets int) {
			out := query("SELECT (SELECT count(DISTINCT exchange_id) FROM " + db + ".exchanges), (SELECT count(DISTINCT position) FROM " + db + ".quarantine), " +
				"(SELECT count() FROM " + db + ".exchange_bodies WHERE position(request_body, 'chaos-secret-token') > 0) FORMAT TabSeparated")
			if _, err := fmt.Sscanf(out, "%d\t%d\t%d", &stored, &quarantined, &secrets); err != nil {
				t.Fatalf("counts %q: %v", out, err)
			}
			return stored, quarantined, secrets
		}}
}

// produceAtRate writes lines to topic in 20 batches a second, spread over
// seconds, retrying through broker restarts, and reports when it is done.
func produceAtRate(addr, topic string, keys, lines [][]byte, seconds int) <-chan error {
	done := make(chan error, 1)
	go func() {
		w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: topic, Balancer: &kafka.Hash{}, BatchTimeout: 5 * time.Millisecond,
			RequiredAcks: kafka.RequireAll, MaxAttempts: 20, WriteBackoffMax: time.Second}
		defer w.Close()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		per := max(1, len(lines)/(seconds*20))
		for i := 0; i < len(lines); {
			<-tick.C
			var msgs []kafka.Message
			for j := i; j < min(i+per, len(lines)); j++ {
				msgs = append(msgs, kafka.Message{Key: keys[j], Value: lines[j]})
			}
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				err := w.WriteMessages(ctx, msgs...)
				cancel()
				if err == nil {
					break
				}
				time.Sleep(200 * time.Millisecond) // the broker restarts; a re-sent batch may double messages, the topic is the truth
			}
			i += len(msgs)
		}
		done <- nil
	}()
	return done
}

// chaosIngester is one member of the chaos group, with its metrics port.
type chaosIngester struct {
	proc    *ingestProc
	metrics string
}

func chaos(t *testing.T, engine string) {
	seconds, rate := envInt("CHAOS_SECONDS", 30), envInt("CHAOS_RATE", 500)
	store := newChaosStore(t, engine)
	b := kafkatest.StartBroker(t)
	topic := kafkatest.NewTopic(t, b.Addr, 6)
	keys, lines := chaosLines(seconds*rate*10/18, time.Duration(seconds)*time.Second, 12)
	prodDone := produceAtRate(b.Addr, topic, keys, lines, seconds)

	const group = "chaos"
	var procs []*ingestProc
	start := func(migrate bool) *chaosIngester {
		metrics := fmt.Sprintf("127.0.0.1:%d", kafkatest.FreePortPair(t))
		args := []string{"--from", fmt.Sprintf("kafka://%s/%s?group=%s&max_wait=1s", b.Addr, topic, group), "--to", store.to,
			"--listen", metrics, "--flush-interval", "200ms", "--idle-advance", "1s", "--retry-max", "1s"}
		if migrate { // no TTL: the fixtures' dates are fixed, today moves on
			args = append(args, "--migrate", "--clickhouse-ttl", "0", "--clickhouse-body-ttl", "0")
		}
		in := &chaosIngester{proc: startIngest(t, args...), metrics: metrics}
		procs = append(procs, in.proc)
		if migrate { // the others start on the migrated schema
			waitFor(t, "the first ingester to serve metrics", 60*time.Second, func() bool { return metricstest.Sums(metrics) != nil })
		}
		return in
	}
	members := []*chaosIngester{start(store.migrate)}
	kills, restarts, joins, leaves := 0, 0, 0, 0
	var recovery []float64
	// kill SIGKILLs member i, starts it again, and measures how long until
	// every partition is committed past where it stood at the kill.
	kill := func(i int) {
		before := groupCommitted(b.Addr, group, topic)
		_ = members[i].proc.cmd.Process.Signal(syscall.SIGKILL)
		_ = members[i].proc.cmd.Wait() // "signal: killed"; Wait also ends the copy of its stderr
		kills++
		killed := time.Now()
		members[i] = start(false)
		waitFor(t, "every partition to be committed past the kill", 120*time.Second, func() bool {
			now := groupCommitted(b.Addr, group, topic)
			for p, off := range before {
				if now[p] <= off && off < partitionEnd(t, b.Addr, topic, p) {
					return false
				}
			}
			return now != nil
		})
		recovery = append(recovery, time.Since(killed).Seconds())
	}
	steps := map[string][]func(){
		"duckdb": {func() { kill(0) }, func() { b.Restart(t); restarts++ }, func() { kill(0) }},
		"clickhouse": {
			func() { members = append(members, start(false)); joins++ },
			func() { members = append(members, start(false)); joins++ },
			func() { kill(1) },
			func() { b.Restart(t); restarts++ },
			func() { // the third leaves the group cleanly
				last := members[len(members)-1]
				if err := last.proc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				if err := last.proc.cmd.Wait(); err != nil {
					t.Fatalf("graceful stop of a member: %v\n%s", err, last.proc.stderr)
				}
				members = members[:len(members)-1]
				leaves++
			},
		},
	}[engine]
	began := time.Now()
	for i, step := range steps {
		for time.Since(began) < time.Duration((i+1)*seconds)*time.Second/time.Duration(len(steps)+1) {
			time.Sleep(100 * time.Millisecond)
		}
		step()
	}
	if err := <-prodDone; err != nil {
		t.Fatal(err)
	}
	_, end := topicOffsets(t, b.Addr, topic)
	// A long form leaves a backlog on a loaded machine: the drain may take
	// as long as the traffic did.
	drain := max(180*time.Second, 2*time.Duration(seconds)*time.Second)
	var committed int64
	pending := 0.0
	deadline := time.Now().Add(drain)
	for {
		committed, pending = 0, 0
		for _, off := range groupCommitted(b.Addr, group, topic) {
			committed += off
		}
		for _, m := range members {
			pending += metricstest.Sums(m.metrics)["mcplens_ingest_pending"]
		}
		if float64(committed) == end && pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v the group committed %d of %d messages (%v), %v halves pending", drain, committed, int64(end), groupCommitted(b.Addr, group, topic), pending)
		}
		time.Sleep(200 * time.Millisecond)
	}
	elapsed := time.Since(began)
	// The newest exchanges of each partition wait for its watermark
	// (lateness and merge window, 7s of event time): idle advance moves it
	// a second per second without input, and releases them.
	for stable := 0; stable < 3; {
		waiting := 0.0
		for _, m := range members {
			sums := metricstest.Sums(m.metrics)
			waiting += sums["mcplens_ingest_merge_waiting"] + sums["mcplens_ingest_pending"]
		}
		if waiting == 0 {
			stable++
		} else {
			stable = 0
		}
		if time.Now().After(deadline.Add(30 * time.Second)) {
			t.Fatalf("%v events still waiting for their watermark", waiting)
		}
		time.Sleep(300 * time.Millisecond)
	}
	for _, m := range members {
		if err := m.proc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range members {
		if err := m.proc.cmd.Wait(); err != nil {
			t.Fatalf("graceful stop: %v\n%s", err, m.proc.stderr)
		}
	}

	// Ground truth from the topic: the request of every decodable line, and
	// the messages that must be quarantined.
	want := map[string]bool{}
	quarantine := 0
	var planted schema.Event // a request that carried the token
	values := kafkatest.Values(t, b.Addr, topic)
	for _, v := range values {
		ev, err := pipeline.Decode(v, pipeline.Position{})
		switch {
		case err != nil:
			quarantine++
		case ev.Kind != "response":
			want[ev.EventID] = true
			if planted.EventID == "" && ev.SessionID != "" && strings.Contains(string(v), "chaos-secret-token") {
				planted = ev
			}
		}
	}
	got := store.requests()
	lost, doubled := 0, 0
	for id := range want {
		if got[id] == 0 {
			if lost++; lost <= 5 {
				t.Logf("lost: request %s", id)
				if store.explain != nil {
					t.Logf("  the store holds: %s", store.explain(id))
				}
			}
		}
	}
	for id, n := range got {
		if n > 1 || !want[id] {
			doubled += max(n-1, 1)
			if doubled <= 5 {
				t.Logf("doubled: request %q stored %d ways", id, n)
			}
		}
	}
	stored, quarantined, secrets := store.counts()
	checkAPI(t, store.open(), len(want), planted)
	t.Logf("chaos on %s: %ds at %d events/s: %d messages on 6 partitions, %d exchanges expected, %d stored; lost %d, doubled %d, quarantined %d (want %d); %d SIGKILLs, %d broker restarts, %d joins, %d leaves; every partition committed past a kill after %v s; %.0f events/s over %v",
		engine, seconds, rate, len(values), len(want), stored, lost, doubled, quarantined, quarantine, kills, restarts, joins, leaves, recovery, float64(len(values))/elapsed.Seconds(), elapsed.Round(time.Second))
	if lost+doubled > 0 || quarantined != quarantine || secrets > 0 {
		t.Errorf("lost %d, doubled %d, quarantined %d of %d, %d bodies with a secret: want 0, 0, all, 0", lost, doubled, quarantined, quarantine, secrets)
		for i, p := range procs { // every one has exited and been waited for
			t.Logf("ingester %d warnings and errors:\n%s", i, warnings(p.stderr.String()))
		}
	}
}

// warnings keeps a log's lines at warn level and above.
func warnings(log string) string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "older than the table's TTL") {
			continue
		}
		if strings.Contains(line, `"level":"warn"`) || strings.Contains(line, `"level":"error"`) || strings.Contains(line, "streams assigned") || strings.Contains(line, "resumed from") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// groupCommitted is the group's committed offset of each partition of
// topic, as the broker has it (nil while it does not answer).
func groupCommitted(addr, group, topic string) map[int]int64 {
	c := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 5 * time.Second}
	resp, err := c.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: {0, 1, 2, 3, 4, 5}}})
	if err != nil || resp.Error != nil {
		return nil
	}
	out := map[int]int64{}
	for _, p := range resp.Topics[topic] {
		if p.Error != nil {
			return nil
		}
		out[p.Partition] = max(p.CommittedOffset, 0)
	}
	return out
}

// partitionEnd is the end offset of one partition.
func partitionEnd(t *testing.T, addr, topic string, partition int) int64 {
	t.Helper()
	pc, err := kafka.DialLeader(context.Background(), "tcp", addr, topic, partition)
	if err != nil {
		return 1 << 62 // the broker restarts: not at its end
	}
	defer pc.Close()
	_, last, err := pc.ReadOffsets()
	if err != nil {
		return 1 << 62
	}
	return last
}

// topicOffsets sums the first and end offsets of a topic's partitions.
func topicOffsets(t *testing.T, brokers, topic string) (first, end float64) {
	t.Helper()
	conn, err := kafka.Dial("tcp", brokers)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	parts, err := conn.ReadPartitions(topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		pc, err := kafka.DialLeader(context.Background(), "tcp", brokers, topic, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		f, l, err := pc.ReadOffsets()
		pc.Close()
		if err != nil {
			t.Fatal(err)
		}
		first, end = first+float64(f), end+float64(l)
	}
	return first, end
}

// checkAPI asks the API (cmd/api's handler over the store) what the
// ground truth says: its outcome breakdown counts every expected exchange
// once, and the planted request's session, read exchange by exchange with
// bodies, shows the planted request redacted and no token anywhere.
func checkAPI(t *testing.T, st readStore, want int, planted schema.Event) {
	t.Helper()
	defer st.Close()
	cfg := api.DefaultConfig()
	cfg.Dev, cfg.RateLimit, cfg.QueryTimeout = true, 0, 3*time.Minute
	a, err := api.New(cfg, api.Deps{Store: st, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a)
	defer srv.Close()
	window := "from=" + time.Now().Add(-3*time.Hour).UTC().Format(time.RFC3339) + "&to=" + time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	get := func(path string, into any) []byte {
		t.Helper()
		code, raw := apitest.GetJSON(t, srv.URL+path, into)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, code, raw)
		}
		return raw
	}

	var outcomes struct {
		Rows []struct {
			Exchanges int `json:"exchanges_n"`
		} `json:"rows"`
	}
	get("/api/v1/outcomes?group_by=outcome&"+window, &outcomes)
	total := 0
	for _, r := range outcomes.Rows {
		total += r.Exchanges
	}
	if total != want {
		t.Errorf("the API counts %d exchanges, the topic holds %d", total, want)
	}

	if planted.EventID == "" {
		t.Fatal("no planted token in the topic")
	}
	found := false
	next := "/api/v1/sessions/" + url.PathEscape(planted.SessionID) + "/timeline?limit=500&" + window
	for next != "" {
		var page struct {
			Rows []struct {
				ExchangeID string `json:"exchange_id"`
			} `json:"rows"`
			NextURL *string `json:"next_url"`
		}
		get(next, &page)
		for _, r := range page.Rows {
			var d struct {
				Exchange struct {
					RequestEventID string `json:"request_event_id"`
				} `json:"exchange"`
			}
			raw := get("/api/v1/exchanges/"+url.PathEscape(r.ExchangeID), &d)
			if strings.Contains(string(raw), "chaos-secret-token") {
				t.Errorf("the API shows a planted token in exchange %s", r.ExchangeID)
			}
			found = found || d.Exchange.RequestEventID == planted.EventID && strings.Contains(string(raw), redact.Redacted)
		}
		next = ""
		if page.NextURL != nil {
			next = strings.TrimPrefix(*page.NextURL, srv.URL)
		}
	}
	if !found {
		t.Errorf("the API does not show request %s of session %s redacted", planted.EventID, planted.SessionID)
	}
}
