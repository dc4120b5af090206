package pipeline

import (
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// tsMinute.parse answers only what time.Parse answers the same: over
// valid times in and around the remembered minute and every one-byte
// change of them, whatever it accepts equals time.Parse's UTC time.
func TestTSMinuteMatchesTimeParse(t *testing.T) {
	var m tsMinute
	seed := "2026-11-05T12:34:56.789Z"
	t0, err := time.Parse(time.RFC3339Nano, seed)
	if err != nil {
		t.Fatal(err)
	}
	m.note([]byte(seed), t0.UTC())
	if m.base.IsZero() {
		t.Fatal("the usual form was not remembered")
	}
	rnd := rand.New(rand.NewSource(1))
	var inputs []string
	for range 2000 {
		tm := t0.Truncate(time.Minute).Add(time.Duration(rnd.Int63n(int64(3 * time.Minute)))).Add(-time.Minute)
		for _, layout := range []string{time.RFC3339Nano, time.RFC3339, "2006-01-02T15:04:05.000Z", "2006-01-02T15:04:05.000000000Z", "2006-01-02T15:04:05.0Z"} {
			inputs = append(inputs, tm.UTC().Format(layout))
		}
	}
	inputs = append(inputs, "2026-11-05T12:34:60Z", "2026-11-05T12:34:5Z", "2026-11-05T12:34:56.Z", "2026-11-05T12:34:56.1234567890Z",
		"2026-11-05T12:34:56,5Z", "2026-11-05T12:34:56.5z", "2026-11-05T12:34:56.5+00:00", "2026-11-05T12:34:56.-5Z", "2026-11-05T12:34:5a.5Z")
	const alphabet = "0123456789.:-+TZz, \x00\xff"
	accepted, n := 0, 0
	for _, in := range inputs {
		cands := []string{in}
		for i := range len(in) {
			b := []byte(in)
			b[i] = alphabet[rnd.Intn(len(alphabet))]
			cands = append(cands, string(b), in[:i]+in[i+1:])
		}
		for _, c := range cands {
			n++
			fast, ok := m.parse([]byte(c))
			if !ok {
				continue
			}
			accepted++
			slow, err := time.Parse(time.RFC3339Nano, c)
			if err != nil {
				t.Fatalf("%q: parsed to %v, time.Parse refuses it: %v", c, fast, err)
			}
			if !fast.Equal(slow) || fast.Location() != time.UTC {
				t.Fatalf("%q: %v, time.Parse %v", c, fast, slow.UTC())
			}
		}
	}
	if accepted < len(inputs)/3 {
		t.Fatalf("only %d of %d inputs took the remembered minute", accepted, n)
	}
	t.Logf("%d of %d inputs parsed from the remembered minute, all as time.Parse", accepted, n)
}

// Lines decoded one after the other get the ts a fresh decoder gives
// each alone, across minute, hour and day boundaries and odd forms.
func TestDecodeTSSequence(t *testing.T) {
	d := NewDecoder()
	base := time.Date(2026, 12, 31, 23, 58, 59, 0, time.UTC)
	var tss []string
	for i := range 400 {
		tm := base.Add(time.Duration(i) * 777 * time.Millisecond)
		tss = append(tss, tm.Format(time.RFC3339Nano))
		if i%7 == 0 {
			tss = append(tss, tm.Format("2006-01-02T15:04:05.000000Z"), tm.Format("2006-01-02T15:04:05-07:00"), tm.Format("2006-01-02T15:04:60Z"))
		}
	}
	for i, ts := range tss {
		line := []byte(fmt.Sprintf(`{"v":1,"kind":"request","event_id":"e%d","source":"gateway","ts":%q,"request_body":"{}"}`, i, ts))
		got, gerr := d.Decode(line, Position{Stream: "s", Offset: int64(i)})
		want, werr := NewDecoder().Decode(line, Position{Stream: "s", Offset: int64(i)})
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Fatalf("%q: error %v, alone %v", ts, gerr, werr)
		}
		if !got.TS.Equal(want.TS) || got.TS.Location() != want.TS.Location() {
			t.Fatalf("%q: ts %v, alone %v", ts, got.TS, want.TS)
		}
	}
}
