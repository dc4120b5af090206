package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcplens/mcplens/queries"
)

// queries.SearchParams has no session filter, so /api/v1/exchanges with
// session=ID walks that session's timeline (queries.Store.SessionTimeline,
// in the same (ts, exchange_id) order as Search) and applies the other
// filters here. Its cursors are the API's own: the timeline's cursor and
// how many rows of that timeline page were already consumed.

// sessionCursorPrefix marks the API's session cursors.
const sessionCursorPrefix = "s1."

// Variables for the tests' sake.
var (
	// sessionPage is how many timeline rows one store call reads; a
	// cursor's skip counts rows of a page of this size.
	sessionPage = 500
	// sessionScan bounds the timeline rows one request reads; past it the
	// page ends early (fewer rows than limit) with a cursor to go on.
	sessionScan = 20_000
)

type sessionCursor struct {
	Store string `json:"c"`
	Skip  int    `json:"k"`
}

func (c sessionCursor) String() string {
	b, _ := json.Marshal(c)
	return sessionCursorPrefix + base64.RawURLEncoding.EncodeToString(b)
}

func parseSessionCursor(s string) (sessionCursor, error) {
	var c sessionCursor
	if s == "" {
		return c, nil
	}
	raw, ok := strings.CutPrefix(s, sessionCursorPrefix)
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if !ok || err != nil || json.Unmarshal(b, &c) != nil || c.Skip < 0 || c.Skip >= sessionPage {
		return c, fmt.Errorf("%w: cursor: not a cursor of a session search", queries.ErrInvalid)
	}
	return c, nil
}

// searchSession returns up to sp.Limit exchanges of one session matching
// sp's filters, and the cursor of the next page ("" at the end).
func (a *API) searchSession(ctx context.Context, sp queries.SearchParams, session string) ([]queries.SearchRow, string, error) {
	cur, err := parseSessionCursor(sp.Cursor)
	if err != nil {
		return nil, "", err
	}
	q := strings.ToLower(sp.Q)
	keep := func(r *queries.TimelineRow) bool {
		return (sp.Server == "" || r.Server == sp.Server) && (sp.Client == "" || r.ClientName == sp.Client) &&
			(sp.Tool == "" || r.ToolName == sp.Tool) && (sp.Method == "" || r.Method == sp.Method) &&
			(sp.Outcome == "" || r.Outcome == sp.Outcome) && (sp.Layer == "" || r.Layer == sp.Layer) &&
			(sp.ErrorClass == "" || r.ErrorClass == sp.ErrorClass) && (sp.Evidence == "" || r.Evidence == sp.Evidence) &&
			(q == "" || strings.Contains(strings.ToLower(r.ErrorMessage), q))
	}
	var out []queries.SearchRow
	for scanned := 0; ; {
		page, err := a.store.SessionTimeline(ctx, queries.SessionParams{
			SessionID: session, From: sp.From, To: sp.To, Limit: sessionPage, Cursor: cur.Store,
		})
		if err != nil {
			return nil, "", err
		}
		for i := cur.Skip; i < len(page.Rows); i++ {
			r := &page.Rows[i]
			if !keep(r) {
				continue
			}
			out = append(out, searchRow(r, session))
			if len(out) == sp.Limit {
				switch {
				case i+1 < len(page.Rows):
					return out, sessionCursor{Store: cur.Store, Skip: i + 1}.String(), nil
				case page.Next != "":
					return out, sessionCursor{Store: page.Next}.String(), nil
				}
				return out, "", nil
			}
		}
		if page.Next == "" {
			return out, "", nil
		}
		cur = sessionCursor{Store: page.Next}
		if scanned += len(page.Rows); scanned >= sessionScan {
			return out, cur.String(), nil
		}
	}
}

func searchRow(r *queries.TimelineRow, session string) queries.SearchRow {
	return queries.SearchRow{
		ExchangeID: r.ExchangeID, TS: r.TS, DurationMS: r.DurationMS, Server: r.Server,
		ClientName: r.ClientName, SessionID: session, Method: r.Method, ToolName: r.ToolName,
		HTTPStatus: r.HTTPStatus, Layer: r.Layer, Outcome: r.Outcome, ErrorClass: r.ErrorClass,
		JSONRPCCode: r.JSONRPCCode, ErrorMessage: r.ErrorMessage, RetryAdvice: r.RetryAdvice,
		Attempt: r.Attempt, ChainID: r.ChainID, Evidence: r.Evidence,
	}
}
