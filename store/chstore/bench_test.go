package chstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/ch-go/compress"
	chproto "github.com/ClickHouse/ch-go/proto"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/enginetest"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
)

// benchRows makes n exchange records shaped like real traffic.
func benchRows(n int) []schema.Exchange {
	out := make([]schema.Exchange, n)
	start := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	for i := range out {
		e := &out[i]
		ts := start.Add(time.Duration(i) * 10 * time.Millisecond)
		*e = schema.Exchange{
			ExchangeID: fmt.Sprintf("x-%016x", i*2654435761), RequestEventID: fmt.Sprintf("e-%d", i), ResponseEventID: fmt.Sprintf("e-%d-r", i),
			TS: ts, EndTS: ts.Add(20 * time.Millisecond), DurationMS: float64(5 + i%300), Source: "gateway", Sources: []string{"gateway"},
			Observer: "gw-1", Server: fmt.Sprintf("srv-%02d", i%40), URL: "https://mcp.example/mcp", ClientName: "claude-code",
			ClientVersion: "1.0", SessionID: fmt.Sprintf("s-%d", i/50), HTTPMethod: "POST", HTTPStatus: 200, RequestBytes: 180, ResponseBytes: 420,
			Attempt: 1, ChainID: fmt.Sprintf("x-%016x", i*2654435761), RetryOrigin: "none",
		}
		e.Result = classify.Result{
			Layer: classify.LayerApplication, Outcome: classify.ToolSuccess, RetryAdvice: classify.AdviceNone, OutcomeKnown: true,
			SideEffectRisk: classify.RiskPossible, Rule: "json-result", JSONRPCID: fmt.Sprint(i), Method: "tools/call",
			ToolName: fmt.Sprintf("tool-%d", i%12), ParamsHash: fmt.Sprintf("%016x", i%5000), ContentType: "application/json",
			Transport: classify.TransportJSON,
		}
		if i%10 == 0 {
			e.Outcome, e.Layer, e.ErrorClass, e.JSONRPCCode, e.ErrorMessage = classify.JSONRPCError, classify.LayerProtocol, "INVALID_PARAMS", classify.Int(-32602), "Invalid params"
		}
	}
	return out
}

// BenchmarkEncodeExchanges measures what the sink does per batch without
// a server: encode 10,000 exchanges into columns, append them to the
// native block of the DDL's column types (as Batch.Column(i).Append does)
// and serialize the block in the native protocol; /lz4 also compresses it
// as the connection does.
func BenchmarkEncodeExchanges(b *testing.B) {
	rows := benchRows(10_000)
	types := ddlTypes(b, "exchanges")
	for _, lz4 := range []bool{false, true} {
		name := "native"
		if lz4 {
			name = "native+lz4"
		}
		b.Run(name, func(b *testing.B) {
			var buf chproto.Buffer
			w := compress.NewWriter(compress.LevelZero, compress.LZ4)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				blk := blockOf(b, "exchanges", types, schema.ExchangeColumns)
				cols, _ := exchangeColumns(rows)
				appendColumns(b, blk, cols)
				buf.Reset()
				if err := blk.Encode(&buf, 54460); err != nil {
					b.Fatal(err)
				}
				if lz4 {
					if err := w.Compress(buf.Buf); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(len(rows)*b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(len(buf.Buf))/float64(len(rows)), "bytes/row")
		})
	}
}

// BenchmarkFileToClickHouse is file -> pipeline -> the real ClickHouse
// server of CLICKHOUSE_DSN, the ingester on one core (run with -cpu=1;
// the server is its own process): request and response lines of 20,000
// exchanges, out of order, into a fresh database per iteration.
func BenchmarkFileToClickHouse(b *testing.B) {
	dsn := clickhousetest.DSN(b)
	const exchanges = 20_000
	path := writeEvents(b, exchanges)
	var cpu time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s, _ := openFresh(b, dsn) // no TTL: the events are dated 2026-11-02
		c0 := enginetest.ProcessCPU()
		enginetest.TimeFile(b, path, s)
		cpu += enginetest.ProcessCPU() - c0
		var n uint64
		if err := s.conn.QueryRow(context.Background(), "SELECT count() FROM exchanges").Scan(&n); err != nil || n != exchanges {
			b.Fatalf("stored %d exchanges (%v), want %d", n, err, exchanges)
		}
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(2*exchanges*b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(exchanges*b.N)/b.Elapsed().Seconds(), "exchanges/s")
	b.ReportMetric(float64(2*exchanges*b.N)/cpu.Seconds(), "events/cpu-s")
}

// BenchmarkFreshnessClickHouse is [enginetest.Freshness] into a fresh
// database on the real ClickHouse server of CLICKHOUSE_DSN: from a
// response's arrival to its exchange inserted on the server.
func BenchmarkFreshnessClickHouse(b *testing.B) {
	dsn := clickhousetest.DSN(b)
	enginetest.Freshness(b, func() (pipeline.Sink, func()) {
		s, _ := openFresh(b, dsn) // no TTL: the events are dated 2026-11-02
		return s, func() { s.Close() }
	})
}

// BenchmarkEncodeBodies is BenchmarkEncodeExchanges' native encoding for
// the bodies table: 10,000 rows with the headers a gateway records (a
// session and a request id that differ per row) and bodies of 0.3-3 KiB.
func BenchmarkEncodeBodies(b *testing.B) {
	rows := make([]schema.Body, 10_000)
	for i := range rows {
		rows[i] = schema.Body{
			ExchangeID: fmt.Sprintf("x-%016x", i*2654435761), TS: time.Date(2026, 11, 2, 0, 0, i, 0, time.UTC),
			RequestHeaders: classify.HeaderOf(map[string]string{"content-type": "application/json", "accept": "application/json, text/event-stream",
				"mcp-session-id": fmt.Sprintf("s-%d", i/50), "mcp-protocol-version": "2025-06-18", "x-request-id": fmt.Sprint(i)}),
			ResponseHeaders: classify.HeaderOf(map[string]string{"content-type": "application/json", "mcp-session-id": fmt.Sprintf("s-%d", i/50)}),
			RequestBody:     strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, 1+i%8),
			ResponseBody:    strings.Repeat(`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`, 6+i%60),
		}
	}
	types := ddlTypes(b, "exchange_bodies")
	var buf chproto.Buffer
	b.ReportAllocs()
	for b.Loop() {
		blk := blockOf(b, "exchange_bodies", types, schema.BodyColumns)
		appendColumns(b, blk, bodyColumns(rows))
		buf.Reset()
		if err := blk.Encode(&buf, 54460); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(rows)*b.N)/b.Elapsed().Seconds(), "rows/s")
}
