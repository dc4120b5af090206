package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/pipeline/kafkatest"
	"github.com/mcplens/mcplens/tap"
)

// BenchmarkTapAddedLatency measures what the tap adds to a call's p99:
// each round sends one call straight to the upstream and one through the
// tap (alternating JSON and SSE answers), so load from other processes
// hits both alike. sink=up produces to the real broker
// (MCPLENS_KAFKA_BROKERS), sink=down to an address where nothing listens,
// with the queue spilling. The goal is under 1 ms in both. A third arm,
// the same reverse proxy without the recorder, separates what the extra
// hop costs from what recording costs (recording-p99-ms).
func BenchmarkTapAddedLatency(b *testing.B) {
	for _, sink := range []string{"up", "down"} {
		b.Run("sink="+sink, func(b *testing.B) {
			to := "kafka://127.0.0.1:1/mcp-logs"
			if sink == "up" {
				if os.Getenv(kafkatest.EnvBrokers) == "" {
					b.Skip("sink=up needs MCPLENS_KAFKA_BROKERS")
				}
				to = "kafka://" + kafkatest.Addrs(os.Getenv(kafkatest.EnvBrokers))[0] + "/" + kafkatest.NewTopic(b, os.Getenv(kafkatest.EnvBrokers), 3)
			}
			upstream := mcpUpstream(b)
			addr := fmt.Sprintf("127.0.0.1:%d", kafkatest.FreePortPair(b))
			cfg := config{Listen: addr, Upstream: upstream, To: to, DrainTimeout: time.Second}
			cfg.Queue.SpillDir = b.TempDir()
			cfg.Queue.AttemptTimeout = 2 * time.Second
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- run(ctx, cfg, zerolog.Nop()) }()
			defer func() { cancel(); <-done }()
			waitListening(b, addr)
			// The yardstick for what recording adds: the same reverse
			// proxy without the recorder.
			upURL, _ := url.Parse(upstream)
			plain := httptest.NewServer(tap.NewProxy(upURL, zerolog.Nop()))
			defer plain.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
			call := func(url string, id int) time.Duration {
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"lookup","arguments":{"key":"a"}}}`, id)
				start := time.Now()
				resp, err := client.Post(url, "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return time.Since(start)
			}
			for i := range 200 { // warm up connections and the writer
				call(upstream, i)
				call("http://"+addr, i)
				call(plain.URL, i)
			}
			var direct, proxied, tapped []time.Duration
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				direct = append(direct, call(upstream, i))
				tapped = append(tapped, call("http://"+addr, i))
				proxied = append(proxied, call(plain.URL, i))
			}
			slices.Sort(proxied)
			slices.Sort(direct)
			slices.Sort(tapped)
			p := func(d []time.Duration, q float64) float64 {
				return float64(d[int(float64(len(d)-1)*q)].Microseconds()) / 1000
			}
			b.ReportMetric(p(direct, 0.99), "direct-p99-ms")
			b.ReportMetric(p(tapped, 0.99), "tap-p99-ms")
			b.ReportMetric(p(tapped, 0.99)-p(direct, 0.99), "added-p99-ms")
			b.ReportMetric(p(tapped, 0.5)-p(direct, 0.5), "added-p50-ms")
			b.ReportMetric(p(tapped, 0.99)-p(proxied, 0.99), "recording-p99-ms")
		})
	}
}
