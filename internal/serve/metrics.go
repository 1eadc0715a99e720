package serve

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hiro-dev/hiro/internal/control"
)

// metrics are the router's Prometheus series, in a registry of its own
// (no global state; tests start several routers in one process).
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec   // route, backend, status
	ttfb     *prometheus.HistogramVec // route, backend
	duration *prometheus.HistogramVec // route, backend
	tokens   *prometheus.CounterVec   // backend, kind (prompt, completion)
	upErrors *prometheus.CounterVec   // backend, class
	restarts *prometheus.CounterVec   // backend
	canaries *prometheus.CounterVec   // backend, result
	active   *prometheus.GaugeVec     // backend, engine, model, state
	inFlight prometheus.Gauge
	procs    prometheus.Gauge
	connsCut *prometheus.CounterVec // reason (conns.go's connCut*)
	// series caches the per-request series by route and backend, so a
	// request costs no label hashing (see observe).
	series sync.Map // seriesKey → *requestSeries
}

type seriesKey struct{ route, backend string }

// requestSeries are one route and backend's series.
type requestSeries struct {
	ttfb, duration prometheus.Observer
	byStatus       sync.Map // int → prometheus.Counter
}

// observe counts a request of route to backend ("" when it reached
// none) answered with status, and, when ttfb > 0, its time to first
// byte and duration.
func (m *metrics) observe(route, backend string, status int, ttfb, duration time.Duration) {
	k := seriesKey{route, backend}
	v, ok := m.series.Load(k)
	if !ok {
		v, _ = m.series.LoadOrStore(k, &requestSeries{ttfb: m.ttfb.WithLabelValues(route, backend),
			duration: m.duration.WithLabelValues(route, backend)})
	}
	rs := v.(*requestSeries)
	c, ok := rs.byStatus.Load(status)
	if !ok {
		c, _ = rs.byStatus.LoadOrStore(status, m.requests.WithLabelValues(route, backend, strconv.Itoa(status)))
	}
	c.(prometheus.Counter).Inc()
	if ttfb > 0 {
		rs.ttfb.Observe(ttfb.Seconds())
		rs.duration.Observe(duration.Seconds())
	}
}

// latencyBuckets cover 100 µs (the router's own cost) to 5 min (a long
// generation), in seconds.
var latencyBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
	0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hiro_serve_requests_total",
		Help: "Requests the router answered, by route, backend and HTTP status."}, []string{"route", "backend", "status"})
	m.ttfb = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hiro_serve_ttfb_seconds",
		Help: "Time from the request's arrival to the first response body byte sent to the client.", Buckets: latencyBuckets},
		[]string{"route", "backend"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hiro_serve_request_duration_seconds",
		Help: "Time from the request's arrival to the end of its response.", Buckets: latencyBuckets},
		[]string{"route", "backend"})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hiro_serve_tokens_total",
		Help: "Tokens reported by the upstream usage object, by backend and kind (prompt, completion)."}, []string{"backend", "kind"})
	m.upErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hiro_serve_upstream_errors_total",
		Help: "Upstream failures by backend and class (connect, timeout, reset, canceled, cut: a body broken mid-way, auth: the backend refused the router's key, other, or a failure class of a death or failed canary)."},
		[]string{"backend", "class"})
	m.restarts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hiro_serve_restarts_total",
		Help: "Restarts of a managed production by the router."}, []string{"backend"})
	m.canaries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hiro_serve_canaries_total",
		Help: "Canary completions by backend and result (ok, failed, skipped)."}, []string{"backend", "result"})
	m.active = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hiro_serve_active_backend_info",
		Help: "1 for the active production backend, with its engine, model and state."}, []string{"backend", "engine", "model", "state"})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{Name: "hiro_serve_in_flight_requests",
		Help: "Proxied requests in progress."})
	m.procs = prometheus.NewGauge(prometheus.GaugeOpts{Name: "hiro_serve_procs",
		Help: "Processors (GOMAXPROCS) the router runs on now; [serve] procs = 0 adapts it to the load."})
	m.connsCut = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hiro_serve_connections_cut_total",
		Help: "Client connections the router closed or refused to make room, by reason: unauthenticated_per_address and unauthenticated (the oldest connection without a valid key closed for a new one), refused (a new one answered 503: no idle unauthenticated connection to close)."},
		[]string{"reason"})
	m.reg.MustRegister(m.connsCut, m.requests, m.ttfb, m.duration, m.tokens, m.upErrors, m.restarts, m.canaries, m.active, m.inFlight, m.procs,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// registerConns adds the gauges of g's open connections.
func (m *metrics) registerConns(g *connGate) {
	for _, kind := range []string{"authenticated", "unauthenticated"} {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "hiro_serve_connections",
			Help:        "Client connections open, by kind: authenticated once a request on it passed the key check, unauthenticated before.",
			ConstLabels: prometheus.Labels{"kind": kind}}, func() float64 {
			open, unauth := g.counts()
			if kind == "unauthenticated" {
				return float64(unauth)
			}
			return float64(open - unauth)
		}))
	}
}

// setActive makes backend the only active series.
func (m *metrics) setActive(backend, engine, model string, state control.State) {
	m.active.Reset()
	m.active.WithLabelValues(backend, engine, model, string(state)).Set(1)
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
