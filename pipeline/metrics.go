package pipeline

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// OtherServer is the server label of exchanges of servers seen after the
// per-server metrics reached their cap (Config.MetricsMaxServers);
// NoServer labels exchanges whose records name no server.
const (
	OtherServer = "_other"
	NoServer    = "_none"
)

// Outcome classes of the per-server metrics: a bounded set that says what
// an on-call engineer pages on, each outcome in exactly one class.
const (
	ClassOK            = "ok"             // SUCCESS, TOOL_SUCCESS, ACCEPTED
	ClassInputRequired = "input_required" // INPUT_REQUIRED (MRTR): neither success nor failure
	ClassHTTP200Failed = "http200_failed" // a 2xx answer that failed: JSON-RPC or tool errors, malformed or invalid answers
	ClassStreamCut     = "stream_cut"     // STREAM_INCOMPLETE: the SSE stream ended before the answer
	ClassHTTPError     = "http_error"     // HTTP_ERROR: a status outside 2xx
	ClassNoAnswer      = "no_answer"      // TRANSPORT_ERROR, NO_RESPONSE: nothing came back
	ClassCancelled     = "cancelled"      // CANCELLED: the client's decision, not a server failure
	ClassUnverified    = "unverified"     // UNVERIFIED: a 2xx whose record cannot show more
)

// OutcomeClass is the per-server metrics' class of an outcome.
func OutcomeClass(o classify.Outcome) string {
	switch o {
	case classify.Success, classify.ToolSuccess, classify.Accepted:
		return ClassOK
	case classify.InputRequired:
		return ClassInputRequired
	case classify.StreamIncomplete:
		return ClassStreamCut
	case classify.HTTPError:
		return ClassHTTPError
	case classify.TransportError, classify.NoResponse:
		return ClassNoAnswer
	case classify.Cancelled:
		return ClassCancelled
	case classify.Unverified:
		return ClassUnverified
	}
	return ClassHTTP200Failed
}

// metrics are the ingest pipeline's Prometheus series.
type metrics struct {
	events        *prometheus.CounterVec // by result: accepted, duplicate, quarantined
	exchanges     *prometheus.CounterVec // by outcome
	pending       prometheus.Gauge
	pendingBytes  prometheus.Gauge
	mergeWaiting  prometheus.Gauge
	mergeMissed   prometheus.Counter
	mergeExtra    prometheus.Gauge
	inflight      prometheus.Gauge
	evicted       prometheus.Counter
	noResponse    prometheus.Counter
	sinkSeconds   prometheus.Histogram
	sinkBlocked   prometheus.Counter
	sinkErrors    prometheus.Counter
	sinkRows      prometheus.Counter
	sinkBatchRows prometheus.Histogram
	sinkExchanges prometheus.Counter
	commitErrors  prometheus.Counter
	committed     *prometheus.GaugeVec   // by stream
	quarantined   *prometheus.CounterVec // by stream

	// accepted and duplicate are events' series counted once a line, held
	// so that a line costs no label lookup.
	accepted, duplicate prometheus.Counter

	byServer       *prometheus.CounterVec // by server (capped) and outcome class
	unknownRetries *prometheus.CounterVec // by server (capped)
	maxServers     int
	// servers are the series of each server label (the capped names,
	// OtherServer and NoServer), looked up once per label instead of
	// hashing the label values of every exchange; outcomes likewise.
	servers  map[string]*serverSeries
	named    int // servers with a label of their own
	outcomes map[classify.Outcome]prometheus.Counter
}

// serverSeries are one server label's counters.
type serverSeries struct {
	label   string
	byClass map[string]prometheus.Counter
	retries prometheus.Counter // nil until the label's first retry
}

func newMetrics(reg prometheus.Registerer, maxServers int) *metrics {
	m := &metrics{
		maxServers: maxServers,
		servers:    map[string]*serverSeries{},
		outcomes:   map[classify.Outcome]prometheus.Counter{},
		byServer: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_ingest_server_exchanges_total",
			Help: "Exchange records emitted, by server and outcome class: ok, input_required, http200_failed (2xx but a JSON-RPC or tool error, a malformed or invalid answer), stream_cut, http_error, no_answer, cancelled (by the client), unverified (a record without bodies that cannot show the outcome). Servers past --metrics-max-servers are counted as server=\"_other\", records without a server as \"_none\".",
		}, []string{"server", "class"}),
		unknownRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_ingest_unknown_side_effect_retries_total",
			Help: "Tool calls re-sent after an earlier attempt whose outcome was unknown (the tool may have run twice), by server (capped like mcplens_ingest_server_exchanges_total).",
		}, []string{"server"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_ingest_events_total",
			Help: "Log events read, by result: accepted, duplicate (dropped by dedupe), quarantined (undecodable), ignored (a message of another format with no MCP traffic in it).",
		}, []string{"result"}),
		exchanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_ingest_exchanges_total",
			Help: "Exchange records emitted, by outcome (all servers; mcplens_ingest_server_exchanges_total has them per server).",
		}, []string{"outcome"}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_ingest_pending",
			Help: "Request and response halves waiting for their other half.",
		}),
		pendingBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_ingest_pending_bytes",
			Help: "Estimated memory held by waiting halves.",
		}),
		mergeWaiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_ingest_merge_waiting",
			Help: "Exchange records waiting up to --merge-window for another observer's record of the same call (with a state store they are saved, so they hold no commit back).",
		}),
		mergeMissed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcplens_ingest_merge_missed_total",
			Help: "Views read after another observer's view of the same exchange (by exchange_id) was already released: two records of one call. Each makes later exchanges wait longer, up to --lateness.",
		}),
		mergeExtra: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_ingest_merge_extra_wait_seconds",
			Help: "How much longer than --merge-window exchanges wait now, because views were read late (fades over 10 minutes of event time).",
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
		sinkBlocked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcplens_ingest_sink_blocked_seconds_total",
			Help: "Time the ingest loop stood still waiting for the batch in flight to be stored: when it grows about as fast as the clock, the store is what limits ingest, not reading or classifying.",
		}),
		sinkErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcplens_ingest_sink_errors_total",
			Help: "Failed sink writes (each is retried with backoff).",
		}),
		sinkRows: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcplens_ingest_sink_rows_total",
			Help: "Rows of every table acknowledged by the sink: exchanges, exchange_bodies, quarantine and tool_annotations together (one exchange is usually two rows); mcplens_ingest_sink_exchanges_total counts exchanges alone.",
		}),
		sinkBatchRows: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "mcplens_ingest_sink_batch_rows",
			Help: "Rows of each batch the sink acknowledged, every table together. A batch goes at --batch-size rows or --flush-interval; while the write before it is in flight it grows up to --batch-max-size rows or --batch-max-bytes: batches well past --batch-size mean the store is what limits ingest.",
			// 256 to 131,072 rows: the flush tick's small batches, the
			// default --batch-size (10,000) and --batch-max-size (40,000).
			Buckets: prometheus.ExponentialBuckets(256, 2, 10),
		}),
		sinkExchanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcplens_ingest_sink_exchanges_total",
			Help: "Exchange records acknowledged by the sink (the exchanges table's rows).",
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
		reg.MustRegister(m.events, m.exchanges, m.pending, m.pendingBytes, m.mergeWaiting, m.mergeMissed, m.mergeExtra, m.inflight, m.evicted,
			m.noResponse, m.sinkSeconds, m.sinkBlocked, m.sinkErrors, m.sinkRows, m.sinkBatchRows, m.sinkExchanges, m.commitErrors, m.committed,
			m.quarantined, m.byServer, m.unknownRetries)
	}
	m.accepted, m.duplicate = m.events.WithLabelValues("accepted"), m.events.WithLabelValues("duplicate")
	return m
}

// exchange counts one emitted exchange record. Called by the engine's
// loop alone.
func (m *metrics) exchange(rec *schema.Exchange) {
	c, ok := m.outcomes[rec.Outcome]
	if !ok {
		c = m.exchanges.WithLabelValues(string(rec.Outcome))
		m.outcomes[rec.Outcome] = c
	}
	c.Inc()
	if rec.Outcome == classify.NoResponse {
		m.noResponse.Inc()
	}
	srv := m.server(rec.Server)
	class := OutcomeClass(rec.Outcome)
	c, ok = srv.byClass[class]
	if !ok {
		c = m.byServer.WithLabelValues(srv.label, class)
		srv.byClass[class] = c
	}
	c.Inc()
	if rec.UnknownSideEffectRetry {
		if srv.retries == nil { // made on the first retry, like the label's other series
			srv.retries = m.unknownRetries.WithLabelValues(srv.label)
		}
		srv.retries.Inc()
	}
}

// server returns the series of the server's label, made on first use:
// the server's own name while fewer than maxServers have one (the first
// ones seen keep theirs), OtherServer after that, NoServer for none.
func (m *metrics) server(server string) *serverSeries {
	if srv, ok := m.servers[server]; ok {
		return srv
	}
	label := server
	switch {
	case server == "":
		label = NoServer
	case m.named >= m.maxServers:
		label = OtherServer
	}
	if label == server {
		m.named++
	} else if srv, ok := m.servers[label]; ok {
		return srv
	}
	srv := &serverSeries{label: label, byClass: map[string]prometheus.Counter{}}
	m.servers[label] = srv
	return srv
}
