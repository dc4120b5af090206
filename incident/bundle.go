// Package incident builds postmortem bundles: one tar.gz archive with
// everything an engineer attaches to a postmortem about a time range (and
// optionally one server): a Markdown summary of counts per layer and
// outcome, every exchange with its classification and the evidence that
// decided it, the redacted bodies of the failed ones, their retry and MRTR
// chains, and the timeline of every affected session.
package incident

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/schema"
)

// Params selects what a bundle covers.
type Params struct {
	From, To time.Time
	Server   string // "" for every server
	// MaxExchanges bounds the exchanges in the bundle; the summary says
	// when the range held more. Default 2,000.
	MaxExchanges int
	// Now stamps the bundle; nil means time.Now.
	Now func() time.Time
}

// DefaultMaxExchanges is the default of Params.MaxExchanges.
const DefaultMaxExchanges = 2000

// Evidence is what decided an exchange's classification.
type Evidence struct {
	Rule              string           `json:"rule"`
	HTTPStatus        int              `json:"http_status"`
	ContentType       string           `json:"content_type"`
	Transport         string           `json:"transport"`
	SSEEvents         int              `json:"sse_events"`
	JSONRPCID         string           `json:"jsonrpc_id"`
	JSONRPCCode       classify.NullInt `json:"jsonrpc_code"`
	ErrorMessage      string           `json:"error_message"`
	RetryAfterS       classify.NullInt `json:"retry_after_s"`
	BodyTruncated     bool             `json:"body_truncated"`
	StreamCloseReason string           `json:"stream_close_reason"`
	TransportError    string           `json:"transport_error"`
	NoResponseReason  string           `json:"no_response_reason,omitempty"`
}

// Entry is one exchange of the bundle.
type Entry struct {
	Exchange schema.Exchange `json:"exchange"`
	Evidence Evidence        `json:"evidence"`
}

func evidenceOf(x *schema.Exchange) Evidence {
	return Evidence{
		Rule: x.Rule, HTTPStatus: x.HTTPStatus, ContentType: x.ContentType, Transport: string(x.Transport),
		SSEEvents: x.SSEEvents, JSONRPCID: x.JSONRPCID, JSONRPCCode: x.JSONRPCCode, ErrorMessage: x.ErrorMessage,
		RetryAfterS: x.RetryAfterS, BodyTruncated: x.BodyTruncated, StreamCloseReason: x.CloseReason,
		TransportError: x.TransportError, NoResponseReason: x.NoResponseReason,
	}
}

// failed reports whether an exchange belongs in the bundle's detail: any
// outcome but a success.
func failed(outcome string) bool {
	switch classify.Outcome(outcome) {
	case classify.Success, classify.ToolSuccess, classify.Accepted:
		return false
	}
	return true
}

// Write builds the bundle from the store and writes it to w as tar.gz.
func Write(ctx context.Context, store queries.Store, p Params, w io.Writer) error {
	_, err := WriteSummary(ctx, store, p, w)
	return err
}

// Summary says what a bundle holds, for the CLI's closing line.
type Summary struct {
	Exchanges int  // exchanges in the bundle
	Sessions  int  // session timelines
	Truncated bool // the range held more than MaxExchanges
}

// WriteSummary is Write, and says what the bundle holds.
func WriteSummary(ctx context.Context, store queries.Store, p Params, w io.Writer) (Summary, error) {
	if p.MaxExchanges <= 0 {
		p.MaxExchanges = DefaultMaxExchanges
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	c, err := collect(ctx, store, p)
	if err != nil {
		return Summary{}, err
	}
	sum := Summary{Exchanges: len(c.entries), Sessions: len(c.sessionOrder), Truncated: c.truncated}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	stamp := p.Now().UTC()
	add := func(name string, data []byte) error {
		hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: stamp, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("bundle %s: %w", name, err)
		}
		_, err := tw.Write(data)
		return err
	}
	files := c.files(p, stamp)
	for _, f := range files {
		if err := add(f.name, f.data); err != nil {
			return sum, err
		}
	}
	return sum, errors.Join(tw.Close(), gz.Close())
}

type file struct {
	name string
	data []byte
}

func ndjson[T any](rows []T) []byte {
	var out []byte
	for i := range rows {
		b, err := json.Marshal(&rows[i])
		if err != nil {
			continue
		}
		out = append(out, b...)
		out = append(out, '\n')
	}
	return out
}

// files lays the collected material out as the archive's files, in a
// stable order.
func (c *collected) files(p Params, stamp time.Time) []file {
	out := []file{{"README.md", []byte(c.summary(p, stamp))}, {"exchanges.ndjson", ndjson(c.entries)}}
	if len(c.chains) > 0 {
		ids := make([]string, 0, len(c.chains))
		for id := range c.chains {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		var rows []map[string]any
		for _, id := range ids {
			rows = append(rows, map[string]any{"chain_id": id, "links": c.chains[id]})
		}
		out = append(out, file{"chains.ndjson", ndjson(rows)})
	}
	for _, b := range c.bodies {
		data, err := json.MarshalIndent(b, "", "  ")
		if err == nil {
			out = append(out, file{"bodies/" + safeName(b.ExchangeID) + ".json", data})
		}
	}
	for _, s := range c.sessionOrder {
		out = append(out, file{"sessions/" + safeName(s) + ".ndjson", ndjson(c.sessions[s])})
	}
	return out
}

// safeName keeps ids usable as file names in any archive tool.
func safeName(s string) string {
	b := []byte(s)
	for i, ch := range b {
		ok := ch == '-' || ch == '_' || ch == '.' || ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z'
		if !ok {
			b[i] = '_'
		}
	}
	if len(b) > 120 {
		b = b[:120]
	}
	if len(b) == 0 || b[0] == '.' {
		return "_" + string(b)
	}
	return string(b)
}
