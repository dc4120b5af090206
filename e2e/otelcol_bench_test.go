package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/internal/loadgen"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/kafkatest"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store/chstore"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
)

// BenchmarkKafkaToClickHouseVsOtelcol is issue 13's side-by-side run: one
// topic (3 partitions) of internal/loadgen traffic, 1,000 calls/s of event
// time for MCPLENS_BENCH_MINUTES (31: three times the 10-minute chain and
// dedupe windows; MCPLENS_BENCH_LOAD gives another shape, see
// loadgen.BenchConfig), read from the start by (a) the OpenTelemetry collector
// built from deploy/otelcol-compare/builder.yaml (kafkareceiver ->
// clickhouseexporter, deploy/otelcol-compare/otelcol.yaml; the binary named
// by MCPLENS_OTELCOL) and (b) cmd/ingest at its default settings, each in
// its own consumer group, each into a fresh database of the ClickHouse
// server of CLICKHOUSE_DSN, one after the other (the order alternates per
// iteration). Each pipeline runs pinned to the core MCPLENS_BENCH_CORE (1)
// with GOMAXPROCS=1. A run is timed from the process's start to the last
// row visible (count() polled every 250 ms until it reaches what the load
// holds: one log record per message for the collector, one exchange per
// call for mcplens); its CPU is the process's user+system time from /proc
// at that moment. Mid-stream is the rate while the table went from 25% to
// 75% of its rows. Events are the topic's messages for both.
//
// make bench-otel builds the collector (once, cached) and runs this.
func BenchmarkKafkaToClickHouseVsOtelcol(b *testing.B) {
	otelcol := os.Getenv("MCPLENS_OTELCOL")
	if otelcol == "" {
		b.Skip("MCPLENS_OTELCOL is not set: the collector built from deploy/otelcol-compare/builder.yaml (make bench-otel builds it)")
	}
	brokers := kafkatest.Brokers(b)
	dsn := clickhousetest.DSN(b)
	httpURL := clickhousetest.HTTPURL(b)
	minutes, err := loadgen.BenchMinutes()
	if err != nil {
		b.Fatal(err)
	}
	core := "1"
	if s := os.Getenv("MCPLENS_BENCH_CORE"); s != "" {
		core = s
	}
	chAddr, err := clickhouseAddr(dsn)
	if err != nil {
		b.Fatal(err)
	}
	config, err := filepath.Abs("../deploy/otelcol-compare/otelcol.yaml")
	if err != nil {
		b.Fatal(err)
	}

	topic := kafkatest.NewTopic(b, brokers, 3)
	cfg, err := loadgen.BenchConfig(13, minutes)
	if err != nil {
		b.Fatal(err)
	}
	g, err := loadgen.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	began := time.Now()
	if err := g.Produce(context.Background(), kafkatest.Addrs(brokers), topic); err != nil {
		b.Fatal(err)
	}
	truth := g.Truth()
	b.Logf("produced %d lines (%d exchanges, %.0f minutes of event time) to %s in %v",
		truth.Lines, truth.Exchanges, minutes, topic, time.Since(began).Round(time.Second))

	collector := func(iter int) pinnedRun {
		db := clickhousetest.UniqueName(b, "otelcol")
		defer dropDatabase(b, dsn, db)
		return runPinned(b, pinned{
			name: "otelcol", core: core, bin: otelcol, args: []string{"--config", config},
			env: []string{
				"MCPLENS_KAFKA_BROKERS=" + brokers, "MCPLENS_OTEL_TOPIC=" + topic,
				fmt.Sprintf("MCPLENS_OTEL_GROUP=bench-otelcol-%d-%s", iter, topic),
				"MCPLENS_OTEL_CLICKHOUSE=tcp://" + chAddr, "MCPLENS_OTEL_DATABASE=" + db,
			},
			httpURL: httpURL, table: db + ".otel_logs", want: truth.Lines,
		})
	}
	mcplens := func(iter int) pinnedRun {
		dbDSN, db := clickhousetest.NewDatabase(b, dsn)
		defer dropDatabase(b, dsn, db)
		migrate(b, dbDSN)
		return runPinned(b, pinned{
			name: "mcplens", core: core, bin: filepath.Join(bin, "ingest"),
			args: []string{
				"--from", fmt.Sprintf("kafka://%s/%s?group=bench-mcplens-%d-%s&start=first", brokers, topic, iter, topic),
				"--to", dbDSN, "--listen", "", "--log-level", "warn",
				"--pair-window", cfg.PairWindow(pipeline.DefaultConfig().Correlator.PairWindow).String(),
			},
			httpURL: httpURL, table: db + ".exchanges", want: truth.Exchanges,
		})
	}

	say := func(format string, args ...any) {
		b.Logf(format, args...)
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}
	var col, ml pinnedRun
	for iter := 0; b.Loop(); iter++ {
		var c, m pinnedRun
		if iter%2 == 0 {
			c, m = collector(iter), mcplens(iter)
		} else {
			m, c = mcplens(iter), collector(iter)
		}
		events := float64(truth.Lines)
		// On stderr at once too: a benchmark's log is printed only at its end.
		say("run %d (load %s): collector %.0f events/s wall, %.0f per CPU s, mid-stream %.0f/s, %.1f s, %.1f CPU s (server %.1f), peak RSS %d MB; "+
			"mcplens %.0f events/s wall, %.0f per CPU s, mid-stream %.0f/s, %.1f s, %.1f CPU s (server %.1f), peak RSS %d MB; ratio wall %.2f, per CPU s %.2f",
			iter+1, loadAverage(), events/c.wall.Seconds(), events/c.cpu, c.mid(events), c.wall.Seconds(), c.cpu, c.serverCPU, c.rssMB,
			events/m.wall.Seconds(), events/m.cpu, m.mid(events), m.wall.Seconds(), m.cpu, m.serverCPU, m.rssMB,
			c.wall.Seconds()/m.wall.Seconds(), c.cpu/m.cpu)
		col.add(c)
		ml.add(m)
	}
	events := float64(truth.Lines) * float64(b.N)
	b.ReportMetric(events/col.wall.Seconds(), "otelcol-events/s")
	b.ReportMetric(events/col.cpu, "otelcol-events/cpu-s")
	b.ReportMetric(events/ml.wall.Seconds(), "mcplens-events/s")
	b.ReportMetric(events/ml.cpu, "mcplens-events/cpu-s")
	b.ReportMetric(events/2/col.midSpans.Seconds(), "otelcol-mid-events/s")
	b.ReportMetric(events/2/ml.midSpans.Seconds(), "mcplens-mid-events/s")
	b.ReportMetric(events/col.serverCPU, "otelcol-events/server-cpu-s")
	b.ReportMetric(events/ml.serverCPU, "mcplens-events/server-cpu-s")
	b.ReportMetric(col.wall.Seconds()/ml.wall.Seconds(), "ratio-wall")
	b.ReportMetric(col.cpu/ml.cpu, "ratio-cpu")
	b.ReportMetric(float64(truth.Lines), "events")
	b.ReportMetric(minutes, "event-minutes")
	if load, err := strconv.ParseFloat(loadAverage(), 64); err == nil {
		b.ReportMetric(load, "load-1m")
	}
}

// pinned is one pipeline process of the side-by-side run.
type pinned struct {
	name, core, bin string
	args, env       []string
	httpURL, table  string
	want            int // rows the table holds once the pipeline is done
}

// pinnedRun is what one pipeline run measured.
type pinnedRun struct {
	wall     time.Duration // start to the last row visible
	cpu      float64       // user+system CPU seconds at that moment
	rssMB    int           // peak resident set
	mid25    time.Duration // when the table held 25% of its rows
	mid75    time.Duration // and 75%
	midSpans time.Duration // sum of mid75-mid25 over added runs
	// serverCPU is the CPU seconds the ClickHouse server's queries took
	// meanwhile (its inserts, and the count() polls, alike for both).
	serverCPU float64
}

func (r *pinnedRun) add(o pinnedRun) {
	r.wall += o.wall
	r.cpu += o.cpu
	r.rssMB = max(r.rssMB, o.rssMB)
	r.midSpans += o.mid75 - o.mid25
	r.serverCPU += o.serverCPU
}

// mid is the mid-stream rate of one run in events/s: half the events over
// the time the table took from 25% to 75% of its rows.
func (r pinnedRun) mid(events float64) float64 {
	if r.mid75 <= r.mid25 {
		return 0
	}
	return events / 2 / (r.mid75 - r.mid25).Seconds()
}

// stallTimeout is how long a run may go without a new row before it fails.
const stallTimeout = 3 * time.Minute

// runPinned starts p under taskset on its core with GOMAXPROCS=1 and polls
// its table until it holds p.want rows, then stops it.
func runPinned(b *testing.B, p pinned) pinnedRun {
	b.Helper()
	logPath := filepath.Join(b.TempDir(), p.name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command("taskset", append([]string{"-c", p.core, p.bin}, p.args...)...)
	cmd.Env = append(append(os.Environ(), "GOMAXPROCS=1"), p.env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(40 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	fail := func(format string, args ...any) {
		stop()
		raw, _ := os.ReadFile(logPath)
		if len(raw) > 4000 {
			raw = raw[len(raw)-4000:]
		}
		b.Fatalf("%s: %s; log tail:\n%s", p.name, fmt.Sprintf(format, args...), raw)
	}
	var run pinnedRun
	server0, err := serverCPU(p.httpURL)
	if err != nil {
		fail("read the server's CPU: %v", err)
	}
	n, lastN, lastGrowth := 0, -1, time.Now()
	query := "SELECT count() FROM " + p.table
	for n < p.want {
		select {
		case err := <-done:
			done <- err
			fail("exited (%v) with %d of %d rows", err, n, p.want)
		case <-time.After(250 * time.Millisecond):
		}
		out, err := clickhousetest.QueryHTTP(p.httpURL, query)
		if err == nil {
			n, _ = strconv.Atoi(strings.TrimSpace(out))
		} else if !strings.Contains(err.Error(), "UNKNOWN_") {
			// Before the pipeline made its table, the query names an
			// unknown database or table; anything else is a failure.
			fail("count rows: %v", err)
		}
		since := time.Since(start)
		if run.mid25 == 0 && n >= p.want/4 {
			run.mid25 = since
		}
		if run.mid75 == 0 && n >= p.want*3/4 {
			run.mid75 = since
		}
		if n != lastN {
			lastN, lastGrowth = n, time.Now()
		} else if time.Since(lastGrowth) > stallTimeout {
			fail("no new row for %v at %d of %d rows", stallTimeout, n, p.want)
		}
		if n >= p.want {
			run.wall = since
			run.cpu, run.rssMB, err = procUsage(cmd.Process.Pid)
			if err != nil {
				fail("read its usage: %v", err)
			}
			server1, err := serverCPU(p.httpURL)
			if err != nil {
				fail("read the server's CPU: %v", err)
			}
			run.serverCPU = server1 - server0
		}
	}
	stop()
	if n > p.want {
		b.Logf("%s: %d rows, more than the %d expected", p.name, n, p.want)
	}
	return run
}

// procUsage reads a live process's user+system CPU seconds (all its
// threads; USER_HZ is 100 on Linux) and its peak RSS in MB.
func procUsage(pid int) (float64, int, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// Fields after the command, which is in parentheses and may hold spaces:
	// utime and stime are fields 14 and 15 of the whole line.
	rest := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(rest) < 13 {
		return 0, 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseFloat(rest[11], 64)
	stime, err2 := strconv.ParseFloat(rest[12], 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat: %q", pid, stat)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	rss := 0
	for _, l := range strings.Split(string(status), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.Atoi(f[1])
			rss = kb / 1024
		}
	}
	return (utime + stime) / 100, rss, nil
}

// serverCPU is the user+system CPU seconds the ClickHouse server has
// spent on queries so far (system.events).
func serverCPU(httpURL string) (float64, error) {
	out, err := clickhousetest.QueryHTTP(httpURL,
		"SELECT sum(value) FROM system.events WHERE event IN ('UserTimeMicroseconds', 'SystemTimeMicroseconds')")
	if err != nil {
		return 0, err
	}
	us, err := strconv.ParseFloat(strings.TrimSpace(out), 64)
	return us / 1e6, err
}

// clickhouseAddr is the HOST:PORT of a clickhouse:// DSN.
func clickhouseAddr(dsn string) (string, error) {
	rest, ok := strings.CutPrefix(dsn, "clickhouse://")
	if !ok {
		return "", fmt.Errorf("CLICKHOUSE_DSN %q: want clickhouse://", dsn)
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		rest = rest[at+1:]
	}
	host, _, _ := strings.Cut(rest, "/")
	return host, nil
}

// migrate applies mcplens's schema to the database of dsn before the run,
// as BenchmarkKafkaToClickHouse does (the collector's exporter creates its
// one table at start, inside its timing).
func migrate(b *testing.B, dsn string) {
	b.Helper()
	store, err := chstore.Open(context.Background(), dsn, chstore.DefaultConfig(), zerolog.Nop(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	// No TTL: loadgen's event time starts on a fixed day, and rows older
	// than a TTL counted from today would vanish at the server's merges
	// while the run polls for them.
	opts := schema.DefaultOptions()
	opts.TTL, opts.BodyTTL = 0, 0
	if err := store.Migrate(context.Background(), opts); err != nil {
		b.Fatal(err)
	}
}

// dropDatabase frees what a run stored before the next one.
func dropDatabase(b *testing.B, dsn, db string) {
	if err := clickhousetest.Exec(dsn, "DROP DATABASE IF EXISTS "+db+" SYNC"); err != nil {
		b.Logf("drop database %s: %v", db, err)
	}
}

// loadAverage is /proc/loadavg's 1-minute figure.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
