package redact

import "strings"

const maxSecretKeyLen = 32

// normalizeKey lower-cases k into buf, dropping '_' and '-'.
func normalizeKey(buf []byte, k string) (int, bool) {
	n := 0
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c == '_' || c == '-':
			continue
		case n == len(buf):
			return 0, false
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	return n, n > 0
}

// keysIn replaces the content of every JSON string value whose key is a
// secret key. It works on the text, not a parse, so it finds them in
// malformed bodies and inside JSON held in JSON strings ({"a":"{\"token\":
// \"x\"}"}): a key's closing quote preceded by k backslashes (0, 1, 3, 7)
// is at escape level k, and so is the value's quote.
func (r *Redactor) keysIn(s string) string {
	var out []byte // nil until the first replacement
	done := 0      // s[:done] is in out
	for i := 0; ; {
		j := strings.IndexByte(s[i:], ':')
		if j < 0 {
			break
		}
		vs, ve, ok := r.secretValue(s, i+j)
		if !ok {
			i += j + 1
			continue
		}
		out = append(append(out, s[done:vs]...), Redacted...)
		done, i = ve, ve
	}
	if out == nil {
		return s
	}
	return string(append(out, s[done:]...))
}

// secretValue returns the bounds of the string value's content when the
// colon at s[colon] separates a secret key from a string value.
func (r *Redactor) secretValue(s string, colon int) (vs, ve int, ok bool) {
	p := colon - 1
	for p >= 0 && isJSONSpace(s[p]) {
		p--
	}
	if p < 0 || s[p] != '"' {
		return 0, 0, false
	}
	k := 0 // escape level: backslashes before the key's closing quote
	for p-k > 0 && s[p-k-1] == '\\' {
		k++
	}
	end := p - k
	start := end
	// The walk to the key's start also normalizes it (as normalizeKey),
	// from its end into the end of buf: one pass instead of two.
	var buf [maxSecretKeyLen]byte
	n := 0
	for start > 0 && end-start <= maxSecretKeyLen && isKeyByte(s[start-1]) {
		start--
		if c := s[start]; c != '_' && c != '-' {
			if n < len(buf) {
				buf[len(buf)-1-n] = lower(c)
			}
			if n++; n == 2 && !r.endsKey(buf[len(buf)-2], buf[len(buf)-1]) {
				return 0, 0, false
			}
		}
	}
	if k&(k+1) != 0 || start == end || start < k+1 || s[start-1] != '"' ||
		k > 0 && strings.Count(s[start-1-k:start-1], `\`) != k {
		return 0, 0, false
	}
	if !r.isNormalizedKey(buf[len(buf)-min(n, len(buf)):], n) {
		return 0, 0, false
	}
	q := colon + 1
	for q < len(s) && isJSONSpace(s[q]) {
		q++
	}
	if q+k >= len(s) || s[q+k] != '"' || k > 0 && strings.Count(s[q:q+k], `\`) != k {
		return 0, 0, false // not a string value at the key's level
	}
	vs = q + k + 1
	for e := vs; e < len(s); e++ {
		n := strings.IndexByte(s[e:], '"')
		if n < 0 {
			break
		}
		e += n
		bs := 0
		for e-bs > vs && s[e-bs-1] == '\\' {
			bs++
		}
		switch {
		case bs < k: // a quote of an outer level: this was no string at level k
			return 0, 0, false
		case bs%(2*(k+1)) == k: // the closing quote at level k
			return vs, e - k, true
		}
	}
	return 0, 0, false
}

// isKey reports whether k, normalized, is a secret key.
func (r *Redactor) isKey(k string) bool {
	var buf [maxSecretKeyLen]byte
	n, ok := normalizeKey(buf[:], k)
	return ok && r.isNormalizedKey(buf[:n], n)
}

// isNormalizedKey reports whether norm, a key's first n normalized bytes
// (all of them unless n is over maxSecretKeyLen), is a secret key; the
// length and the first byte rule out most keys without a map lookup.
func (r *Redactor) isNormalizedKey(norm []byte, n int) bool {
	return n > 0 && n <= maxSecretKeyLen && r.keyLens&(1<<n) != 0 && r.keyFirst[norm[0]] && r.keys[string(norm)]
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isKeyByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// URL replaces the values of query parameters named like secret keys
// (?api_key=…, &access_token=…) and any password in the user info, and
// runs the body patterns over what is left.
func (r *Redactor) URL(u string) string {
	if u == "" {
		return u
	}
	if at := strings.IndexByte(u, '@'); at > 0 {
		if scheme := strings.Index(u, "://"); scheme > 0 && scheme < at {
			if colon := strings.IndexByte(u[scheme+3:at], ':'); colon >= 0 {
				u = u[:scheme+3+colon+1] + Redacted + u[at:]
			}
		}
	}
	q := strings.IndexByte(u, '?')
	if q < 0 {
		return r.patternsIn(u)
	}
	var b strings.Builder
	b.WriteString(u[:q+1])
	for i, part := range strings.Split(u[q+1:], "&") {
		if i > 0 {
			b.WriteByte('&')
		}
		name, _, hasValue := strings.Cut(part, "=")
		if hasValue && r.isKey(name) {
			b.WriteString(name + "=" + Redacted)
			continue
		}
		b.WriteString(part)
	}
	return r.patternsIn(b.String())
}
