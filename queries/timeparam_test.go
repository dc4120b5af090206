package queries

import (
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC)
	f := func(in string, want time.Time, ok bool) {
		t.Helper()
		got, err := ParseTime(in, now)
		if (err == nil) != ok || (ok && !got.Equal(want)) {
			t.Errorf("ParseTime(%q) = %s, %v; want %s, ok %v", in, got, err, want, ok)
		}
	}
	ms := now.Truncate(time.Millisecond)
	f("now", ms, true)
	f("-15m", ms.Add(-15*time.Minute), true)
	f("-1h", ms.Add(-time.Hour), true)
	f("-7d", ms.Add(-7*24*time.Hour), true)
	f("-2w", ms.Add(-14*24*time.Hour), true)
	f("-90s", ms.Add(-90*time.Second), true)
	f("-1h30m", ms.Add(-90*time.Minute), true)
	f("2026-11-03T15:04:05Z", time.Date(2026, 11, 3, 15, 4, 5, 0, time.UTC), true)
	f("2026-11-03T15:04:05.1234567+01:00", time.Date(2026, 11, 3, 14, 4, 5, 123e6, time.UTC), true)
	for _, bad := range []string{"", "Now", "1h", "+1h", "--1h", "-0h", "-h", "-1y", "-1.5d", "-1000000d", "-99999999999h",
		"2026-11-03", "2026-11-03 15:04:05", "1969-12-31T23:59:59Z", "2300-01-01T00:00:00Z", "-+1h", "- 1h", "-1h-1h"} {
		f(bad, time.Time{}, false)
	}
}

func TestParseSpan(t *testing.T) {
	f := func(in string, want time.Duration) {
		t.Helper()
		got, err := ParseSpan(in)
		if (err == nil) != (want > 0) || got != want {
			t.Errorf("ParseSpan(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	f("31d", 31*24*time.Hour)
	f("24h", 24*time.Hour)
	f("2w", 14*24*time.Hour)
	f("1h30m", 90*time.Minute)
	f("0d", 0)
	f("-1d", 0)
	f("+1d", 0)
	f("d", 0)
	f("", 0)
	f("1y", 0)
	if FormatSpan(31*24*time.Hour) != "31d" || FormatSpan(24*time.Hour) != "24h" || FormatSpan(90*time.Second) != "1m30s" {
		t.Error("FormatSpan")
	}
}

// FuzzParseTime: from/to come from any client.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"now", "-15m", "-1h", "-7d", "-2w", "-1h30m", "2026-11-03T15:04:05Z", "2026-11-03T15:04:05.999999999+14:00", "-9999999d", ""} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTime(s, now)
		if err != nil {
			return
		}
		if got.Before(MinTime) || got.After(MaxTime) || got.Location() != time.UTC || got.Nanosecond()%1e6 != 0 {
			t.Errorf("ParseTime(%q) = %s", s, got)
		}
	})
}
