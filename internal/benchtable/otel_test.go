package main

import (
	"strings"
	"testing"
)

func TestOtelTable(t *testing.T) {
	in := "BenchmarkKafkaToClickHouseVsOtelcol-2 \t 2\t 90000000000 ns/op\t 1000 events\t 31.00 event-minutes\t 3.5 load-1m\t" +
		" 36000 otelcol-events/s\t 30000 otelcol-events/cpu-s\t 40000 otelcol-mid-events/s\t" +
		" 9000 mcplens-events/s\t 8000 mcplens-events/cpu-s\t 9500 mcplens-mid-events/s\t 0.25 ratio-wall\t 0.2667 ratio-cpu\n"
	var out strings.Builder
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"1000 events (31 minutes of event time), each pipeline on one core, load 3.5",
		"| OTel collector (kafkareceiver -> clickhouseexporter) | 36000 | 30000 | 40000 |",
		"| mcplens ingest | 9000 | 8000 | 9500 |",
		"| mcplens / collector, end to end per wall second | 0.25 |",
		"| mcplens / collector, per CPU second | 0.27 |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}
