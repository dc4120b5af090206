package classify

// SSEEvent is one event of a text/event-stream body as a viewer shows it.
type SSEEvent struct {
	// Type is the event field ("" means "message"), ID the id field.
	Type string `json:"type"`
	ID   string `json:"id"`
	// Data is the event's data lines joined with "\n".
	Data string `json:"data"`
}

// SSEEvents splits a text/event-stream body into its dispatched events,
// by the same reading the classifier uses, and returns what follows the
// last dispatched event when the stream ended in the middle of one
// (the data of a cut or truncated stream's last message), else "".
func SSEEvents(body []byte) (events []SSEEvent, tail string) {
	s := newSSEScanner(body, false)
	end := 0
	for {
		ev, ok := s.next()
		if !ok {
			break
		}
		events = append(events, SSEEvent{Type: string(ev.typ), ID: string(ev.id), Data: string(ev.data)})
		end = s.pos
	}
	if end < len(s.body) {
		if t := s.tail(); t != nil && len(s.body)-len(t) >= end {
			tail = string(t)
		}
	}
	return events, tail
}
