package main

import (
	"strings"
	"testing"
)

// tableHas fails t unless the table of in holds every line of want.
func tableHas(t *testing.T, in string, want ...string) string {
	t.Helper()
	var out strings.Builder
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("table lacks %q:\n%s", w, out.String())
		}
	}
	return out.String()
}

func TestOtelTable(t *testing.T) {
	in := "BenchmarkKafkaToClickHouseVsOtelcol-2 \t 2\t 90000000000 ns/op\t 1000 events\t 31.00 event-minutes\t 3.5 load-1m\t" +
		" 36000 otelcol-events/s\t 30000 otelcol-events/cpu-s\t 40000 otelcol-mid-events/s\t" +
		" 9000 mcplens-events/s\t 8000 mcplens-events/cpu-s\t 9500 mcplens-mid-events/s\t 0.25 ratio-wall\t 0.2667 ratio-cpu\n"
	tableHas(t, in,
		"1000 events (31 minutes of event time), each pipeline on one core, load 3.5",
		"| OTel collector (kafkareceiver -> clickhouseexporter) | 36000 | 30000 | 40000 |",
		"| mcplens ingest | 9000 | 8000 | 9500 |",
		"| mcplens / collector, end to end per wall second | 0.25 |",
		"| mcplens / collector, per CPU second | 0.27 |")
}

func TestDuckSteadyTable(t *testing.T) {
	in := "BenchmarkLoadgenToDuckDBSteady \t 1\t 90524937115 ns/op\t 0.8523 3rd/1st\t 12.00 event-minutes\t 1327690 events\t" +
		" 15549 events/cpu-s\t 16123 events/cpu-s-1st\t 16751 events/cpu-s-2nd\t 14041 events/cpu-s-3rd\t" +
		" 14812 events/s\t 15540 events/s-1st\t 15953 events/s-2nd\t 13244 events/s-3rd\t" +
		" 0.1010 sys-share-1st\t 0.1230 sys-share-2nd\t 0.2460 sys-share-3rd\n"
	tableHas(t, in,
		"File -> DuckDB: 1327690 events, 12 minutes of event time",
		"| 1st | 15540 | 16123 | 10% |",
		"| 3rd | 13244 | 14041 | 25% |",
		"| last third / first third | 0.85 | >= 0.9 |",
		"| whole run, events per second | 14812 | >= 50,000 |")
}

// TestSteadyDrift: a run that reports the engine's third-to-third change
// over the yardstick's prints it beside the raw one.
func TestSteadyDrift(t *testing.T) {
	in := "BenchmarkSteadyState \t 1\t 9000000000 ns/op\t 0.8668 3rd/1st\t 0.8573 naive-3rd/1st\t 1.011 3rd/1st-vs-naive\t" +
		" 31.00 event-minutes\t 3429574 events\t 46988 events/cpu-s\n"
	tableHas(t, in, "| last third / first third | 0.87 | >= 0.9 |", "| the same for the interleaved decode (how far the machine's speed moved) | 0.86 |",
		"| last third / first third over the decode's own (the machine's drift taken out) | 1.01 |")
}

// TestApartRow: a run that left views apart says how many; one that left
// none has no such row.
func TestApartRow(t *testing.T) {
	in := "BenchmarkSteadyState \t 1\t 9000000000 ns/op\t 1.02 3rd/1st\t 4.000 event-minutes\t 442335 events\t" +
		" 300.0 calls/s\t 51.00 records-apart\t 47964 events/cpu-s\n"
	tableHas(t, in, "at 300 calls/s", "| client views left apart (extra records) | 51 |")
	if out := tableHas(t, strings.Replace(in, "51.00 records-apart", "0 records-apart", 1)); strings.Contains(out, "left apart") {
		t.Errorf("a run with no views apart has the row:\n%s", out)
	}
}
