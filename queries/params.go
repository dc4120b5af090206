package queries

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcplens/mcplens/classify"
)

// Limits of a listing.
const (
	DefaultLimit = 100
	MaxLimit     = 10_000
)

// Filter is what most questions take: a time range of exchange ts
// ([From, To)), optional dimension filters ("" matches all) and a row
// limit. The zero To means now, the zero From one hour before To, the zero
// Limit DefaultLimit.
type Filter struct {
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	Server string    `json:"server"`
	Client string    `json:"client"`
	Tool   string    `json:"tool"`
	Method string    `json:"method"`
	// Evidence keeps the exchanges whose record held that much:
	// bodies, envelope or status_only (classify.Evidence); "" keeps all.
	Evidence string `json:"evidence"`
	Limit    int    `json:"limit"`
}

// EvidenceLevels are the values of Filter.Evidence, "" aside.
var EvidenceLevels = []string{
	string(classify.EvidenceBodies), string(classify.EvidenceEnvelope), string(classify.EvidenceStatusOnly),
}

// ErrInvalid is wrapped by errors about invalid question parameters, which
// the API reports as a bad request.
var ErrInvalid = errors.New("invalid parameters")

// normalized returns the filter with defaults applied, times truncated to
// milliseconds (the stored precision) and in UTC.
func (f Filter) normalized(now func() time.Time) (Filter, error) {
	if f.To.IsZero() {
		f.To = now()
	}
	if f.From.IsZero() {
		f.From = f.To.Add(-time.Hour)
	}
	f.From, f.To = ms(f.From), ms(f.To)
	if !f.From.Before(f.To) {
		return f, fmt.Errorf("%w: from %s is not before to %s", ErrInvalid, f.From.Format(time.RFC3339Nano), f.To.Format(time.RFC3339Nano))
	}
	if f.Evidence != "" && !slices.Contains(EvidenceLevels, f.Evidence) {
		return f, fmt.Errorf("%w: evidence %q: want one of %s", ErrInvalid, f.Evidence, strings.Join(EvidenceLevels, ", "))
	}
	switch {
	case f.Limit == 0:
		f.Limit = DefaultLimit
	case f.Limit < 0 || f.Limit > MaxLimit:
		return f, fmt.Errorf("%w: limit %d outside 1..%d", ErrInvalid, f.Limit, MaxLimit)
	}
	return f, nil
}

func ms(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// GroupBy values of Breakdown and Leaderboard.
const (
	GroupNone   = ""
	GroupServer = "server"
	GroupClient = "client"
	GroupTool   = "tool"
	GroupMethod = "method"
	// GroupErrorClass groups a breakdown by error class ('' for the
	// exchanges that have none); leaderboards do not take it.
	GroupErrorClass = "error_class"
)

// BreakdownParams selects a breakdown. Bucket 0 makes one bucket over the
// whole range; otherwise buckets are aligned to the Unix epoch and must be
// whole seconds. GroupBy is one of the Group* values.
type BreakdownParams struct {
	Filter
	Bucket  time.Duration `json:"bucket"`
	GroupBy string        `json:"group_by"`
}

// Leaderboard orders.
const (
	OrderVolume = "volume"
	OrderErrors = "errors"
	OrderP99    = "p99"
)

// LeaderboardParams selects a leaderboard: GroupBy is server (default),
// client or tool; OrderBy is volume (default), errors or p99.
type LeaderboardParams struct {
	Filter
	GroupBy string `json:"group_by"`
	OrderBy string `json:"order_by"`
}

// RetriesParams selects unknown-side-effect retries. ChainWindow is how
// far before From earlier attempts are looked for; default 1h.
type RetriesParams struct {
	Filter
	ChainWindow time.Duration `json:"chain_window"`
}

// SearchParams selects exchanges: the filter's dimensions plus outcome,
// layer, error class and a case-insensitive substring of the error
// message. Cursor is the Next of the previous page.
type SearchParams struct {
	Filter
	Outcome    string `json:"outcome"`
	Layer      string `json:"layer"`
	ErrorClass string `json:"error_class"`
	Q          string `json:"q"`
	Cursor     string `json:"cursor"`
}

// SessionParams selects one session's timeline. The zero From and To
// span the last 30 days up to now.
type SessionParams struct {
	SessionID string    `json:"session_id"`
	From      time.Time `json:"from"`
	To        time.Time `json:"to"`
	Limit     int       `json:"limit"`
	Cursor    string    `json:"cursor"`
}

// cursor is the (ts, exchange_id) a page starts after.
type cursor struct {
	ts time.Time
	id string
}

func (c cursor) String() string {
	raw := strconv.FormatInt(c.ts.UnixMilli(), 10) + ":" + c.id
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func parseCursor(s string) (cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, fmt.Errorf("%w: cursor: %v", ErrInvalid, err)
	}
	msStr, id, ok := strings.Cut(string(raw), ":")
	n, err := strconv.ParseInt(msStr, 10, 64)
	if !ok || err != nil || id == "" {
		return cursor{}, fmt.Errorf("%w: cursor %q", ErrInvalid, s)
	}
	return cursor{ts: time.UnixMilli(n).UTC(), id: id}, nil
}

// after returns the (ts, id) a page starts after: the cursor, or just
// before From on the first page (ids are never empty).
func after(from time.Time, c string) (time.Time, string, error) {
	if c == "" {
		return from, "", nil
	}
	cur, err := parseCursor(c)
	if err != nil {
		return time.Time{}, "", err
	}
	if cur.ts.Before(from) {
		return time.Time{}, "", fmt.Errorf("%w: cursor before the range", ErrInvalid)
	}
	return cur.ts, cur.id, nil
}

func oneOf(name, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("%w: %s %q: want one of %q", ErrInvalid, name, v, allowed)
}
