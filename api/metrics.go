package api

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the API's request metrics, labelled by route template (the
// OpenAPI path, "unmatched" for unknown paths) so that ids never become
// label values.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_api_requests_total",
			Help: "API requests answered, by route template and HTTP status.",
		}, []string{"route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcplens_api_request_duration_seconds",
			Help:    "Time to answer an API request, by route template.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .2, .5, 1, 2.5, 5, 10},
		}, []string{"route"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("register api metrics: %w (one API per registry)", err)
			}
			return nil, fmt.Errorf("register api metrics: %w", err)
		}
	}
	return m, nil
}
