package pipeline

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the ingest pipeline's Prometheus series.
type metrics struct {
	events       *prometheus.CounterVec // by result: accepted, duplicate, quarantined
	exchanges    *prometheus.CounterVec // by outcome
	pending      prometheus.Gauge
	pendingBytes prometheus.Gauge
	inflight     prometheus.Gauge
	evicted      prometheus.Counter
	noResponse   prometheus.Counter
	sinkSeconds  prometheus.Histogram
	sinkErrors   prometheus.Counter
	sinkRows     prometheus.Counter
	commitErrors prometheus.Counter
	committed    *prometheus.GaugeVec   // by stream
	quarantined  *prometheus.CounterVec // by stream
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_ingest_events_total",
			Help: "Log events read, by result: accepted, duplicate (dropped by dedupe), quarantined (undecodable).",
		}, []string{"result"}),
		exchanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_ingest_exchanges_total",
			Help: "Exchange records emitted, by outcome.",
		}, []string{"outcome"}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_ingest_pending",
			Help: "Request and response halves waiting for their other half.",
		}),
		pendingBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_ingest_pending_bytes",
			Help: "Estimated memory held by waiting halves.",
		}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_ingest_inflight_positions",
			Help: "Consumed source positions not yet durably stored (they hold the commit back).",
		}),
		evicted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcplens_ingest_evicted_total",
			Help: "Waiting halves evicted because pending state was full; each is emitted as NO_RESPONSE or as an orphan.",
		}),
		noResponse: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcplens_ingest_no_response_total",
			Help: "Requests emitted as NO_RESPONSE because their response never arrived.",
		}),
		sinkSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mcplens_ingest_sink_write_seconds",
			Help:    "Time to write one batch durably to the sink, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		sinkErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcplens_ingest_sink_errors_total",
			Help: "Failed sink writes (each is retried with backoff).",
		}),
		sinkRows: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcplens_ingest_sink_rows_total",
			Help: "Rows acknowledged by the sink (exchanges, bodies, quarantine, annotations).",
		}),
		commitErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcplens_ingest_commit_errors_total",
			Help: "Source commits that failed (retried at the next flush; the data was already stored).",
		}),
		committed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mcplens_ingest_committed_position",
			Help: "Last committed source position (next offset or line to read) per stream.",
		}, []string{"stream"}),
		quarantined: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_ingest_quarantined_total",
			Help: "Lines quarantined per stream.",
		}, []string{"stream"}),
	}
	if reg != nil {
		reg.MustRegister(m.events, m.exchanges, m.pending, m.pendingBytes, m.inflight, m.evicted,
			m.noResponse, m.sinkSeconds, m.sinkErrors, m.sinkRows, m.commitErrors, m.committed, m.quarantined)
	}
	return m
}
