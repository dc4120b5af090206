package chstore

import (
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
)

// TestServerParamsAreValues: a string parameter comes back from the real
// server byte for byte, whatever it holds: backslashes, control
// characters, quotes, braces, invalid UTF-8.
func TestServerParamsAreValues(t *testing.T) {
	s, _ := openFresh(t, clickhousetest.DSN(t))
	for _, v := range []string{
		`\`, `\\`, `a\nb`, "tab\there", "new\nline", "cr\rlf", "nul\x00byte", "\b\f", `'`, `"`, "x' OR '1'='1", "{server:String}",
		"$1", "%_!", "\xff\xfe invalid utf-8", "ünïcødé ✓", `\N`, "trailing\\",
	} {
		ctx := clickhouse.Context(t.Context(), clickhouse.WithParameters(map[string]string{"v": queries.FormatClickHouse(v)}))
		var got string
		if err := s.conn.QueryRow(ctx, "SELECT {v:String}").Scan(&got); err != nil {
			t.Errorf("%q: %v", v, err)
			continue
		}
		if got != v {
			t.Errorf("sent %q, the server read %q", v, got)
		}
	}
}
