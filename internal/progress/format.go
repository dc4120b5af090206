package progress

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcplens/mcplens/classify"
)

// line joins words with single spaces.
type line struct{ strings.Builder }

func (l *line) add(s string) {
	if l.Len() > 0 && !strings.HasPrefix(s, ",") {
		l.WriteByte(' ')
	}
	l.WriteString(s)
}

func (l *line) addf(format string, args ...any) { l.add(fmt.Sprintf(format, args...)) }

// count renders n with thousands separators: 1,234,567.
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// bytesHuman renders n in B, KiB, MiB or GiB with one decimal.
func bytesHuman(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %s", v, [...]string{"KiB", "MiB", "GiB", "TiB"}[i])
}

// outcomes renders " (TOOL_SUCCESS 9,000, JSONRPC_ERROR 12, ...)" with the
// most frequent first, at most top of them (0: all) and a count of the rest.
func outcomes(m map[classify.Outcome]int64, top int) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]classify.Outcome, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b classify.Outcome) int {
		return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b))
	})
	parts := make([]string, 0, len(keys))
	for i, k := range keys {
		if top > 0 && i == top {
			parts = append(parts, fmt.Sprintf("%d more", len(keys)-top))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s", k, count(m[k])))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// roundDuration keeps a duration readable: 850ms, 4.2s, 1m52s, 2h5m.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond)
	case d < time.Minute:
		return d.Round(100 * time.Millisecond)
	case d < time.Hour:
		return d.Round(time.Second)
	}
	return d.Round(time.Minute)
}
