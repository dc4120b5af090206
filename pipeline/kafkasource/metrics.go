package kafkasource

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the per-partition gauges of a Source. Several Sources may
// share one registry: a second registration reuses the first collector.
type metrics struct {
	lag       *prometheus.GaugeVec
	committed *prometheus.GaugeVec
	aligned   *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mcplens_ingest_consumer_lag",
			Help: "Messages in the partition after the last one fetched (high watermark - next offset), as of the last fetch.",
		}, []string{"topic", "partition"}),
		committed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mcplens_ingest_committed_offset",
			Help: "Last offset committed for the consumer group: the next offset to read.",
		}, []string{"topic", "partition"}),
		aligned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_ingest_kafka_align_wait_seconds_total",
			Help: "Time Fetch held back messages it had, waiting for a partition behind with nothing buffered (at most align_wait each time); see the Kafka source's align_wait.",
		}, []string{"topic"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.lag, err = register(reg, m.lag); err != nil {
		return nil, err
	}
	if m.committed, err = register(reg, m.committed); err != nil {
		return nil, err
	}
	if m.aligned, err = register(reg, m.aligned); err != nil {
		return nil, err
	}
	return m, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("register kafka source metrics: %w", err)
}

// partition holds what a Source keeps per partition: the Stream name, the
// last committed offset and the partition's gauges.
type partition struct {
	stream    string
	committed int64 // next offset to read, as last committed; -1 if none
	lagNow    int64 // lag as of the last fetch, read under Source.mu
	lag       prometheus.Gauge
	offset    prometheus.Gauge
}

func (m *metrics) partition(topic string, p int) *partition {
	label := strconv.Itoa(p)
	return &partition{
		stream:    topic + "/" + label,
		committed: -1,
		lag:       m.lag.WithLabelValues(topic, label),
		offset:    m.committed.WithLabelValues(topic, label),
	}
}

func (m *metrics) forget(topic string, p int) {
	label := strconv.Itoa(p)
	m.lag.DeleteLabelValues(topic, label)
	m.committed.DeleteLabelValues(topic, label)
}
