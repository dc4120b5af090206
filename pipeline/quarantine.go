package pipeline

import (
	"errors"
	"fmt"
	"time"

	"github.com/mcplens/mcplens/redact"
	"github.com/mcplens/mcplens/schema"
)

// maxQuarantineReason caps the reason text.
const maxQuarantineReason = 1024

// quarantineRecord builds the quarantine row of a message that could not be
// handled: its raw bytes (copied: msg.Value may be a reused read buffer)
// with secrets redacted by red and cut to red's body cap, its position,
// and why. The reason is the text of the [DecodeError] when err wraps one
// (the position has a column of its own), else err's text, redacted too
// (it may quote a value) and cut to 1 KiB; when the raw line was cut, the
// reason ends with "(raw line cut to N of M bytes)". now is the quarantine
// time, passed in so that tests and replays are deterministic. Safe for
// concurrent use.
func quarantineRecord(msg Message, err error, now time.Time, red *redact.Redactor) schema.Quarantined {
	raw, cut := red.Raw(msg.Value)
	reason := red.Text(quarantineReason(err))
	if cut {
		reason = redact.TruncateUTF8(reason, maxQuarantineReason-64) +
			fmt.Sprintf(" (raw line cut to %d of %d bytes)", len(raw), len(msg.Value))
	}
	return schema.Quarantined{
		TS:       now.UTC(),
		Position: msg.Pos.String(),
		Reason:   reason,
		Raw:      raw,
	}
}

// quarantineReason is the reason text [Quarantine] records for err.
func quarantineReason(err error) string {
	var reason string
	var de *DecodeError
	switch {
	case errors.As(err, &de):
		reason = de.Error()
	case err != nil:
		reason = err.Error()
	default:
		reason = "unknown"
	}
	if len(reason) > maxQuarantineReason {
		reason = redact.TruncateUTF8(reason, maxQuarantineReason)
	}
	return reason
}
