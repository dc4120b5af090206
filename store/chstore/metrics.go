package chstore

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	rows     *prometheus.CounterVec
	seconds  prometheus.Histogram
	retries  prometheus.Counter
	failures *prometheus.CounterVec
	expired  *prometheus.CounterVec
	// unsureSkipped counts rows left out as stored by a stream's previous
	// owner in a batch it did not finish.
	unsureSkipped prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_clickhouse_inserted_rows_total", Help: "Rows inserted into ClickHouse, by table.",
		}, []string{"table"}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "mcplens_clickhouse_insert_seconds", Help: "Time of one INSERT, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcplens_clickhouse_insert_retries_total", Help: "Insert attempts repeated after a transient error.",
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_clickhouse_insert_failures_total", Help: "Inserts given up, by kind of error (transient after all attempts, or permanent).",
		}, []string{"kind"}),
		expired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_clickhouse_expired_rows_total", Help: "Rows stored older than their table's TTL, which ClickHouse deletes at its next merges, by table.",
		}, []string{"table"}),
		unsureSkipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcplens_clickhouse_unsure_rows_skipped_total", Help: "Rows formed again from re-read events and left out because a batch the stream's previous owner did not finish had stored them.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.rows, m.seconds, m.retries, m.failures, m.expired, m.unsureSkipped)
	}
	return m
}
