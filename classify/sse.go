package classify

import "bytes"

// sseEvent is one dispatched Server-Sent Event.
type sseEvent struct {
	typ  []byte // the event field; empty means "message"
	id   []byte
	data []byte // data lines joined with "\n"
}

// sseScanner walks a text/event-stream body following the HTML Living
// Standard's event-stream interpretation: lines end in CRLF, LF or CR; a
// line starting with ':' is a comment; "field: value" loses one leading
// space of the value; data lines are joined with "\n"; an empty line
// dispatches the event if it had a data line (a priming event "id: 7" plus
// an empty "data:" dispatches an empty message; one with no data line
// dispatches nothing). An event the stream ends in the middle of
// is not dispatched, unless flushTail is set (the stream is known to have
// ended normally and the logger only lost the final blank line).
//
// Data of a single data line points into the body; data of several lines is
// joined into a buffer reused from event to event, so an event's data is
// valid only until the next call of next.
type sseScanner struct {
	body      []byte
	pos       int
	buf       []byte
	flushTail bool
	retry     int // last retry field in ms, -1 when none
	ids       int // events (dispatched or not) that set an id
}

func newSSEScanner(body []byte, flushTail bool) sseScanner {
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	return sseScanner{body: body, flushTail: flushTail, retry: -1}
}

// next returns the next dispatched event and true, or false at the end.
func (s *sseScanner) next() (sseEvent, bool) {
	var ev sseEvent
	var first []byte
	lines, sawID := 0, false
	s.buf = s.buf[:0]
	for s.pos < len(s.body) {
		line, rest := splitLine(s.body[s.pos:])
		s.pos = len(s.body) - len(rest)
		if len(line) == 0 {
			if sawID {
				s.ids++
			}
			if lines > 0 {
				ev.data = joined(first, s.buf, lines)
				return ev, true
			}
			ev, sawID = sseEvent{}, false
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if lines == 0 {
				first = value
			} else {
				if lines == 1 {
					s.buf = append(s.buf[:0], first...)
				}
				s.buf = append(s.buf, '\n')
				s.buf = append(s.buf, value...)
			}
			lines++
		case "event":
			ev.typ = value
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				ev.id, sawID = value, true
			}
		case "retry":
			if n, ok := digits(value); ok {
				s.retry = n
			}
		}
	}
	if s.flushTail && lines > 0 {
		ev.data = joined(first, s.buf, lines)
		return ev, true
	}
	return sseEvent{}, false
}

// tail returns the data of an event the stream ended in the middle of, or
// nil: what a cut stream or a cut log holds of the last message.
func (s *sseScanner) tail() []byte {
	i := bytes.LastIndex(s.body, []byte("data:"))
	if i < 0 {
		return nil
	}
	d := s.body[i+len("data:"):]
	return bytes.TrimLeft(d, " ")
}

func joined(first, buf []byte, lines int) []byte {
	if lines == 1 {
		return first
	}
	return buf
}

// splitLine splits b at the first CRLF, LF or CR.
func splitLine(b []byte) (line, rest []byte) {
	// Data lines are long (a JSON message each): find the line feed, then
	// a carriage return before it, with the vectorized byte search.
	end := bytes.IndexByte(b, '\n')
	if end < 0 {
		end = len(b)
	}
	if cr := bytes.IndexByte(b[:end], '\r'); cr >= 0 {
		if cr+1 < len(b) && b[cr+1] == '\n' {
			return b[:cr], b[cr+2:]
		}
		return b[:cr], b[cr+1:]
	}
	if end == len(b) {
		return b, nil
	}
	return b[:end], b[end+1:]
}

func digits(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
