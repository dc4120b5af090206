package api

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Times a request may name: ClickHouse's DateTime64 holds 1900..2299, the
// stores keep nothing before the Unix epoch.
var (
	minTime = time.Unix(0, 0).UTC()
	maxTime = time.Date(2299, 12, 31, 0, 0, 0, 0, time.UTC)
)

// errTimeSyntax is the reason given for a time in neither form.
var errTimeSyntax = errors.New("want RFC 3339 (2026-11-03T15:04:05Z) or relative to now (now, -15m, -1h, -7d)")

// parseTime reads a from/to value: RFC 3339, "now", or a negative offset
// from now ("-90s", "-15m", "-1h", "-7d", "-2w"). The result is UTC,
// truncated to milliseconds (the stored precision).
func parseTime(s string, now time.Time) (time.Time, error) {
	var t time.Time
	switch {
	case s == "now":
		t = now
	case strings.HasPrefix(s, "-"):
		d, err := parseSpan(s[1:])
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
	if t.Before(minTime) || t.After(maxTime) {
		return time.Time{}, fmt.Errorf("%s is outside %d..%d", t.Format(time.RFC3339), minTime.Year(), maxTime.Year())
	}
	return t, nil
}

var spanUnits = map[byte]time.Duration{
	's': time.Second, 'm': time.Minute, 'h': time.Hour,
	'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour,
}

// parseSpan reads a positive span: N followed by s, m, h, d or w (N up to
// 6 digits), or any Go duration ("1h30m").
func parseSpan(s string) (time.Duration, error) {
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
