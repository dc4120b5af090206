package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/internal/logging/logtest"
	"github.com/mcplens/mcplens/pipeline/kafkatest"
)

// callBound is how long any call through the tap may take while the broker
// is dead or restarting. A call whose recording waited for the broker took
// 60 s before the queue existed; through an idle tap one takes a few
// milliseconds.
const callBound = 2 * time.Second

// mcpUpstream answers tools/call with JSON for even ids and with an SSE
// stream (chunked, as Streamable HTTP servers do) for odd ids.
func mcpUpstream(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID int `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"ok"}]}}`, req.ID)
		if req.ID%2 == 0 {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, answer)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message\ndata: "+answer+"\n\n")
		w.(http.Flusher).Flush()
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestBrokerKilledUnderTraffic drives calls through the tap while its own
// broker is SIGKILLed and restarted: no call is slowed past callBound, and
// every recorded event is on the topic afterwards or counted as dropped.
func TestBrokerKilledUnderTraffic(t *testing.T) {
	b := kafkatest.StartBroker(t)
	topic := kafkatest.NewTopic(t, b.Addr, 3)
	addr := fmt.Sprintf("127.0.0.1:%d", kafkatest.FreePortPair(t))
	cfg := config{Listen: addr, Upstream: mcpUpstream(t), To: "kafka://" + b.Addr + "/" + topic, DrainTimeout: 60 * time.Second}
	cfg.Queue.Size = 2000
	cfg.Queue.SpillDir = t.TempDir()
	cfg.Queue.AttemptTimeout = 2 * time.Second
	logs := &logtest.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, zerolog.New(logs)) }()
	waitListening(t, addr)

	var (
		sent      atomic.Int64
		failed    atomic.Int64
		mu        sync.Mutex
		latencies []time.Duration
		stop      = make(chan struct{})
		wg        sync.WaitGroup
	)
	client := &http.Client{Timeout: 30 * time.Second}
	for w := range 4 {
		wg.Go(func() {
			var mine []time.Duration
			for i := 0; ; i++ {
				select {
				case <-stop:
					mu.Lock()
					latencies = append(latencies, mine...)
					mu.Unlock()
					return
				default:
				}
				id := w*1_000_000 + i
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"lookup","arguments":{"key":"k%d"}}}`, id, i)
				start := time.Now()
				resp, err := client.Post("http://"+addr, "application/json", strings.NewReader(body))
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				mine = append(mine, time.Since(start))
				sent.Add(1)
				if err != nil || resp.StatusCode != http.StatusOK {
					if failed.Add(1) <= 5 {
						status := 0
						if resp != nil {
							status = resp.StatusCode
						}
						t.Logf("call %d failed: status %d, %v", id, status, err)
					}
				}
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	time.Sleep(3 * time.Second)
	before := sent.Load()
	b.Kill(t)
	time.Sleep(10 * time.Second)
	during := sent.Load() - before
	b.Start(t)
	time.Sleep(5 * time.Second)
	close(stop)
	wg.Wait()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	slices.Sort(latencies)
	p99 := latencies[len(latencies)*99/100]
	worst := latencies[len(latencies)-1]
	t.Logf("%d calls (%d while the broker was dead), p99 %v, slowest %v", sent.Load(), during, p99, worst)
	if worst > callBound {
		t.Errorf("slowest call took %v, bound %v", worst, callBound)
	}
	// One call in about 7,000 was seen (in 2 of 5 runs) to end with its
	// upstream connection closed mid-body under this load ("ReverseProxy
	// read error during body copy: use of closed network connection"). The
	// cause found: the transport's last read of the request body, which
	// the recorder had read whole, reached the inbound body net/http had
	// closed when the fast upstream's answer began ("invalid Read on closed
	// Body"), so the transport tore the upstream connection down
	// (tap.TestRecorderBodyAfterAnswer; fixed in captureRequest). The
	// tolerance stays until runs under load show no cut: such a call is
	// still recorded (the count below includes it), and more than 0.1% is
	// a failure of the tap.
	if failed.Load()*1000 > sent.Load() {
		t.Errorf("%d calls failed; the tap's warnings and errors:", failed.Load())
		for line := range strings.SplitSeq(logs.String(), "\n") {
			if strings.Contains(line, `"level":"warn"`) || strings.Contains(line, `"level":"error"`) {
				t.Log(line)
			}
		}
	}
	if during < 100 {
		t.Errorf("only %d calls while the broker was dead: the outage was not under traffic", during)
	}

	stats := queueStats(t, logs.String())
	got := topicEventIDs(t, b.Addr, topic)
	t.Logf("queue: %+v; %d distinct events on the topic", stats, len(got))
	if int64(len(got))+stats.Dropped+stats.Rejected != sent.Load() {
		t.Errorf("%d events on the topic + %d dropped + %d rejected != %d calls", len(got), stats.Dropped, stats.Rejected, sent.Load())
	}
	if stats.Spilled == 0 {
		t.Errorf("nothing spilled during a 10 s outage with a 2000-event queue: %+v", stats)
	}
}

type loggedStats struct {
	Delivered, Spilled, Dropped, Rejected int64
}

// queueStats reads the counts of the tap's last log line about its queue.
func queueStats(t *testing.T, logs string) loggedStats {
	t.Helper()
	for line := range strings.SplitSeq(logs, "\n") {
		var l struct {
			Message                               string
			Delivered, Spilled, Dropped, Rejected int64
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Message == "closed event queue" {
			return loggedStats{l.Delivered, l.Spilled, l.Dropped, l.Rejected}
		}
	}
	t.Fatalf("no 'closed event queue' log line in:\n%s", logs)
	return loggedStats{}
}

// topicEventIDs returns the distinct event ids on topic.
func topicEventIDs(t *testing.T, brokers, topic string) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	for _, v := range kafkatest.Values(t, brokers, topic) {
		var ev struct {
			EventID string `json:"event_id"`
		}
		if err := json.Unmarshal(v, &ev); err != nil || ev.EventID == "" {
			t.Fatalf("not an event on %s: %s", topic, v)
		}
		ids[ev.EventID] = true
	}
	return ids
}
