// Command benchtable reads `go test -bench` output on stdin and prints one
// Markdown table: ns/op, allocs/op, operations per second on one core, and,
// for benchmarks that have a yardstick in the same run, the ratio to it.
//
// Yardsticks pair by name: BenchmarkClassify/json/2KiB is compared with
// BenchmarkNaiveDecode/json/2KiB (SSE rows with the JSON yardstick of the
// same size), BenchmarkDecode with BenchmarkDecodeNaiveMap.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

type row struct {
	name   string
	nsOp   float64
	allocs string
	extra  []string // custom metrics such as events/s
}

var line = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(.*)$`)

// yardsticks maps a benchmark name prefix to the prefix of its yardstick.
var yardsticks = []struct{ subject, naive string }{
	{"BenchmarkClassify/json/", "BenchmarkNaiveDecode/json/"},
	{"BenchmarkClassify/sse/", "BenchmarkNaiveDecode/json/"},
	{"BenchmarkDecode/", "BenchmarkDecodeNaiveMap/"},
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	var rows []row
	byName := map[string]float64{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			if strings.HasPrefix(sc.Text(), "FAIL") || strings.HasPrefix(sc.Text(), "--- FAIL") {
				return fmt.Errorf("benchmark run failed: %s", sc.Text())
			}
			continue
		}
		ns, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return fmt.Errorf("parse %q: %w", sc.Text(), err)
		}
		r := row{name: m[1], nsOp: ns, allocs: "-"}
		fields := strings.Fields(m[3])
		for i := 0; i+1 < len(fields); i += 2 {
			switch unit := fields[i+1]; unit {
			case "allocs/op":
				r.allocs = fields[i]
			case "B/op", "MB/s":
			default:
				r.extra = append(r.extra, fields[i]+" "+unit)
			}
		}
		rows = append(rows, r)
		byName[r.name] = ns
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read benchmark output: %w", err)
	}
	if len(rows) == 0 {
		return fmt.Errorf("no benchmark lines on stdin")
	}
	fmt.Fprintln(out, "| benchmark | ns/op | allocs/op | ops/s (1 core) | ratio to naive | other |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|")
	for _, r := range rows {
		ratio := "-"
		for _, y := range yardsticks {
			if strings.HasPrefix(r.name, y.subject) {
				if base, ok := byName[y.naive+strings.TrimPrefix(r.name, y.subject)]; ok && base > 0 {
					ratio = fmt.Sprintf("%.2f", r.nsOp/base)
				}
			}
		}
		fmt.Fprintf(out, "| %s | %.0f | %s | %.0f | %s | %s |\n",
			strings.TrimPrefix(r.name, "Benchmark"), r.nsOp, r.allocs, 1e9/r.nsOp, ratio, strings.Join(r.extra, ", "))
	}
	steadyTable(out, rows)
	duckSteadyTable(out, rows)
	windowTable(out, rows)
	otelTable(out, rows)
	return nil
}
