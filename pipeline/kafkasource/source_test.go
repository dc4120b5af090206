package kafkasource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/kafkatest"
)

func TestFetchCommitResume(t *testing.T) {
	const n, k = 20, 12
	f := newFixture(t, 1)
	kafkatest.Produce(t, f.brokers, f.topic, values(n, "m%02d")...)

	s := f.open(t)
	msgs := fetchN(t, s, 1)
	if lag := f.gauge(t, "mcplens_ingest_consumer_lag", 0); lag != n-1 {
		t.Errorf("lag after the first fetch = %v, want %d", lag, n-1)
	}
	msgs = append(msgs, fetchN(t, s, n-1)...)
	for i, m := range msgs {
		want := pipeline.Position{Stream: f.topic + "/0", Topic: f.topic, Partition: 0, Offset: int64(i)}
		if m.Pos != want || string(m.Value) != fmt.Sprintf("m%02d", i) {
			t.Fatalf("message %d: got %+v %q, want %+v %q", i, m.Pos, m.Value, want, fmt.Sprintf("m%02d", i))
		}
	}
	if lag := f.gauge(t, "mcplens_ingest_consumer_lag", 0); lag != 0 {
		t.Errorf("lag after fetching all = %v, want 0", lag)
	}

	next := msgs[k-1].Pos
	next.Offset++
	if err := s.Commit(t.Context(), []pipeline.Position{next}); err != nil {
		t.Fatal(err)
	}
	if got := f.gauge(t, "mcplens_ingest_committed_offset", 0); got != k {
		t.Errorf("committed offset gauge = %v, want %d", got, k)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fetch(t.Context()); !errors.Is(err, io.EOF) {
		t.Errorf("fetch after close: %v, want io.EOF", err)
	}

	// The same group resumes at k: messages k..n-1 come again, nothing else.
	s2 := f.open(t)
	for i, m := range fetchN(t, s2, n-k) {
		if m.Pos.Offset != int64(k+i) {
			t.Fatalf("after reopen, message %d at offset %d, want %d", i, m.Pos.Offset, k+i)
		}
	}
	expectNothing(t, s2, time.Second)
}

func TestCommitNeverGoesBack(t *testing.T) {
	f := newFixture(t, 1)
	kafkatest.Produce(t, f.brokers, f.topic, values(10, "v%d")...)
	s := f.open(t)
	fetchN(t, s, 10)

	at := func(off int64) pipeline.Position {
		return pipeline.Position{Stream: f.topic + "/0", Topic: f.topic, Offset: off}
	}
	for _, next := range [][]pipeline.Position{
		{at(3), at(7), at(5)}, // the highest per partition wins
		{at(4)},               // behind: skipped
		{at(0)},               // nothing read: skipped
		nil,
	} {
		if err := s.Commit(t.Context(), next); err != nil {
			t.Fatalf("commit %v: %v", next, err)
		}
	}
	if got := f.gauge(t, "mcplens_ingest_committed_offset", 0); got != 7 {
		t.Errorf("committed offset gauge = %v, want 7", got)
	}
	other := pipeline.Position{Stream: "x/0", Topic: "x", Offset: 9}
	if err := s.Commit(t.Context(), []pipeline.Position{other}); err == nil {
		t.Error("commit of another topic's position succeeded, want error")
	}
	s.Close()

	if m := fetchN(t, f.open(t), 1)[0]; m.Pos.Offset != 7 {
		t.Errorf("after reopen, first offset %d, want 7", m.Pos.Offset)
	}
}

func TestPartitions(t *testing.T) {
	const parts, per = 3, 4
	f := newFixture(t, parts)
	var recs []kafkatest.Record
	for i := range per {
		for p := range parts {
			recs = append(recs, kafkatest.Record{Partition: p, Key: []byte("k"), Value: fmt.Appendf(nil, "p%d-%d", p, i)})
		}
	}
	kafkatest.ProduceRecords(t, f.brokers, f.topic, recs...)

	s := f.open(t)
	next := map[int]int64{}
	var commit []pipeline.Position
	for _, m := range fetchN(t, s, parts*per) {
		p := m.Pos.Partition
		want := fmt.Sprintf("p%d-%d", p, next[p])
		if m.Pos.Stream != fmt.Sprintf("%s/%d", f.topic, p) || m.Pos.Offset != next[p] || string(m.Value) != want {
			t.Fatalf("got %+v %q, want offset %d value %q", m.Pos, m.Value, next[p], want)
		}
		next[p]++
		pos := m.Pos
		pos.Offset++
		commit = append(commit, pos)
	}
	if err := s.Commit(t.Context(), commit); err != nil {
		t.Fatal(err)
	}
	for p := range parts {
		if got := f.gauge(t, "mcplens_ingest_committed_offset", p); got != per {
			t.Errorf("partition %d: committed offset gauge = %v, want %d", p, got, per)
		}
	}
	s.Close()

	kafkatest.ProduceRecords(t, f.brokers, f.topic, kafkatest.Record{Partition: 2, Value: []byte("late")})
	s2 := f.open(t)
	if m := fetchN(t, s2, 1)[0]; m.Pos.Partition != 2 || m.Pos.Offset != per || string(m.Value) != "late" {
		t.Errorf("after reopen got %+v %q, want partition 2 offset %d \"late\"", m.Pos, m.Value, per)
	}
	expectNothing(t, s2, time.Second)
}

func TestStartLast(t *testing.T) {
	f := newFixture(t, 1)
	kafkatest.Produce(t, f.brokers, f.topic, values(3, "old%d")...)
	s := f.open(t, "start=last")

	// The group's start offset is resolved when it joins, at a moment this
	// test cannot see: keep producing until a message arrives, and check it
	// is a new one.
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	got := make(chan pipeline.Message, 1)
	go func() {
		defer close(got)
		for {
			m, err := s.Fetch(ctx)
			if err != nil {
				return
			}
			if m.Assignment == nil {
				got <- m
				return
			}
		}
	}()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case m, ok := <-got:
			if !ok {
				t.Fatal("fetch failed before any new message arrived")
			}
			if !strings.HasPrefix(string(m.Value), "new") || m.Pos.Offset < 3 {
				t.Fatalf("start=last fetched %+v %q, want a message produced after joining", m.Pos, m.Value)
			}
			return
		case <-tick.C:
			kafkatest.Produce(t, f.brokers, f.topic, []byte("new"))
		}
	}
}

func TestCloseEndsBlockedFetch(t *testing.T) {
	f := newFixture(t, 1)
	s := f.open(t)
	errc := make(chan error, 1)
	go func() {
		for {
			m, err := s.Fetch(context.Background())
			if err != nil || m.Assignment == nil {
				errc <- err
				return
			}
		}
	}()
	time.Sleep(500 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, io.EOF) {
			t.Errorf("blocked fetch returned %v after close, want io.EOF", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("fetch still blocked 30s after close")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

func TestMetricsShareRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := Config{Brokers: []string{"127.0.0.1:1"}, Topic: "t"}
	for range 2 {
		s, err := New(cfg, discard, reg)
		if err != nil {
			t.Fatalf("new source on a shared registry: %v", err)
		}
		s.Close()
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if n := len(mf.GetMetric()); n != 0 {
			t.Errorf("closed sources left %d series of %s", n, mf.GetName())
		}
	}
}

// Issue 12, scale-out: members of one group on a 6-partition topic. Each
// generation starts with the member's assignment, before any of its
// messages; a second member takes half the partitions and gives them back
// when it leaves; a commit of a partition the member lost is skipped (its
// new owner commits it), and a partition that comes back is read from the
// group's committed offset.
func TestRebalance(t *testing.T) {
	const parts = 6
	f := newFixture(t, parts)
	var recs []kafkatest.Record
	for p := range parts {
		for i := range 5 {
			recs = append(recs, kafkatest.Record{Partition: p, Value: fmt.Appendf(nil, "p%d-%d", p, i)})
		}
	}
	kafkatest.ProduceRecords(t, f.brokers, f.topic, recs...)
	a := f.open(t)
	if got := nextAssignment(t, a, 60*time.Second); len(got) != parts {
		t.Fatalf("the only member was assigned %v, want all %d partitions", got, parts)
	}
	first := fetchN(t, a, 5*parts)
	var lastOf [parts]pipeline.Position
	for _, m := range first {
		lastOf[m.Pos.Partition] = m.Pos
	}
	commit := func(s *Source, ps ...pipeline.Position) {
		t.Helper()
		if err := s.Commit(t.Context(), ps); err != nil {
			t.Fatal(err)
		}
	}
	at := func(p int, off int64) pipeline.Position {
		pos := lastOf[p]
		pos.Offset = off
		return pos
	}
	for p := range parts {
		commit(a, at(p, 2)) // handled up to offset 2 of every partition
	}

	b := f.open(t)
	gotB := nextAssignment(t, b, 60*time.Second)
	gotA := nextAssignment(t, a, 60*time.Second)
	if len(gotA)+len(gotB) != parts || len(gotA) == 0 || len(gotB) == 0 {
		t.Fatalf("after the second member joined: %v and %v, want the %d partitions split", gotA, gotB, parts)
	}
	for _, p := range gotB {
		if slices.Contains(gotA, p) {
			t.Fatalf("partition %d assigned to both members (%v, %v)", p, gotA, gotB)
		}
	}
	// b reads its partitions from the group's committed offset 2.
	for _, m := range fetchN(t, b, 3*len(gotB)) {
		if !slices.Contains(gotB, m.Pos.Partition) || m.Pos.Offset < 2 {
			t.Fatalf("b fetched %+v, want offsets from 2 of %v", m.Pos, gotB)
		}
	}
	// a lost gotB: its commit of them is skipped; b's counts.
	lost := gotB[0]
	commit(a, at(lost, 5))
	commit(b, at(lost, 4))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := nextAssignment(t, a, 60*time.Second); len(got) != parts {
		t.Fatalf("after the second member left a has %v, want all %d", got, parts)
	}
	// The partitions come back from their committed offsets: 4 for the
	// one b committed, 2 for the others (a's skipped commit did not move it).
	seen := map[int]int64{}
	for _, m := range fetchN(t, a, (parts-1)*3+1) {
		if _, ok := seen[m.Pos.Partition]; !ok {
			seen[m.Pos.Partition] = m.Pos.Offset
		}
	}
	for p := range parts {
		want := int64(2)
		if p == lost {
			want = 4
		}
		if seen[p] != want {
			t.Errorf("partition %d came back from offset %d, want %d (the committed one)", p, seen[p], want)
		}
	}
}
