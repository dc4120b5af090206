package shippers

import (
	"os"
	"strings"
	"testing"
)

// markdownTable renders a mapping table as README.md shows it.
func markdownTable(fields []Field) string {
	var b strings.Builder
	b.WriteString("| contract field | from | rule |\n|---|---|---|\n")
	for _, f := range fields {
		from := "—"
		if len(f.From) > 0 {
			from = "`" + strings.Join(f.From, "`, `") + "`"
		}
		b.WriteString("| `" + f.Name + "` | " + from + " | " + strings.ReplaceAll(f.Rule, "|", `\|`) + " |\n")
	}
	return b.String()
}

// TestReadmeTables: the mapping tables of README.md are the Go tables.
func TestReadmeTables(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, fields := range map[string][]Field{"GatewayFields": GatewayFields, "OTelFields": OTelFields} {
		if want := markdownTable(fields); !strings.Contains(string(raw), want) {
			t.Errorf("README.md does not carry %s as it is; paste:\n%s", name, want)
		}
	}
}
