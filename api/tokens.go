package api

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Scope is a permission a token carries.
type Scope string

// Scopes: read answers every question and lists exchanges; bodies adds
// the recorded (redacted) headers and bodies to /api/v1/exchanges/{id}.
const (
	ScopeRead   Scope = "read"
	ScopeBodies Scope = "bodies"
)

// MinTokenLength is the shortest plain token accepted.
const MinTokenLength = 16

// Tokens are the bearer tokens the API accepts. Only their SHA-256 hashes
// are kept; Lookup compares hashes in constant time. Safe for concurrent
// Lookup once built.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	hash   [sha256.Size]byte
	name   string
	scopes []Scope
}

// Principal is who made a request: the token's name and scopes.
type Principal struct {
	Name   string
	Scopes []Scope
}

// Has reports whether the principal carries scope s.
func (p Principal) Has(s Scope) bool { return slices.Contains(p.Scopes, s) }

// Len returns the number of tokens.
func (t *Tokens) Len() int {
	if t == nil {
		return 0
	}
	return len(t.entries)
}

// ReadTokens adds one token per line of r: "sha256:HEX scopes=read,bodies
// name=NAME" (the hash of the token), or "TOKEN scopes=... name=..." (the
// token itself, at least MinTokenLength characters). scopes is required,
// name defaults to "SOURCE:LINE". Blank lines and lines starting with #
// are skipped. Errors name the source and line, never the token.
func (t *Tokens) ReadTokens(r io.Reader, source string) error {
	sc := bufio.NewScanner(r)
	var errs []error
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := t.add(line, fmt.Sprintf("%s:%d", source, n)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("read tokens from %s: %w", source, err))
	}
	return errors.Join(errs...)
}

// ParseTokenList adds the ';'-separated entries of s (the format of
// ReadTokens lines), as the MCPLENS_TOKENS environment variable gives
// them.
func (t *Tokens) ParseTokenList(s, source string) error {
	var errs []error
	for i, entry := range strings.Split(s, ";") {
		if entry = strings.TrimSpace(entry); entry != "" {
			if err := t.add(entry, fmt.Sprintf("%s entry %d", source, i+1)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func (t *Tokens) add(line, where string) error {
	fields := strings.Fields(line)
	e := tokenEntry{name: where}
	secret := fields[0]
	if hexHash, ok := strings.CutPrefix(secret, "sha256:"); ok {
		b, err := hex.DecodeString(hexHash)
		if err != nil || len(b) != sha256.Size {
			return fmt.Errorf("token %s: sha256: wants 64 hex digits", where)
		}
		copy(e.hash[:], b)
	} else {
		if strings.HasPrefix(secret, "scopes=") || strings.HasPrefix(secret, "name=") {
			return fmt.Errorf("token %s: starts with an attribute; the token comes first", where)
		}
		if len(secret) < MinTokenLength {
			return fmt.Errorf("token %s: shorter than %d characters", where, MinTokenLength)
		}
		e.hash = sha256.Sum256([]byte(secret))
	}
	sawScopes := false
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "scopes":
			sawScopes = true
			for _, s := range strings.Split(v, ",") {
				switch sc := Scope(s); sc {
				case ScopeRead, ScopeBodies:
					if !slices.Contains(e.scopes, sc) {
						e.scopes = append(e.scopes, sc)
					}
				default:
					return fmt.Errorf("token %s: unknown scope %s (want read, bodies)", where, echo(s))
				}
			}
		case "name":
			if v == "" {
				return fmt.Errorf("token %s: empty name", where)
			}
			if !validName(v) {
				return fmt.Errorf("token %s: name longer than %d characters or not plain printable text without quotes or backslashes", where, maxNameLength)
			}
			e.name = v
		default:
			return fmt.Errorf("token %s: unknown attribute %s (want scopes=, name=)", where, echo(k))
		}
	}
	if !sawScopes {
		return fmt.Errorf("token %s: no scopes= (want scopes=read or scopes=read,bodies)", where)
	}
	for _, o := range t.entries {
		if o.hash == e.hash {
			return fmt.Errorf("token %s: the same token as %q", where, o.name)
		}
		if o.name == e.name {
			return fmt.Errorf("token %s: name %q used twice", where, e.name)
		}
	}
	t.entries = append(t.entries, e)
	return nil
}

// Lookup returns the principal of a presented token. It hashes the token
// and compares the hash with every stored one in constant time, so the
// time taken tells nothing about which token, or how much of one, matched.
func (t *Tokens) Lookup(token string) (Principal, bool) {
	if t == nil {
		return Principal{}, false
	}
	h := sha256.Sum256([]byte(token))
	found := -1
	for i := range t.entries {
		if subtle.ConstantTimeCompare(h[:], t.entries[i].hash[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Principal{}, false
	}
	e := t.entries[found]
	return Principal{Name: e.name, Scopes: e.scopes}, true
}

// LoadTokens reads a tokens file (if file is not empty) and a
// ';'-separated list such as the MCPLENS_TOKENS environment variable.
func LoadTokens(file, list string) (*Tokens, error) {
	tokens := &Tokens{}
	var errs []error
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("open tokens file: %w", err)
		}
		defer f.Close()
		errs = append(errs, tokens.ReadTokens(f, file))
	}
	if list != "" {
		errs = append(errs, tokens.ParseTokenList(list, "MCPLENS_TOKENS"))
	}
	return tokens, errors.Join(errs...)
}

// maxNameLength bounds a token's name, which appears in logs and errors.
const maxNameLength = 64

// validName accepts names that print as themselves: %q leaves them
// unchanged apart from the surrounding quotes, so an error naming one
// cannot spell out text that is not in the tokens file.
func validName(s string) bool {
	if len(s) > maxNameLength {
		return false
	}
	for _, r := range s {
		if r == '"' || r == '\\' || !strconv.IsPrint(r) {
			return false
		}
	}
	return true
}

// echo quotes a misspelt attribute or scope for an error message only
// when it is too short to be a token and plain letters, digits, '_' or
// '-'. Anything else may be a token pasted in the wrong place, so the
// message says how long it is instead.
func echo(s string) string {
	plain := func(r rune) bool {
		return r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
	}
	if len(s) < MinTokenLength && s != "" && strings.TrimFunc(s, plain) == "" {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("(%d bytes, not shown)", len(s))
}
