package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/mcplens/mcplens/internal/loadgen"
)

// metrics returns a row's custom metrics by unit.
func (r row) metrics() map[string]float64 {
	m := map[string]float64{}
	for _, e := range r.extra {
		v, unit, ok := strings.Cut(e, " ")
		if !ok {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			m[unit] = f
		}
	}
	return m
}

// figureHeader opens the table of figures against the goals.
const figureHeader = "\n| figure | measured | goal |\n|---|---|---|\n"

// eachRun calls fn with the custom metrics of every row of benchmark name.
func eachRun(rows []row, name string, fn func(m map[string]float64)) {
	for _, r := range rows {
		if r.name == name {
			fn(r.metrics())
		}
	}
}

// steadyTable prints BenchmarkSteadyState as throughput and RSS per third
// of the run, with the goals beside the ratios.
func steadyTable(out io.Writer, rows []row) {
	eachRun(rows, "BenchmarkSteadyState", func(m map[string]float64) {
		rate := m["calls/s"]
		if rate == 0 {
			rate = 1000 // the default shape, before the benchmark reported it
		}
		fmt.Fprintf(out, "\nSteady state: %.0f events, %.0f minutes of event time at %.0f calls/s, file -> stdout, one core\n\n",
			m["events"], m["event-minutes"], rate)
		fmt.Fprintln(out, "| third of the run | events per CPU second | events per wall second | RSS at its end (MB) |")
		fmt.Fprintln(out, "|---|---|---|---|")
		for _, th := range []string{"1st", "2nd", "3rd"} {
			wall := "-"
			if v, ok := m["events/s-"+th]; ok {
				wall = fmt.Sprintf("%.0f", v)
			}
			fmt.Fprintf(out, "| %s | %.0f | %s | %.0f |\n", th, m["events/cpu-s-"+th], wall, m["rss-MB-"+th])
		}
		fmt.Fprint(out, figureHeader)
		fmt.Fprintf(out, "| last third / first third | %.2f | >= 0.9 |\n", m["3rd/1st"])
		if v, ok := m["naive-3rd/1st"]; ok {
			fmt.Fprintf(out, "| the same for the interleaved decode (how far the machine's speed moved) | %.2f | |\n", v)
		}
		if v, ok := m["3rd/1st-vs-naive"]; ok {
			fmt.Fprintf(out, "| last third / first third over the decode's own (the machine's drift taken out) | %.2f | |\n", v)
		}
		fmt.Fprintf(out, "| whole run / plain encoding/json map decode of the same lines, interleaved (every 8th line) | %.2f (%.0f vs %.0f events per CPU second) | >= 1.5 |\n",
			m["x-naive"], m["events/cpu-s"], m["naive-events/cpu-s"])
		if v, ok := m["x-naive-after"]; ok {
			fmt.Fprintf(out, "| the same, the decode of the whole file after the run | %.2f (%.0f events per CPU second) | |\n", v, m["naive-after-events/cpu-s"])
		}
		fmt.Fprintf(out, "| peak RSS | %.0f MB | flat once windows are full; < 300 MB for 1M events |\n", m["peak-rss-MB"])
		apartRow(out, m)
	})
}

// duckSteadyTable prints BenchmarkLoadgenToDuckDBSteady as throughput
// per third of the run, with the goals beside.
func duckSteadyTable(out io.Writer, rows []row) {
	eachRun(rows, "BenchmarkLoadgenToDuckDBSteady", func(m map[string]float64) {
		fmt.Fprintf(out, "\nFile -> DuckDB: %.0f events, %.0f minutes of event time, one core (DuckDB's threads too)\n\n",
			m["events"], m["event-minutes"])
		fmt.Fprintln(out, "| third of the run | events per wall second | events per CPU second | kernel share of the CPU |")
		fmt.Fprintln(out, "|---|---|---|---|")
		for _, th := range []string{"1st", "2nd", "3rd"} {
			fmt.Fprintf(out, "| %s | %.0f | %.0f | %s |\n", th, m["events/s-"+th], m["events/cpu-s-"+th], share(m, "sys-share-"+th))
		}
		fmt.Fprint(out, figureHeader)
		fmt.Fprintf(out, "| last third / first third | %.2f | >= 0.9 |\n", m["3rd/1st"])
		fmt.Fprintf(out, "| whole run, events per second | %.0f | >= 50,000 |\n", m["events/s"])
		apartRow(out, m)
	})
}

// apartRow prints the records a run left apart (more records than calls),
// when there were any: on a shape whose clocks or lines are further off
// than the merge window, the first misses (loadgen.Truth.CheckRecords).
func apartRow(out io.Writer, m map[string]float64) {
	if v := m["records-apart"]; v > 0 {
		fmt.Fprintf(out, "| client views left apart (extra records) | %.0f | the benchmark fails above %g%% of the calls |\n", v, 100*loadgen.ApartShare)
	}
}

// windowTable prints BenchmarkWindowCost as ns per operation of each stage
// at 1x, 3x and 10x the window population.
func windowTable(out io.Writer, rows []row) {
	const prefix = "BenchmarkWindowCost/"
	cost := map[string]map[string]float64{}
	var stages []string
	for _, r := range rows {
		rest, ok := strings.CutPrefix(r.name, prefix)
		if !ok {
			continue
		}
		stage, pop, ok := strings.Cut(rest, "/")
		if !ok {
			continue
		}
		if cost[stage] == nil {
			cost[stage] = map[string]float64{}
			stages = append(stages, stage)
		}
		cost[stage][pop] = r.nsOp
	}
	if len(stages) == 0 {
		return
	}
	fmt.Fprintln(out, "\nCost of one operation with the window full (1x, 3x, 10x = 1, 3, 10 minutes of 1,000 calls/s)")
	fmt.Fprintln(out, "\n| stage | 1x ns/op | 3x ns/op | 10x ns/op | 10x / 1x |")
	fmt.Fprintln(out, "|---|---|---|---|---|")
	for _, st := range stages {
		c := cost[st]
		fmt.Fprintf(out, "| %s | %.0f | %.0f | %.0f | %.2f |\n", st, c["1x"], c["3x"], c["10x"], c["10x"]/c["1x"])
	}
}

// share prints m[key] as a percentage, or "-" for a run that did not
// report it.
func share(m map[string]float64, key string) string {
	v, ok := m[key]
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}
