package main

import (
	"fmt"
	"io"
)

// otelTable prints BenchmarkKafkaToClickHouseVsOtelcol as the collector
// beside mcplens: events/s from start to the last row visible, per wall
// and per CPU second, mid-stream, and the ratios against the goal.
func otelTable(out io.Writer, rows []row) {
	eachRun(rows, "BenchmarkKafkaToClickHouseVsOtelcol", func(m map[string]float64) {
		fmt.Fprintf(out, "\nKafka -> ClickHouse side by side: %.0f events (%.0f minutes of event time), each pipeline on one core, load %.1f\n\n",
			m["events"], m["event-minutes"], m["load-1m"])
		fmt.Fprintln(out, "| pipeline | events/s, start to last row visible | events per CPU second | events/s mid-stream |")
		fmt.Fprintln(out, "|---|---|---|---|")
		fmt.Fprintf(out, "| OTel collector (kafkareceiver -> clickhouseexporter) | %.0f | %.0f | %.0f |\n",
			m["otelcol-events/s"], m["otelcol-events/cpu-s"], m["otelcol-mid-events/s"])
		fmt.Fprintf(out, "| mcplens ingest | %.0f | %.0f | %.0f |\n",
			m["mcplens-events/s"], m["mcplens-events/cpu-s"], m["mcplens-mid-events/s"])
		fmt.Fprint(out, figureHeader)
		fmt.Fprintf(out, "| mcplens / collector, end to end per wall second | %.2f | >= 1.5 (moonshot 2.5) |\n", m["ratio-wall"])
		fmt.Fprintf(out, "| mcplens / collector, per CPU second | %.2f | |\n", m["ratio-cpu"])
	})
}
