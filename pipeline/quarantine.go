package pipeline

import (
	"bytes"
	"errors"
	"time"

	"github.com/mcplens/mcplens/redact"
	"github.com/mcplens/mcplens/schema"
)

// maxQuarantineReason caps the reason text; the raw line is kept whole.
const maxQuarantineReason = 1024

// quarantineRecord builds the quarantine row of a message that could not be
// handled: a copy of its raw bytes (msg.Value may be a reused read buffer),
// its position, and why. The reason is the text of the [DecodeError] when
// err wraps one (the position has a column of its own), else err's text; it
// is cut to 1 KiB. now is the quarantine time, passed in so that tests and
// replays are deterministic. Safe for concurrent use.
func quarantineRecord(msg Message, err error, now time.Time) schema.Quarantined {
	return schema.Quarantined{
		TS:       now.UTC(),
		Position: msg.Pos.String(),
		Reason:   quarantineReason(err),
		Raw:      bytes.Clone(msg.Value),
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
