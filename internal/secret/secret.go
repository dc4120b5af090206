// Package secret holds configuration values that must never be printed:
// passwords, and URLs or DSNs that may carry one. Every way a value reaches
// text (fmt with any verb, encoding/json, encoding.TextMarshaler, zerolog's
// Stringer and Interface fields, flag defaults in --help) shows it with the
// secret replaced; only Reveal gives the real value, for the one call that
// needs it (opening the connection).
//
// This follows the OpenTelemetry collector's configopaque.String: the type,
// not every log call, keeps the secret out of logs.
package secret

import (
	"fmt"
	"net/url"
	"strings"
)

// Mask replaces a secret in printed text.
const Mask = "xxxxx"

// String is a secret such as a password. Its zero value is the empty
// string, which prints as "" (so --help shows no default); any other value
// prints as [Mask]. It implements flag.Value.
type String string

// Reveal returns the secret itself.
func (s String) Reveal() string { return string(s) }

// String returns [Mask] for a non-empty secret.
func (s String) String() string {
	if s == "" {
		return ""
	}
	return Mask
}

// Set implements flag.Value.
func (s *String) Set(v string) error { *s = String(v); return nil }

// Format prints the masked form for every verb, %#v and %q included.
func (s String) Format(f fmt.State, verb rune) { format(f, verb, s.String()) }

// MarshalText implements encoding.TextMarshaler (and so JSON) with the
// masked form.
func (s String) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// URL is a URL or DSN (clickhouse://user:pass@host:9000/db?password=...,
// kafka://user:pass@host:9092/topic) that may carry a password in its user
// information or in query parameters. It prints with every password
// replaced by [Mask]; it implements flag.Value.
type URL string

// Reveal returns the URL as given.
func (u URL) Reveal() string { return string(u) }

// String returns the URL with its passwords masked.
func (u URL) String() string { return MaskURL(string(u)) }

// Set implements flag.Value.
func (u *URL) Set(v string) error { *u = URL(v); return nil }

// Format prints the masked form for every verb.
func (u URL) Format(f fmt.State, verb rune) { format(f, verb, u.String()) }

// MarshalText implements encoding.TextMarshaler (and so JSON) with the
// masked form.
func (u URL) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// format writes masked for any verb; %q and %#v quote it, so that the
// output looks like a string and still never carries the secret.
func format(f fmt.State, verb rune, masked string) {
	if verb == 'q' || (verb == 'v' && f.Flag('#')) {
		masked = fmt.Sprintf("%q", masked)
	}
	_, _ = f.Write([]byte(masked))
}

// secretParams are query parameter names whose values are masked (compared
// in lower case, '-' and '_' ignored).
var secretParams = map[string]bool{
	"password": true, "passwd": true, "pass": true, "pwd": true, "secret": true,
	"token": true, "accesstoken": true, "apikey": true, "saslpassword": true,
	"key": true, "clientsecret": true,
}

// MaskURL returns raw with the password of its user information and the
// values of password-like query parameters replaced by [Mask]. The password
// is taken to run from the first ':' of the user information to the last
// '@', so a password holding an unescaped '/', '?', '#' or '@' is masked
// whole; text that merely looks odd is masked too much, never too little.
func MaskURL(raw string) string {
	prefix, rest := "", raw
	if scheme, r, ok := strings.Cut(raw, "://"); ok && isScheme(scheme) {
		prefix, rest = scheme+"://", r
	}
	// Parameters first: a password parameter holding '@' must not look
	// like the end of user information.
	rest = maskQuery(rest)
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if c := strings.IndexByte(rest[:at], ':'); c >= 0 {
			rest = rest[:c+1] + Mask + rest[at:]
		}
	}
	return prefix + rest
}

// maskQuery masks the values of password-like parameters after the first
// '?' of tail ("/db?password=x&secure=true").
func maskQuery(tail string) string {
	q := strings.IndexByte(tail, '?')
	if q < 0 {
		return tail
	}
	// A DSN has no fragment worth keeping apart: everything after the
	// first '?' is read as parameters, so a '#' never hides one.
	path, query := tail[:q+1], tail[q+1:]
	parts := strings.Split(query, "&")
	for i, p := range parts {
		k, _, hasValue := strings.Cut(p, "=")
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		norm := strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(name))
		if hasValue && (secretParams[norm] || strings.Contains(norm, "password") || strings.Contains(norm, "secret")) {
			parts[i] = k + "=" + Mask
		}
	}
	return path + strings.Join(parts, "&")
}

// isScheme reports whether s is a URL scheme: a letter, then letters,
// digits, '+', '-' or '.'.
func isScheme(s string) bool {
	for i, c := range s {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		other := c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
		if !letter && (i == 0 || !other) {
			return false
		}
	}
	return s != ""
}
