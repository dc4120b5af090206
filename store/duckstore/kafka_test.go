package duckstore

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/kafkasource"
	"github.com/mcplens/mcplens/pipeline/kafkatest"
	"github.com/mcplens/mcplens/pipeline/pipelinetest"
)

// The cases of issue 12 on a real broker, through the Kafka source, the
// engine and this store, as `ingest --from kafka://... --to duckdb:` runs
// them.

// ingester is one engine reading a topic as a group member into a store.
type ingester struct {
	src                   *kafkasource.Source
	brokers, topic, group string
	cancel                context.CancelFunc
	done                  chan error
}

// halting is a source that delivers limit messages (and every
// assignment), then nothing more.
type halting struct {
	*kafkasource.Source
	limit, n int
}

func (h *halting) Fetch(ctx context.Context) (pipeline.Message, error) {
	if h.n == h.limit {
		<-ctx.Done()
		return pipeline.Message{}, ctx.Err()
	}
	m, err := h.Source.Fetch(ctx)
	if err == nil && m.Assignment == nil {
		h.n++
	}
	return m, err
}

func startIngester(t *testing.T, brokers, topic, group string, store *Store) *ingester {
	t.Helper()
	return startIngesterUpTo(t, brokers, topic, group, store, -1)
}

// startIngesterUpTo starts an ingester that reads limit messages (-1:
// all) and then waits.
func startIngesterUpTo(t *testing.T, brokers, topic, group string, store *Store, limit int) *ingester {
	t.Helper()
	kc, err := kafkasource.ParseURL(fmt.Sprintf("kafka://%s/%s?group=%s&max_wait=1s", brokers, topic, group))
	if err != nil {
		t.Fatal(err)
	}
	ks, err := kafkasource.New(kc, zerolog.Nop(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	cfg := pipeline.DefaultConfig()
	cfg.FlushInterval, cfg.RetryMin, cfg.RetryMax = 50*time.Millisecond, 10*time.Millisecond, 100*time.Millisecond
	var src pipeline.Source = ks
	if limit >= 0 {
		src = &halting{Source: ks, limit: limit}
	}
	e, err := pipeline.New(cfg, pipeline.Deps{Source: src, Sink: store, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &ingester{src: ks, brokers: brokers, topic: topic, group: group, cancel: cancel, done: make(chan error, 1)}
	go func() { in.done <- e.Run(ctx) }()
	return in
}

// stop stops the ingester gracefully (as SIGTERM does) and closes its
// source (leaving the group).
func (in *ingester) stop(t *testing.T) {
	t.Helper()
	in.cancel()
	if err := <-in.done; err != nil {
		t.Fatal(err)
	}
	if err := in.src.Close(); err != nil {
		t.Fatal(err)
	}
}

// waitCommitted waits until the group has committed n messages, as the
// broker holds its offsets. Not what this member committed: a partition
// that the member before it read to its end and committed has nothing
// left to read, so this member never commits it again (counting its own
// commits, a restarted ingester waited for ever once the first one had
// finished a partition).
func (in *ingester) waitCommitted(t *testing.T, n int64) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		got, err := kafkatest.Committed(in.brokers, in.group, in.topic)
		if err != nil {
			t.Fatal(err)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the group committed %d of %d messages", got, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func openStore(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kafka.duckdb")
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s, path
}

// storedByRequest counts stored exchanges per request event id and the
// NO_RESPONSE and orphan rows.
func storedByRequest(t *testing.T, s *Store) (byReq map[string]int, noResponse, orphans int) {
	t.Helper()
	rows, err := s.db.QueryContext(context.Background(), `SELECT request_event_id, response_event_id, outcome FROM exchanges`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	byReq = map[string]int{}
	for rows.Next() {
		var req, resp, outcome string
		if err := rows.Scan(&req, &resp, &outcome); err != nil {
			t.Fatal(err)
		}
		byReq[req]++
		if outcome == string(classify.NoResponse) {
			noResponse++
		}
		if req == "" {
			orphans++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return byReq, noResponse, orphans
}

// Case 1: a backlog of production-shaped split records (responses 10 ms
// to 30 s late, 11 minutes of event time) on 3 partitions keyed by
// session, consumed from the start, with a graceful stop and restart half
// way: 0 false NO_RESPONSE, 0 doubles, 0 lost. 20,000 exchanges (36,000
// events) in make test; MCPLENS_BACKLOG_EXCHANGES=55600 is the issue's
// 100,000 events.
func TestKafkaBacklogThreePartitions(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	topic := kafkatest.NewTopic(t, brokers, 3)
	n, err := strconv.Atoi(cmp.Or(os.Getenv("MCPLENS_BACKLOG_EXCHANGES"), "20000"))
	if err != nil {
		t.Fatalf("MCPLENS_BACKLOG_EXCHANGES: %v", err)
	}
	corpus, wants := pipelinetest.Production(pipelinetest.Shape{Exchanges: n, Seed: 12})
	// one last exchange far later on every partition moves each watermark
	// past the others, so everything else is stored; their ids are their
	// own: an ingester idle past --idle-advance before its stop stores
	// them too, and with the ids of the first 30 exchanges they counted as
	// doubling those
	end, _ := pipelinetest.Production(pipelinetest.Shape{Exchanges: 30, Seed: 13, SplitShare: 1e-9, IDPrefix: "end-",
		Start: time.Date(2026, 11, 2, 11, 0, 0, 0, time.UTC), Span: time.Second})
	corpus.Keys = append(corpus.Keys, end.Keys...)
	corpus.Lines = append(corpus.Lines, end.Lines...)
	kafkatest.ProduceRecords(t, brokers, topic, kafkatest.Keyed(corpus.Keys, corpus.Lines, 3)...)
	store, _ := openStore(t)
	defer store.Close()
	group := kafkatest.UniqueName(t, "g")

	// The first ingester reads half the backlog and no more, so the
	// restart is half way however fast it reads (stopped once half was
	// committed, it had read 74% to 99% of the backlog in four traced
	// runs with writes overlapping reading).
	half := len(corpus.Lines) / 2
	in := startIngesterUpTo(t, brokers, topic, group, store, half)
	in.waitCommitted(t, int64(half))
	in.stop(t)
	in = startIngester(t, brokers, topic, group, store)
	in.waitCommitted(t, int64(len(corpus.Lines)))
	in.stop(t)

	byReq, noResponse, orphans := storedByRequest(t, store)
	lost, doubled := 0, 0
	for _, w := range wants {
		switch byReq[w.RequestEventID] {
		case 0:
			lost++
		case 1:
		default:
			doubled++
		}
	}
	if lost+doubled+noResponse+orphans > 0 {
		t.Errorf("%d exchanges: %d lost, %d doubled, %d NO_RESPONSE, %d orphans; want 0 of each", len(wants), lost, doubled, noResponse, orphans)
	}
	t.Logf("%d events on 3 partitions, %d exchanges, a stop and restart half way: %d lost, %d doubled, %d NO_RESPONSE, %d orphans",
		len(corpus.Lines), len(wants), lost, doubled, noResponse, orphans)
}

// Case 6: a rebalance re-delivers partitions from their committed offsets
// while requests wait: another member joins the group and leaves; every
// exchange is still stored exactly once.
func TestKafkaRebalanceRedelivers(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	topic := kafkatest.NewTopic(t, brokers, 3)
	corpus, wants := pipelinetest.Production(pipelinetest.Shape{Exchanges: 6000, Seed: 6, Span: 3 * time.Minute})
	recs := kafkatest.Keyed(corpus.Keys, corpus.Lines, 3)
	half := len(recs) / 2
	kafkatest.ProduceRecords(t, brokers, topic, recs[:half]...)
	store, _ := openStore(t)
	defer store.Close()
	group := kafkatest.UniqueName(t, "g")
	in := startIngester(t, brokers, topic, group, store)
	in.waitCommitted(t, int64(half))

	// A second member joins, takes partitions, reads without committing,
	// and leaves: two rebalances, each re-delivering from the commits.
	other := kafka.NewReader(kafka.ReaderConfig{Brokers: kafkatest.Addrs(brokers), GroupID: group, Topic: topic,
		SessionTimeout: 6 * time.Second, RebalanceTimeout: 5 * time.Second, MaxWait: 500 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	kafkatest.ProduceRecords(t, brokers, topic, recs[half:]...)
	for range 50 {
		if _, err := other.FetchMessage(ctx); err != nil {
			break
		}
	}
	cancel()
	if err := other.Close(); err != nil {
		t.Logf("close the second member: %v", err)
	}
	end, _ := pipelinetest.Production(pipelinetest.Shape{Exchanges: 30, Seed: 7, SplitShare: 1e-9, IDPrefix: "end-",
		Start: time.Date(2026, 11, 2, 11, 0, 0, 0, time.UTC), Span: time.Second})
	kafkatest.ProduceRecords(t, brokers, topic, kafkatest.Keyed(end.Keys, end.Lines, 3)...)
	in.waitCommitted(t, int64(len(recs)+len(end.Lines)))
	in.stop(t)

	byReq, noResponse, orphans := storedByRequest(t, store)
	for _, w := range wants {
		if byReq[w.RequestEventID] != 1 {
			t.Errorf("%s stored %d times", w.RequestEventID, byReq[w.RequestEventID])
		}
	}
	if noResponse+orphans > 0 {
		t.Errorf("%d NO_RESPONSE and %d orphans, want 0", noResponse, orphans)
	}
}

// Case 4 over Kafka: 200 good messages and one whose response body holds a
// raw 0xFF: all 201 are stored (the bad body as its bytes) and the offset
// is committed to the end; a raw 0xFF in server quarantines that message.
func TestKafkaInvalidUTF8(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	topic := kafkatest.NewTopic(t, brokers, 1)
	var values [][]byte
	line := func(i int, server, body string) []byte {
		return fmt.Appendf(nil, `{"event_id":"u-%d","ts":"2026-11-02T10:%02d:%02dZ","kind":"exchange","source":"gateway","server":"%s","session_id":"s","http.method":"POST","http.status":200,"request_body":"{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}","response_body":"%s"}`,
			i, i/60, i%60, server, i, body)
	}
	for i := range 200 {
		values = append(values, line(i, "kv", `{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}`))
	}
	values = append(values, line(200, "kv", "{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":200,\\\"result\\\":{\\\"x\\\":\\\"\xff\\\"}}"),
		line(201, "k\xff", `{}`), line(3000, "kv", `{}`))
	kafkatest.Produce(t, brokers, topic, values...)
	store, _ := openStore(t)
	defer store.Close()
	in := startIngester(t, brokers, topic, kafkatest.UniqueName(t, "g"), store)
	in.waitCommitted(t, int64(len(values)))
	in.stop(t)
	var stored, quarantined int
	var body []byte
	if err := store.db.QueryRowContext(context.Background(), `SELECT (SELECT count(*) FROM exchanges), (SELECT count(*) FROM quarantine),
		(SELECT b.response_body FROM exchange_bodies b JOIN exchanges e USING (exchange_id) WHERE e.request_event_id = 'u-200')`).Scan(&stored, &quarantined, &body); err != nil {
		t.Fatal(err)
	}
	if stored != 201 || quarantined != 1 || !bytes.Contains(body, []byte{0xff}) {
		t.Errorf("%d stored, %d quarantined, body %q; want 201, 1 and the raw 0xFF kept", stored, quarantined, body)
	}
}

// Case 5 over Kafka: the secrets of the issue reach neither the stored
// exchanges and bodies nor the quarantine, and a huge garbage line is cut.
func TestKafkaSecretsNowhere(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	topic := kafkatest.NewTopic(t, brokers, 1)
	const bearer, basic, cookie = "tok-lower-abcdefghijklmnop", "dXNlcjpodW50ZXIyLXNlY3JldA==", "sid-secret-0123456789"
	reqBody := `{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"fetch\",\"arguments\":{\"headers\":{\"Authorization\":\"Basic ` + basic + `\",\"Cookie\":\"` + cookie + `\"}}}}`
	respBody := `{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"curl -H 'authorization: bearer ` + bearer + `'\"}]}}`
	values := [][]byte{
		fmt.Appendf(nil, `{"event_id":"s-1","ts":"2026-11-02T10:00:00Z","kind":"exchange","source":"gateway","server":"kv","http.method":"POST","http.status":200,"http.response_headers":{"content-type":"application/json"},"request_body":"%s","response_body":"%s"}`, reqBody, respBody),
		[]byte(`{"oops": "authorization: bearer ` + bearer + `", "x": ` + strings.Repeat("\xff", 700_000)),
		[]byte(`{"event_id":"s-2","ts":"2026-11-02T11:00:00Z","kind":"exchange","source":"gateway","http.method":"POST","http.status":202,"request_body":"","response_body":""}`),
	}
	kafkatest.Produce(t, brokers, topic, values...)
	store, _ := openStore(t)
	defer store.Close()
	in := startIngester(t, brokers, topic, kafkatest.UniqueName(t, "g"), store)
	in.waitCommitted(t, int64(len(values)))
	in.stop(t)
	var dump []byte
	var rawLen int
	if err := store.db.QueryRowContext(context.Background(), `SELECT
		(SELECT string_agg(CAST(request_body AS VARCHAR) || CAST(response_body AS VARCHAR) || CAST(request_headers AS VARCHAR), '|') FROM exchange_bodies)
		|| (SELECT string_agg(error_message || tool_name, '|') FROM exchanges)
		|| (SELECT string_agg(reason || CAST(raw AS VARCHAR), '|') FROM quarantine),
		(SELECT max(octet_length(raw)) FROM quarantine)`).Scan(&dump, &rawLen); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{bearer, basic, cookie} {
		if bytes.Contains(dump, []byte(secret)) {
			t.Errorf("secret %q is in the store", secret)
		}
	}
	if !bytes.Contains(dump, []byte("[REDACTED]")) {
		t.Error("nothing was redacted: the query saw no rows")
	}
	if rawLen > 256<<10 {
		t.Errorf("quarantined raw line of %d bytes, want it cut to 256 KiB", rawLen)
	}
}
