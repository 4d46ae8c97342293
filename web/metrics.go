package web

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/asb-dev/asb/app"
)

// StatsSource is what the metrics read at scrape time.
type StatsSource interface {
	Stats(ctx context.Context) (app.Stats, error)
}

// Metrics is asb's Prometheus registry. Other packages do not import the
// Prometheus client: they expose plain counters that a collector here
// reads when scraped.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// NewMetrics registers the process, Go runtime and core collectors.
func NewMetrics(src StatsSource) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "asb_http_requests_total", Help: "HTTP requests by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "asb_http_request_duration_seconds", Help: "HTTP request latency by route pattern.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"route"}),
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, m.latency, &coreCollector{src: src})
	return m
}

// Handler serves the registry in Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

func (m *Metrics) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		// The route pattern, not the path, keeps label cardinality bounded.
		route := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
			route = rc.RoutePattern()
		}
		m.requests.WithLabelValues(route, r.Method, strconv.Itoa(ww.Status())).Inc()
		m.latency.WithLabelValues(route).Observe(time.Since(start).Seconds())
	})
}

var (
	runsDesc        = prometheus.NewDesc("asb_runs", "Runs by state.", []string{"state"}, nil)
	queueDesc       = prometheus.NewDesc("asb_queue_depth", "Runs queued and not yet started.", nil, nil)
	workersDesc     = prometheus.NewDesc("asb_run_workers", "Runs being driven by this controller.", nil, nil)
	subscribersDesc = prometheus.NewDesc("asb_event_subscribers", "Open live event subscriptions.", nil, nil)
	scrapeErrDesc   = prometheus.NewDesc("asb_stats_error", "1 when the core's counters could not be read.", nil, nil)
)

type coreCollector struct{ src StatsSource }

func (c *coreCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- runsDesc
	ch <- queueDesc
	ch <- workersDesc
	ch <- subscribersDesc
	ch <- scrapeErrDesc
}

func (c *coreCollector) Collect(ch chan<- prometheus.Metric) {
	if c.src == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := c.src.Stats(ctx)
	failed := 0.0
	if err != nil {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(scrapeErrDesc, prometheus.GaugeValue, failed)
	for _, s := range app.AllStates {
		ch <- prometheus.MustNewConstMetric(runsDesc, prometheus.GaugeValue, float64(st.RunsByState[s]), string(s))
	}
	ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(st.QueueDepth))
	ch <- prometheus.MustNewConstMetric(workersDesc, prometheus.GaugeValue, float64(st.Workers))
	ch <- prometheus.MustNewConstMetric(subscribersDesc, prometheus.GaugeValue, float64(st.Subscribers))
}
