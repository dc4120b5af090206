package classify

// advise fills retry_advice, outcome_known and side_effect_risk from the
// outcome and class. Only tools/call can have side effects; every other
// method is risk "none" (the correlator lowers a tool call to "none" too
// once it knows the tool is read-only). With the request unseen and the
// answer no tool result, an unknown outcome is an unknown risk: the
// request may have been a tool call.
func advise(r *Result, q *request, unseen bool) {
	advice, known, ran := adviceFor(r)
	r.RetryAdvice = advice
	r.OutcomeKnown = known
	switch {
	case r.Notification:
		r.SideEffectRisk = RiskNone
	case !q.isToolCall():
		r.SideEffectRisk = RiskNone
		if unseen && !known {
			r.SideEffectRisk = RiskUnknown
		}
	case !known:
		r.SideEffectRisk = RiskUnknown
	case ran:
		r.SideEffectRisk = RiskPossible
	default:
		r.SideEffectRisk = RiskNone
	}
}

// adviceFor returns the advice, whether the client can know the outcome,
// and whether the tool (if any) ran.
func adviceFor(r *Result) (advice Advice, known, ran bool) {
	switch r.Outcome {
	case Success, ToolSuccess, Accepted:
		return AdviceNone, true, true
	case InputRequired:
		return AdviceContinueInput, true, false
	case Cancelled:
		// Nothing to retry: the client gave up. The tool may have run part
		// of the way, so a re-send is a re-send of an unknown outcome.
		return AdviceNone, false, false
	case ToolError:
		switch r.ErrorClass {
		case ToolInputValidation, UnknownTool:
			return AdviceFixRequest, true, false
		}
		return AdviceDoNotRetry, true, true
	case NoResponse:
		return AdviceRetryIfSafe, false, false
	case TransportError:
		switch r.ErrorClass {
		case ConnectionRefused, DNSError, TLSError:
			// The request never reached the server.
			return AdviceRetryIfSafe, true, false
		}
		return AdviceRetryIfSafe, false, false
	case StreamIncomplete:
		return AdviceRetryIfSafe, false, false
	case HTTPError:
		return httpAdvice(r.ErrorClass)
	case JSONRPCError:
		return rpcAdvice(r.ErrorClass)
	}
	// MALFORMED_JSON, INVALID_ENVELOPE, INVALID_TOOL_RESULT,
	// UNEXPECTED_RESPONSE: the server answered, but not in a way that says
	// what happened.
	return AdviceDoNotRetry, false, false
}

func httpAdvice(c ErrorClass) (Advice, bool, bool) {
	switch c {
	case RateLimited:
		return AdviceRetryAfter, true, false
	case AuthRequired, Forbidden, InsufficientScope:
		return AdviceReauthenticate, true, false
	case SessionNotFound:
		return AdviceReinitialize, true, false
	case ServerError, Timeout:
		return AdviceRetryIfSafe, false, false
	case Redirect:
		return AdviceDoNotRetry, true, false
	}
	return AdviceFixRequest, true, false
}

func rpcAdvice(c ErrorClass) (Advice, bool, bool) {
	switch c {
	case InternalError:
		return AdviceRetryIfSafe, false, false
	case URLElicitationRequired:
		return AdviceContinueInput, true, false
	case ImplementationError, ApplicationDefinedError, BodyTruncated:
		return AdviceDoNotRetry, false, false
	}
	return AdviceFixRequest, true, false
}

// AdviceOf returns the retry advice the classifier gives an exchange with
// this outcome and error class: the advice depends on nothing else, so a
// count by outcome and class can say it without reading the exchanges.
func AdviceOf(o Outcome, c ErrorClass) Advice {
	advice, _, _ := adviceFor(&Result{Outcome: o, ErrorClass: c})
	return advice
}
