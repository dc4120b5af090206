package tap

import "github.com/prometheus/client_golang/prometheus"

// queueMetrics are the Queue's Prometheus metrics.
type queueMetrics struct {
	events     *prometheus.CounterVec
	queued     prometheus.Gauge
	spillBytes prometheus.Gauge
	sinkErrors prometheus.Counter
}

func newQueueMetrics(reg prometheus.Registerer) queueMetrics {
	m := queueMetrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_tap_events_total",
			Help: "Recorded events by what became of them: delivered, spilled (to the spill files, delivered later), dropped (lost: memory and spill full), rejected (the sink refused them for good).",
		}, []string{"result"}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_tap_queue_events",
			Help: "Events waiting in memory for the sink.",
		}),
		spillBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_tap_spill_bytes",
			Help: "Bytes of events waiting in the spill files.",
		}),
		sinkErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcplens_tap_sink_errors_total",
			Help: "Failed delivery attempts to the sink (each is retried).",
		}),
	}
	for _, r := range []string{"delivered", "spilled", "dropped", "rejected"} {
		m.events.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.events, m.queued, m.spillBytes, m.sinkErrors)
	}
	return m
}
