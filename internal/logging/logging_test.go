package logging

import (
	"bytes"
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf, "warn", "json", "ingest")
	l.Info().Msg("hidden")
	l.Warn().Msg("shown")
	out := buf.String()
	if strings.Contains(out, "hidden") || !strings.Contains(out, `"component":"ingest"`) || !strings.Contains(out, `"message":"shown"`) {
		t.Errorf("json log: %s", out)
	}
	buf.Reset()
	cl := New(&buf, "nonsense", "console", "api")
	cl.Info().Msg("hello")
	if !strings.Contains(buf.String(), "hello") || strings.HasPrefix(buf.String(), "{") {
		t.Errorf("console log: %s", buf.String())
	}
}
