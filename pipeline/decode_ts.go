package pipeline

import "time"

// tsMinute remembers the minute of the last ts written in the contract's
// usual form, "2026-11-05T12:34:56.789Z": lines close in time share it,
// and their ts then costs two digits and a fraction instead of a whole
// time.Parse (about a tenth of the decoder's field time went there). Any
// other form, or another minute, takes time.Parse as before.
type tsMinute struct {
	prefix [tsPrefixLen]byte
	base   time.Time // the prefix's minute, UTC; zero before the first
}

// tsPrefixLen is the length of a ts's date, hour and minute with the
// colon after them.
const tsPrefixLen = len("2006-01-02T15:04:")

// note remembers the minute of b, a ts that parsed to t and passed the
// range check, when b is in the usual form.
func (m *tsMinute) note(b []byte, t time.Time) {
	if len(b) < tsPrefixLen+3 || b[len(b)-1] != 'Z' {
		return
	}
	base := t.Truncate(time.Minute)
	copy(m.prefix[:], b)
	m.base = base
	if got, ok := m.parse(b); !ok || !got.Equal(t) { // a form parse does not take
		m.base = time.Time{}
	}
}

// parse returns b's time when b is the remembered minute followed by
// "SS", an optional '.' and 1-9 digits, and 'Z': what time.Parse with
// RFC3339Nano returns for it, in UTC.
func (m *tsMinute) parse(b []byte) (time.Time, bool) {
	const p = tsPrefixLen
	if m.base.IsZero() || len(b) < p+3 || string(b[:p]) != string(m.prefix[:]) || b[len(b)-1] != 'Z' {
		return time.Time{}, false
	}
	s1, s2 := b[p]-'0', b[p+1]-'0'
	if s1 > 5 || s2 > 9 {
		return time.Time{}, false
	}
	ns := (int64(s1)*10 + int64(s2)) * int64(time.Second)
	switch frac := b[p+2 : len(b)-1]; {
	case len(frac) == 0:
	case frac[0] != '.' || len(frac) < 2 || len(frac) > 10:
		return time.Time{}, false
	default:
		var f int64
		for _, c := range frac[1:] {
			if c-'0' > 9 {
				return time.Time{}, false
			}
			f = f*10 + int64(c-'0')
		}
		for range 10 - len(frac) {
			f *= 10
		}
		ns += f
	}
	return m.base.Add(time.Duration(ns)), true
}
