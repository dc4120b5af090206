package api

import (
	"strings"
	"testing"
	"time"
)

// FuzzParseTime: from/to come from any client.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"now", "-15m", "-1h", "-7d", "-2w", "-1h30m", "2026-11-03T15:04:05Z", "2026-11-03T15:04:05.999999999+14:00", "-9999999d", ""} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseTime(s, now)
		if err != nil {
			return
		}
		if got.Before(minTime) || got.After(maxTime) || got.Location() != time.UTC || got.Nanosecond()%1e6 != 0 {
			t.Errorf("parseTime(%q) = %s", s, got)
		}
	})
}

// FuzzTokens: the tokens file is operator input, but its errors must never
// echo a token.
func FuzzTokens(f *testing.F) {
	f.Add("plain-token-0123456789 scopes=read name=dash\n# c\nsha256:" + strings.Repeat("ab", 32) + " scopes=bodies")
	f.Add("x scopes=read")
	f.Fuzz(func(t *testing.T, s string) {
		var tk Tokens
		err := tk.ReadTokens(strings.NewReader(s), "f")
		if err == nil {
			return
		}
		for _, line := range strings.Split(s, "\n") {
			fields := strings.Fields(line)
			if len(fields) > 0 && len(fields[0]) >= MinTokenLength && !strings.HasPrefix(fields[0], "#") &&
				strings.Count(s, fields[0]) == 1 && strings.Contains(err.Error(), fields[0]) {
				t.Errorf("error %q echoes the token %q", err, fields[0])
			}
		}
	})
}
