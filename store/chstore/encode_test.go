package chstore

import (
	"bytes"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	chproto "github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/queries/querytest"
	"github.com/mcplens/mcplens/schema"
)

const ddlPath = "../../schema/testdata/clickhouse_single.sql"

var (
	ddlColumn = regexp.MustCompile(`^ {4}([a-z_0-9]+)\s+(.+?)(?:\s+CODEC\(.*\))?,?$`)
	// addedColumn is a column a later migration adds (its type ends before
	// a DEFAULT or at the end of the line).
	addedColumn = regexp.MustCompile(`^ALTER TABLE mcplens\.([a-z_0-9]+)\s+ADD COLUMN IF NOT EXISTS ([a-z_0-9]+) (.+?)(?:\s+DEFAULT\b.*)?;?$`)
)

// ddlTypes reads the ClickHouse type of every column of a table from the
// rendered DDL, the types the server would announce for an INSERT.
func ddlTypes(t testing.TB, table string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(ddlPath)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	in, found := false, false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "CREATE TABLE IF NOT EXISTS mcplens."+table+" ") || line == "CREATE TABLE IF NOT EXISTS mcplens."+table:
			in, found = true, true
		case in && strings.HasPrefix(line, ")"):
			in = false
		case in:
			if m := ddlColumn.FindStringSubmatch(line); m != nil {
				out[m[1]] = m[2]
			}
		default:
			if m := addedColumn.FindStringSubmatch(line); m != nil && m[1] == table {
				out[m[2]] = m[3]
			}
		}
	}
	if !found {
		t.Fatalf("table %s not in %s", table, ddlPath)
	}
	return out
}

// newBlock is an INSERT block of the table's columns, as the driver
// builds it from the server's answer to the INSERT.
func newBlock(t testing.TB, table string, cols []string) *proto.Block {
	return blockOf(t, table, ddlTypes(t, table), cols)
}

func blockOf(t testing.TB, table string, types map[string]string, cols []string) *proto.Block {
	b := proto.NewBlock()
	for _, c := range cols {
		typ, ok := types[c]
		if !ok {
			t.Fatalf("%s.%s: no type in the DDL", table, c)
		}
		if err := b.AddColumn(c, column.Type(typ)); err != nil {
			t.Fatalf("%s.%s %s: %v", table, c, typ, err)
		}
	}
	return b
}

// appendColumns appends encoded columns to a block, as Batch.Column(i).Append does.
func appendColumns(t testing.TB, b *proto.Block, data []any) {
	for i, d := range data {
		if _, err := b.Columns[i].Append(d); err != nil {
			t.Fatalf("column %s (%s): %v", b.Columns[i].Name(), b.Columns[i].Type(), err)
		}
	}
}

// roundTrip encodes a block in the native format and decodes it again.
func roundTrip(t *testing.T, b *proto.Block) *proto.Block {
	var buf chproto.Buffer
	if err := b.Encode(&buf, 54460); err != nil {
		t.Fatal(err)
	}
	out := proto.NewBlock()
	if err := out.Decode(chproto.NewReader(bytes.NewReader(buf.Buf)), 54460); err != nil {
		t.Fatal(err)
	}
	return out
}

func loadCorpusBatch(t testing.TB) *schema.Batch {
	b, err := querytest.ReadCorpus("../../testdata/conformance/corpus.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEncodeRoundTrip encodes the conformance corpus into native blocks of
// the DDL's column types, decodes them, and gets every value back.
func TestEncodeRoundTrip(t *testing.T) {
	corpus := loadCorpusBatch(t)

	cols, unknown := exchangeColumns(corpus.Exchanges)
	if unknown != 0 {
		t.Errorf("%d enum values of the corpus unknown to the DDL", unknown)
	}
	blk := newBlock(t, "exchanges", schema.ExchangeColumns)
	appendColumns(t, blk, cols)
	got := roundTrip(t, blk)
	if got.Rows() != len(corpus.Exchanges) {
		t.Fatalf("decoded %d rows, want %d", got.Rows(), len(corpus.Exchanges))
	}
	byName := map[string]column.Interface{}
	for _, c := range got.Columns {
		byName[c.Name()] = c
	}
	for i, e := range corpus.Exchanges {
		check := func(col string, want any) {
			t.Helper()
			v := byName[col].Row(i, false)
			if p := reflect.ValueOf(v); p.Kind() == reflect.Pointer {
				if p.IsNil() {
					v = nil
				} else {
					v = p.Elem().Interface()
				}
			}
			if tv, ok := v.(time.Time); ok {
				v = tv.UTC()
			}
			if !reflect.DeepEqual(v, want) {
				t.Errorf("row %d %s = %#v, want %#v", i, col, v, want)
			}
		}
		nullInt := func(n classify.NullInt) any {
			if !n.Valid {
				return nil
			}
			return n.V
		}
		check("exchange_id", e.ExchangeID)
		check("ts", stamp(e.TS))
		check("duration_ms", e.DurationMS)
		check("source", e.Source)
		check("sources", e.Sources)
		check("http_status", uint16(e.HTTPStatus))
		check("outcome", string(e.Outcome))
		check("jsonrpc_code", nullInt(e.JSONRPCCode))
		check("retry_after_s", nullInt(e.RetryAfterS))
		check("retry_advice", string(e.RetryAdvice))
		check("side_effect_risk", string(e.SideEffectRisk))
		check("transport", string(e.Transport))
		check("unknown_side_effect_retry", e.UnknownSideEffectRetry)
		check("no_response_reason", e.NoResponseReason)
		check("attempt", uint32(e.Attempt))
	}

	blk = newBlock(t, "exchange_bodies", schema.BodyColumns)
	appendColumns(t, blk, bodyColumns(corpus.Bodies))
	got = roundTrip(t, blk)
	for i, b := range corpus.Bodies {
		for col, want := range map[int]map[string]string{2: b.RequestHeaders.Map(), 3: b.ResponseHeaders.Map()} {
			if want == nil {
				want = map[string]string{}
			}
			if h := got.Columns[col].Row(i, false).(map[string]string); !reflect.DeepEqual(h, want) {
				t.Errorf("body %d %s %v, want %v", i, schema.BodyColumns[col], h, want)
			}
		}
		if s := got.Columns[5].Row(i, false).(string); s != b.ResponseBody {
			t.Errorf("body %d response body differs", i)
		}
	}

	blk = newBlock(t, "tool_annotations", schema.AnnotationColumns)
	appendColumns(t, blk, annotationColumns(corpus.Annotations))
	if roundTrip(t, blk).Rows() != len(corpus.Annotations) {
		t.Error("annotations lost rows")
	}
	blk = newBlock(t, "quarantine", schema.QuarantineColumns)
	appendColumns(t, blk, quarantineColumns(corpus.Quarantine))
	if got := roundTrip(t, blk); got.Columns[3].Row(0, false).(string) != string(corpus.Quarantine[0].Raw) {
		t.Error("quarantine raw line differs")
	}
}

func TestUnknownEnumStoredEmpty(t *testing.T) {
	e := schema.Exchange{Source: "sidecar"}
	e.RetryAdvice = "ASK_LATER"
	e.Transport = classify.TransportSSE
	cols, unknown := exchangeColumns([]schema.Exchange{e})
	if unknown != 2 || cols[6].([]string)[0] != "" || cols[29].([]string)[0] != "" || cols[39].([]string)[0] != "sse" {
		t.Errorf("unknown=%d source=%q advice=%q transport=%q", unknown, cols[6].([]string)[0], cols[29].([]string)[0], cols[39].([]string)[0])
	}
	blk := newBlock(t, "exchanges", schema.ExchangeColumns)
	appendColumns(t, blk, cols)
}
