package classify

// Cancels that arrive without a -32800 answer.
//
// On the 2026-07-28 wire a Streamable HTTP client cancels a request by
// closing its response stream (the revision's cancellation page: "closing
// the SSE response stream is the cancellation signal", no notice
// expected), so a request the client walked away from is CANCELLED there,
// not a stream or transport failure counted against the server. On older
// revisions the client sends notifications/cancelled and the server may
// answer -32800 (envelope.go), close the stream without an answer (rmcp),
// or leave it to the client to close (TypeScript): the pipeline, which
// sees the cancel beside the call, marks those with Result.Cancel.

// cancelByClose is the first revision on which closing the stream is the
// cancel. Revisions are dates, so they order as strings.
const cancelByClose = "2026-07-28"

// closedToCancel turns a request the client walked away from on a
// revision that cancels by closing into CANCELLED.
func (c *classifier) closedToCancel() {
	r := c.r
	if r.ErrorClass != ClientAbort || r.Notification || r.ProtocolVersion < cancelByClose {
		return
	}
	c.set(Cancelled, RequestCancelled, r.Rule+"-closed-2026")
	r.Layer = ""
}

// CancelsAnswer reports whether a notifications/cancelled naming this
// request explains r: the call got no answer (a cut or closed stream, a
// transport error, no response at all) and the cancel came before the cut
// (beforeCut), or the client itself closed the stream or got no response,
// which the cancel says it meant. A real answer (a result, an error, an
// HTTP error status) stays what it was.
func CancelsAnswer(r *Result, beforeCut bool) bool {
	switch r.Outcome {
	case StreamIncomplete, TransportError:
		return beforeCut || r.ErrorClass == ClientAbort
	case NoResponse:
		return true
	}
	return false
}

// Cancel reclassifies r as CANCELLED by the client's notifications/cancelled
// (see CancelsAnswer): REQUEST_CANCELLED in the interaction layer, out of
// every error rate, with the advice of a cancelled call. The rule keeps
// what the stream showed ("cancelled-" + the old rule).
func (r *Result) Cancel() {
	r.Outcome, r.ErrorClass, r.Rule = Cancelled, RequestCancelled, "cancelled-"+r.Rule
	r.Layer = Cancelled.Layer()
	advice, known, _ := adviceFor(r)
	r.RetryAdvice, r.OutcomeKnown = advice, known
	if r.Method == "tools/call" && !r.Notification {
		r.SideEffectRisk = RiskUnknown
	}
}
