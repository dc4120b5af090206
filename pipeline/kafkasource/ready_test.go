package kafkasource

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/pipeline/kafkatest"
)

// TestReadyFollowsBroker: on a broker of the test's own, Ready is false
// before the group has assigned partitions, true once it has, false within
// seconds of the broker going away, and true again after it is back.
func TestReadyFollowsBroker(t *testing.T) {
	checkNoLeaks(t)
	b := kafkatest.StartBroker(t)
	topic := kafkatest.NewTopic(t, b.Addr, 2)
	cfg, err := ParseURL(fmt.Sprintf("kafka://%s/%s?group=%s&max_wait=1s", b.Addr, topic, kafkatest.UniqueName(t, "ready")))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	// The Reader joins the group when it is first asked for a message.
	fetchCtx, stopFetch := context.WithCancel(t.Context())
	fetched := make(chan struct{})
	go func() {
		defer close(fetched)
		for fetchCtx.Err() == nil {
			_, _ = s.Fetch(fetchCtx)
		}
	}()
	t.Cleanup(func() { stopFetch(); <-fetched })

	waitReady(t, s, true, 60*time.Second, "after joining the group")
	b.Stop(t)
	start := time.Now()
	waitReady(t, s, false, 10*time.Second, "after the broker stopped")
	t.Logf("unready %s after the broker stopped", time.Since(start).Round(time.Millisecond))
	b.Start(t)
	start = time.Now()
	waitReady(t, s, true, 90*time.Second, "after the broker came back")
	t.Logf("ready again %s after the broker answered", time.Since(start).Round(time.Millisecond))
}

func waitReady(t *testing.T, s *Source, want bool, within time.Duration, when string) {
	t.Helper()
	deadline := time.Now().Add(within)
	var err error
	for {
		err = s.Ready(t.Context())
		if (err == nil) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ready %v for %s %s (last: %v), want %v", err == nil, within, when, err, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
