// Package redact hides secrets in log events before anything is stored or
// logged: header values, JSON keys at any depth and escaping, token shapes
// in bodies and URLs. It also caps bodies at a UTF-8 boundary. A
// [Redactor] is safe for concurrent use once built.
package redact

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// Redacted replaces every secret the [Redactor] finds.
const Redacted = "[REDACTED]"

// DefaultMaxBodyBytes is the body cap of a [Redactor] when none is set.
const DefaultMaxBodyBytes = 256 << 10

// Config says what a [Redactor] hides. The zero value means the
// defaults.
type Config struct {
	// Headers are header names whose values are replaced whole, added to
	// DefaultHeaders. Case does not matter.
	Headers []string
	// Keys are JSON object keys whose string values are replaced, at any
	// depth and any level of string escaping, added to DefaultKeys.
	// Matched ignoring case, '_' and '-' ("apiKey" matches "api_key").
	Keys []string
	// Patterns are regular expressions (RE2 syntax) whose matches in bodies
	// and in the values of other headers (but those classification reads:
	// content-type, accept, mcp-*, last-event-id, retry-after,
	// www-authenticate) are replaced, added to the default
	// token shapes (bearer tokens, JWTs, OpenAI/Anthropic, GitHub, Slack,
	// AWS and Google keys).
	Patterns []string
	// NoDefaults drops the default headers, keys and patterns: only the
	// ones above apply.
	NoDefaults bool
	// MaxBodyBytes caps each body after redaction, at a UTF-8 boundary, and
	// sets BodyTruncated when it cuts. Default 256 KiB; negative: no cap.
	MaxBodyBytes int
}

// DefaultHeaders are the headers always redacted unless NoDefaults.
var DefaultHeaders = []string{"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key"}

// DefaultKeys are the JSON keys whose string values are always
// redacted unless NoDefaults.
var DefaultKeys = []string{
	"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key",
	"access_token", "refresh_token", "id_token", "api_key", "apikey", "client_secret",
	"password", "passwd", "secret", "token", "auth_token", "private_key",
}

// redactPattern is a regexp and the literals one of which any match
// contains: when none is in the text, the regexp does not run.
type redactPattern struct {
	re      *regexp.Regexp
	repl    string   // expansion template
	hints   []string // for configured patterns: the literal prefix, if any
	anchors []anchor // for default patterns: found by one scan for all
	// check, when set, decides whether a match is a secret: it gets the
	// match's last submatch, which alone is replaced (by Redacted).
	check func(secret string) bool
}

// anchor is a pattern's literal found through its rarest byte, lit[at]:
// one pass over the text looks up each byte in a table. A fold anchor
// matches in any letter case.
type anchor struct {
	lit  string
	at   int
	fold bool
}

var defaultRedactPatterns = []struct {
	expr, repl string
	anchors    []anchor
}{
	// Bearer tokens in any letter case: loggers and people write
	// "authorization: bearer <token>" as often as the canonical form.
	{`(?i)(\bbearer\s+)[A-Za-z0-9\-._~+/]{16,}=*`, "${1}" + Redacted, []anchor{{lit: "bearer", at: 0, fold: true}}},
	{`\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*`, Redacted, []anchor{{lit: "eyJ", at: 2}}},
	{`\bsk-[A-Za-z0-9_-]{20,}`, Redacted, []anchor{{lit: "sk-", at: 2}}},
	{`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})`, Redacted,
		[]anchor{{lit: "ghp_", at: 3}, {lit: "gho_", at: 3}, {lit: "ghu_", at: 3}, {lit: "ghs_", at: 3}, {lit: "ghr_", at: 3}, {lit: "github_pat_", at: 6}}},
	// Slack tokens are found by their '-', which the pass for sk- keys
	// makes anyway, rather than by 'x', common in text.
	{`\bxox[abpr]-[A-Za-z0-9-]{10,}`, Redacted, []anchor{{lit: "xoxa-", at: 4}, {lit: "xoxb-", at: 4}, {lit: "xoxp-", at: 4}, {lit: "xoxr-", at: 4}}},
	// AWS and Google keys share their first byte, so one pass finds both.
	{`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`, Redacted, []anchor{{lit: "AKIA", at: 0}, {lit: "ASIA", at: 0}}},
	{`\bAIza[0-9A-Za-z_-]{35}`, Redacted, []anchor{{lit: "AIza", at: 0}}},
}

// basicPattern finds HTTP Basic credentials in any letter case; a match
// is redacted only when its base64 decodes to "user:password", so "basic
// information" stays readable.
var basicPattern = redactPattern{
	re:      regexp.MustCompile(`(?i)\bbasic\s+([A-Za-z0-9+/]{4,}={0,2})`),
	anchors: []anchor{{lit: "basic", at: 0, fold: true}},
	check:   isBasicCredential,
}

// isBasicCredential reports whether s is the base64 of "user:password".
func isBasicCredential(s string) bool {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
	}
	return err == nil && bytes.IndexByte(b, ':') > 0 && utf8.Valid(b)
}

// anchoredHint is one entry of the anchor table: the literal and the
// pattern it stands for.
type anchoredHint struct {
	anchor
	pat int
}

// Redactor hides credentials in events before they are stored: values of
// sensitive headers, string values of sensitive JSON keys, and token shapes
// anywhere in bodies and other header values; then it caps bodies. Text
// without a pattern's literal never reaches the regexp, so clean bodies cost
// a few substring scans. A Redactor is immutable and safe for concurrent
// use; build it with [New].
type Redactor struct {
	headers     map[string]headerRule // by lower-case name; scanned if absent
	keys        map[string]bool       // normalized
	patterns    []redactPattern
	anchors     [256][]anchoredHint // by anchor byte, for patterns[:64]
	anchorBytes []byte              // the distinct keys of anchors
	maxBody     int

	// keyLens and keyFirst are the lengths and first bytes of the
	// normalized keys: most JSON keys fail them without a map lookup.
	keyLens  uint64
	keyFirst [256]bool
	// keyEnds holds the last two bytes of each normalized key, one bit
	// per pair: the walk back from a colon stops after two bytes of any
	// other key ("method", "params", "content"), where it used to read
	// the whole key.
	keyEnds [256 * 256 / 64]uint64
}

// endsKey reports whether some normalized key ends in the bytes a, b.
func (r *Redactor) endsKey(a, b byte) bool {
	w, bit := keyEnd(a, b)
	return r.keyEnds[w]&bit != 0
}

// keyEnd is the word and bit of keyEnds for a key ending in a, b.
func keyEnd(a, b byte) (int, uint64) {
	i := int(a)<<8 | int(b)
	return i / 64, 1 << (i % 64)
}

// New compiles cfg; it fails on an invalid pattern.
func New(cfg Config) (*Redactor, error) {
	r := &Redactor{headers: map[string]headerRule{}, keys: map[string]bool{}, maxBody: cfg.MaxBodyBytes}
	for _, name := range protocolHeaders {
		r.headers[name] = keepHeader
	}
	if r.maxBody == 0 {
		r.maxBody = DefaultMaxBodyBytes
	}
	headers, keys := cfg.Headers, cfg.Keys
	if !cfg.NoDefaults {
		headers = append(headers[:len(headers):len(headers)], DefaultHeaders...)
		keys = append(keys[:len(keys):len(keys)], DefaultKeys...)
		for _, p := range defaultRedactPatterns {
			r.patterns = append(r.patterns, redactPattern{re: regexp.MustCompile(p.expr), repl: p.repl, anchors: p.anchors})
		}
		r.patterns = append(r.patterns, basicPattern)
	}
	for _, h := range headers {
		r.headers[strings.ToLower(h)] = redactHeader // over keepHeader: configured by name
	}
	for _, k := range keys {
		var buf [maxSecretKeyLen]byte
		if n, ok := normalizeKey(buf[:], k); ok {
			r.keys[string(buf[:n])] = true
			r.keyLens |= 1 << n
			r.keyFirst[buf[0]] = true
			if n >= 2 {
				w, bit := keyEnd(buf[n-2], buf[n-1])
				r.keyEnds[w] |= bit
			}
		}
	}
	for _, expr := range cfg.Patterns {
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("compile redact pattern %q: %w", expr, err)
		}
		p := redactPattern{re: re, repl: Redacted}
		if prefix, _ := re.LiteralPrefix(); prefix != "" {
			p.hints = []string{prefix}
		}
		r.patterns = append(r.patterns, p)
	}
	for i, p := range r.patterns[:min(len(r.patterns), 64)] {
		for _, a := range p.anchors {
			if len(a.lit) < 2 || a.fold && a.lit != strings.ToLower(a.lit) {
				panic("redact: an anchor needs two bytes or more, a folded one in lower case: " + a.lit)
			}
			cs := []byte{a.lit[a.at]}
			if a.fold {
				cs = []byte{lower(a.lit[a.at]), lower(a.lit[a.at]) - 'a' + 'A'}
			}
			for _, c := range cs {
				if r.anchors[c] == nil {
					r.anchorBytes = append(r.anchorBytes, c)
				}
				r.anchors[c] = append(r.anchors[c], anchoredHint{a, i})
			}
		}
	}
	return r, nil
}

// Apply redacts ev's headers and bodies in place, then caps each body to
// MaxBodyBytes, setting BodyTruncated when it cuts.
func (r *Redactor) Apply(ev *schema.Event) {
	r.applyHeaders(ev.RequestHeaders)
	r.applyHeaders(ev.ResponseHeaders)
	ev.URL = r.URL(ev.URL)
	var cut bool
	ev.RequestBody, cut = r.capBody(r.Text(ev.RequestBody))
	ev.BodyTruncated = ev.BodyTruncated || cut
	ev.ResponseBody, cut = r.capBody(r.Text(ev.ResponseBody))
	ev.BodyTruncated = ev.BodyTruncated || cut
}

// headerRule is what applyHeaders does with a header's value: one map
// lookup per header decides it.
type headerRule uint8

const (
	scanHeader   headerRule = iota // redact the secrets patterns find in it
	redactHeader                   // redact it whole (Config.Headers, DefaultHeaders)
	keepHeader                     // keep it as it is (protocolHeaders)
)

// protocolHeaders are the headers classification and correlation read:
// never pattern-scanned (an opaque session id may look like a token), only
// redacted when configured by name.
var protocolHeaders = []string{
	"content-type", "accept", "mcp-protocol-version", "mcp-session-id",
	"last-event-id", "retry-after", "www-authenticate",
}

func (r *Redactor) applyHeaders(h classify.Header) {
	for i := range h {
		switch v := h[i].Value; r.headers[h[i].Name] {
		case redactHeader:
			if v != "" {
				h[i].Value = Redacted
			}
		case scanHeader:
			h[i].Value = r.patternsIn(v)
		case keepHeader:
		}
	}
}

// Text returns s with secret JSON values and token shapes redacted; s
// itself when there is none.
func (r *Redactor) Text(s string) string {
	if s == "" {
		return s
	}
	return r.patternsIn(r.keysIn(s))
}

func (r *Redactor) patternsIn(s string) string {
	found := r.scanAnchors(s)
	for i := range r.patterns {
		p := &r.patterns[i]
		switch {
		case p.anchors != nil && (i >= 64 || found&(1<<i) == 0):
			continue
		case p.hints != nil && !containsAny(s, p.hints):
			continue
		}
		if p.check != nil {
			s = p.replaceChecked(s)
			continue
		}
		s = p.re.ReplaceAllString(s, p.repl)
	}
	return s
}

// replaceChecked replaces the last submatch of every match that p.check
// accepts.
func (p *redactPattern) replaceChecked(s string) string {
	ms := p.re.FindAllStringSubmatchIndex(s, -1)
	var b strings.Builder
	done := 0
	for _, m := range ms {
		lo, hi := m[len(m)-2], m[len(m)-1]
		if lo < 0 || !p.check(s[lo:hi]) {
			continue
		}
		b.WriteString(s[done:lo])
		b.WriteString(Redacted)
		done = hi
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// scanAnchors returns the set of patterns whose anchored literals occur in
// s: one vectorized IndexByte pass per anchor byte (bytes chosen rare in
// text), and a comparison where one occurs.
func (r *Redactor) scanAnchors(s string) uint64 {
	var found uint64
	for _, c := range r.anchorBytes {
		for i := 0; ; i++ {
			j := strings.IndexByte(s[i:], c)
			if j < 0 {
				break
			}
			i += j
			hs := r.anchors[c]
			for k := range hs {
				h := &hs[k]
				st := i - h.at
				switch {
				case st < 0 || st+len(h.lit) > len(s) || found&(1<<h.pat) != 0:
				case h.fold:
					// Every literal has two bytes or more: the second
					// rules out most hits before the folded comparison.
					if lower(s[st+1]) == h.lit[1] && strings.EqualFold(s[st:st+len(h.lit)], h.lit) {
						found |= 1 << h.pat
					}
				case s[st:st+len(h.lit)] == h.lit:
					found |= 1 << h.pat
				}
			}
		}
	}
	return found
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// Raw returns a copy of an input line with the body rules applied: secrets
// redacted, then cut to MaxBodyBytes (cut reports it), for lines kept as
// they came (the quarantine). The line is treated as bytes: invalid UTF-8
// is kept, and a cut may fall inside a sequence only where the line was
// not valid UTF-8 there anyway.
func (r *Redactor) Raw(line []byte) (out []byte, cut bool) {
	s := r.Text(string(line))
	s, cut = r.capBody(s)
	return []byte(s), cut
}

func (r *Redactor) capBody(s string) (string, bool) {
	if r.maxBody < 0 || len(s) <= r.maxBody {
		return s, false
	}
	return TruncateUTF8(s, r.maxBody), true
}

// TruncateUTF8 cuts s to at most n bytes without splitting a UTF-8 sequence.
func TruncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for i := 1; i < utf8.UTFMax && n > 0 && !utf8.RuneStart(s[n]); i++ {
		n--
	}
	return s[:n]
}
