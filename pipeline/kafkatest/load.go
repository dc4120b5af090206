package kafkatest

import (
	"testing"
	"time"

	"github.com/mcplens/mcplens/internal/loadgen"
)

// UnkeyedLoad writes cfg's load (with its truth kept) to a new topic of
// the given partitions as a producer without keys writes it (Sticky: runs
// of 500 lines, written in order at 4,000 lines/s an hour ago), and
// returns the topic, the load's truth and how many lines it holds.
func UnkeyedLoad(t testing.TB, brokers string, partitions int, cfg loadgen.Config) (topic string, truth *loadgen.Truth, lines int) {
	t.Helper()
	g, values, err := loadgen.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	topic = NewTopic(t, brokers, partitions)
	ProduceRecords(t, brokers, topic, Sticky(values, partitions, 500, time.Now().Add(-time.Hour), 4000)...)
	return topic, g.Truth(), len(values)
}
