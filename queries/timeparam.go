package queries

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MinTime and MaxTime bound the times a from/to value may name: ClickHouse's DateTime64 holds 1900..2299, the
// stores keep nothing before the Unix epoch.
var (
	MinTime = time.Unix(0, 0).UTC()
	MaxTime = time.Date(2299, 12, 31, 0, 0, 0, 0, time.UTC)
)

// errTimeSyntax is the reason given for a time in neither form.
var errTimeSyntax = errors.New("want RFC 3339 (2026-11-03T15:04:05Z) or relative to now (now, -15m, -1h, -7d)")

// ParseTime reads a from/to value: RFC 3339, "now", or a negative offset
// from now ("-90s", "-15m", "-1h", "-7d", "-2w"). The result is UTC,
// truncated to milliseconds (the stored precision).
func ParseTime(s string, now time.Time) (time.Time, error) {
	var t time.Time
	switch {
	case s == "now":
		t = now
	case strings.HasPrefix(s, "-"):
		d, err := ParseSpan(s[1:])
		if err != nil {
			return time.Time{}, errTimeSyntax
		}
		t = now.Add(-d)
	default:
		var err error
		if t, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return time.Time{}, errTimeSyntax
		}
	}
	t = t.UTC().Truncate(time.Millisecond)
	if t.Before(MinTime) || t.After(MaxTime) {
		return time.Time{}, fmt.Errorf("%s is outside %d..%d", t.Format(time.RFC3339), MinTime.Year(), MaxTime.Year())
	}
	return t, nil
}

var spanUnits = map[byte]time.Duration{
	's': time.Second, 'm': time.Minute, 'h': time.Hour,
	'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour,
}

// ParseSpan reads a positive span: N followed by s, m, h, d or w (N up to
// 6 digits), or any Go duration ("1h30m").
func ParseSpan(s string) (time.Duration, error) {
	if n := len(s); n >= 2 && n <= 7 && s[0] >= '0' && s[0] <= '9' {
		if unit, ok := spanUnits[s[n-1]]; ok {
			if v, err := strconv.Atoi(s[:n-1]); err == nil && v > 0 {
				return time.Duration(v) * unit, nil
			}
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || s[0] < '0' || s[0] > '9' {
		return 0, fmt.Errorf("span %q: want a positive duration such as 90s, 15m, 1h, 7d or 2w", s)
	}
	return d, nil
}

// FormatSpan writes a span the way ParseSpan reads it: "31d", "24h",
// "15m", else a Go duration.
func FormatSpan(d time.Duration) string {
	switch {
	case d >= 48*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d > 0 && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d > 0 && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}
