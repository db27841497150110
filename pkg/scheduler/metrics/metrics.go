// Package metrics defines schedscope's scheduler metrics. They are
// component-base metrics, so they appear on the scheduler's own /metrics next
// to upstream's scheduler_* metrics. Every attempt is counted (unlike
// upstream's sampled plugin metrics), and labels come only from closed sets:
// profile, shadow profile, plugin, extension point, status code, result and
// shadow outcome, besides the
// versions on schedscope_build_info's one series.
package metrics

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/schedscope/schedscope/pkg/record"
)

const namespace = "schedscope"

// Label names.
const (
	labelProfile = "profile"
	labelResult  = "result"
	labelPlugin  = "plugin"
	labelCode    = "code"
	labelPoint   = "extension_point"
	labelShadow  = "shadow"
	labelOutcome = "outcome"
)

// Sources reads the values that live elsewhere: the record pipeline and the
// tracer. A nil function reports zero.
type Sources struct {
	// BufferedRecords is the number of records in the stream buffer.
	BufferedRecords func() float64
	// BufferedBytes is the size of the records' JSON in the stream buffer.
	BufferedBytes func() float64
	// EvictedRecords counts records overwritten in the stream buffer.
	EvictedRecords func() float64
	// DroppedRecords counts attempts that never became records.
	DroppedRecords func() float64
	// StreamWatchers is the number of open watches of the record stream.
	StreamWatchers func() float64
	// DroppedSpans counts spans dropped before export.
	DroppedSpans func() float64
	// FailedSpans counts spans whose export failed.
	FailedSpans func() float64
	// SkippedAttempts counts attempts not traced because their spans could not have been exported.
	SkippedAttempts func() float64
	// MalformedTraceparents counts attempts whose pod's traceparent annotation was ignored.
	MalformedTraceparents func() float64
}

// Metrics are the scheduler's schedscope metrics.
type Metrics struct {
	Attempts              *metrics.CounterVec
	AttemptDuration       *metrics.HistogramVec
	QueueWait             *metrics.HistogramVec
	UnschedulableByPlugin *metrics.CounterVec
	FilterVerdicts        *metrics.CounterVec
	PluginDuration        *metrics.HistogramVec
	ShadowAttempts        *metrics.CounterVec
	ShadowPods            *metrics.CounterVec
	scores                *scoreCollector
	buildInfo             *buildInfoCollector
}

// New returns unregistered metrics.
func New() *Metrics {
	return &Metrics{
		Attempts: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: namespace, Subsystem: "attempts", Name: "total",
			Help:           "Scheduling attempts by profile and result (scheduled, unschedulable, error).",
			StabilityLevel: metrics.ALPHA,
		}, []string{labelProfile, labelResult}),
		AttemptDuration: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Namespace: namespace, Subsystem: "attempt", Name: "duration_seconds",
			Help: "Time from the start of the scheduling cycle to the end of the attempt (bound, or handed back to the queue).",
			// 100µs to ~100s: fast cycles on small clusters up to slow binds and permit waits.
			Buckets:        metrics.ExponentialBuckets(0.0001, 2, 20),
			StabilityLevel: metrics.ALPHA,
		}, []string{labelProfile, labelResult}),
		QueueWait: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Namespace: namespace, Subsystem: "attempt", Name: "queue_wait_seconds",
			Help: "Time a pod waited in the scheduling queue before the attempt.",
			// 100µs to ~30 min: immediate pops up to pods parked as unschedulable.
			Buckets:        metrics.ExponentialBuckets(0.0001, 3, 16),
			StabilityLevel: metrics.ALPHA,
		}, []string{labelProfile, labelResult}),
		UnschedulableByPlugin: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: namespace, Subsystem: "attempt", Name: "unschedulable_by_plugin_total",
			Help:           "Unschedulable attempts by each plugin that rejected at least one node (or the pod, at PreFilter).",
			StabilityLevel: metrics.ALPHA,
		}, []string{labelProfile, labelPlugin}),
		FilterVerdicts: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: namespace, Subsystem: "filter", Name: "verdicts_total",
			Help:           "Filter verdicts on nodes by plugin and status code: Success for a node the plugin passed, else the code it rejected with.",
			StabilityLevel: metrics.ALPHA,
		}, []string{labelProfile, labelPlugin, labelCode}),
		PluginDuration: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Namespace: namespace, Subsystem: "plugin", Name: "duration_seconds",
			Help: "Time a plugin took at an extension point in one attempt, summed over nodes for Filter and Score. Not sampled.",
			// 1µs to ~1s.
			Buckets:        metrics.ExponentialBuckets(0.000001, 4, 11),
			StabilityLevel: metrics.ALPHA,
		}, []string{labelProfile, labelPlugin, labelPoint}),
		ShadowAttempts: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: namespace, Subsystem: "shadow", Name: "attempts_total",
			Help: "Attempts of a profile that a shadow profile also ran, by how the shadow's choice compares: " +
				"sameNode, otherNode, liveOnly, shadowOnly, neither, or notCompared when the shadow could not see the live attempt's state.",
			StabilityLevel: metrics.ALPHA,
		}, []string{labelProfile, labelShadow, labelOutcome}),
		ShadowPods: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: namespace, Subsystem: "shadow", Name: "pods_total",
			Help:           "Pods seen that name a shadow profile's schedulerName: a shadow schedules no pod, so nothing schedules them.",
			StabilityLevel: metrics.ALPHA,
		}, []string{labelShadow}),
		scores:    newScoreCollector(scoreHistogramOpts()),
		buildInfo: newRunningBuildInfoCollector(),
	}
}

func (m *Metrics) registerables() []metrics.Registerable {
	return []metrics.Registerable{m.Attempts, m.AttemptDuration, m.QueueWait, m.UnschedulableByPlugin,
		m.FilterVerdicts, m.PluginDuration, m.ShadowAttempts, m.ShadowPods}
}

// Registry is where metrics are registered: a metrics.KubeRegistry, or the
// global registry.
type Registry interface {
	MustRegister(...metrics.Registerable)
	CustomMustRegister(...metrics.StableCollector)
}

// RegisterTo registers the metrics with r, and the pipeline's counters
// read from sources.
func (m *Metrics) RegisterTo(r Registry, sources Sources) {
	r.MustRegister(m.registerables()...)
	r.CustomMustRegister(m.scores, newPipelineCollector(sources), m.buildInfo)
}

var registerOnce sync.Once

// Register registers m with the global registry served at the scheduler's
// /metrics. Only the first call registers: the global registry takes one
// set of metrics.
func Register(m *Metrics, sources Sources) error {
	err := errors.New("the scheduler's metrics are already registered")
	registerOnce.Do(func() {
		m.RegisterTo(globalRegistry{}, sources)
		err = nil
	})
	return err
}

// globalRegistry is the registry served at the scheduler's /metrics.
type globalRegistry struct{}

func (globalRegistry) MustRegister(ms ...metrics.Registerable) { legacyregistry.MustRegister(ms...) }
func (globalRegistry) CustomMustRegister(cs ...metrics.StableCollector) {
	legacyregistry.CustomMustRegister(cs...)
}

// Names returns the names of every metric, for documentation checks.
func (m *Metrics) Names() []string {
	var names []string
	for _, r := range m.registerables() {
		names = append(names, r.FQName())
	}
	names = append(names, m.scores.normalized.name, m.scores.weighted.name)
	for _, d := range newPipelineCollector(Sources{}).descs {
		names = append(names, d.name)
	}
	names = append(names, buildInfoName)
	return names
}

// ObserveRecord counts one finished attempt.
func (m *Metrics) ObserveRecord(rec *record.Attempt) {
	profile, result := rec.Profile, string(rec.Result)
	m.Attempts.WithLabelValues(profile, result).Inc()
	m.AttemptDuration.WithLabelValues(profile, result).Observe(rec.Timing.Finished.Sub(rec.Timing.Started).Seconds())
	m.QueueWait.WithLabelValues(profile, result).Observe(rec.Timing.QueueWait.Seconds())

	for _, g := range rec.Filter {
		if g.Verdict == record.VerdictRejected {
			m.FilterVerdicts.WithLabelValues(profile, g.Plugin, g.Code).Add(float64(len(g.Nodes)))
		}
	}
	rejectedBy := map[string]int64{}
	for _, r := range rec.RejectionsByPlugin() {
		rejectedBy[r.Plugin] = int64(len(r.Nodes))
	}
	for _, p := range rec.Plugins {
		m.PluginDuration.WithLabelValues(profile, p.Plugin, p.Point).Observe(p.Duration.Seconds())
		if p.Point == record.Filter {
			if passed := p.Calls - rejectedBy[p.Plugin]; passed > 0 {
				m.FilterVerdicts.WithLabelValues(profile, p.Plugin, "Success").Add(float64(passed))
			}
		}
	}
	if rec.Result == record.ResultUnschedulable {
		for plugin := range rejectedBy {
			m.UnschedulableByPlugin.WithLabelValues(profile, plugin).Inc()
		}
		for _, p := range rec.PreFilter {
			if p.Code != record.CodeSuccess && p.Code != record.CodeSkip {
				m.UnschedulableByPlugin.WithLabelValues(profile, p.Plugin).Inc()
			}
		}
	}
	if rec.Scores != nil {
		for i, p := range rec.Scores.Plugins {
			m.scores.observe(profile, p.Name, rec.Scores.Nodes, i)
		}
	}
	for _, s := range rec.Shadows {
		m.ShadowAttempts.WithLabelValues(profile, s.Profile, string(s.Outcome)).Inc()
		if s.Attempt == nil {
			continue
		}
		for _, p := range s.Attempt.Plugins {
			m.PluginDuration.WithLabelValues(s.Profile, p.Plugin, p.Point).Observe(p.Duration.Seconds())
		}
	}
}

// scoreHistogramOpts returns the options of the score histograms, whose
// labels are profile and plugin.
func scoreHistogramOpts() (normalized, weighted *metrics.HistogramOpts) {
	normalized = &metrics.HistogramOpts{
		Namespace: namespace, Subsystem: "score", Name: "normalized",
		Help: "Normalized score a plugin gave each scored node.",
		// Scores range from 0 to 100.
		Buckets:        metrics.LinearBuckets(0, 10, 11),
		StabilityLevel: metrics.ALPHA,
	}
	weighted = &metrics.HistogramOpts{
		Namespace: namespace, Subsystem: "score", Name: "weighted",
		Help: "Weighted score (normalized times the plugin's weight) a plugin gave each scored node.",
		// 0 up to 100 x weights in the hundreds.
		Buckets:        []float64{0, 10, 25, 50, 100, 200, 300, 500, 1000, 2500, 10000},
		StabilityLevel: metrics.ALPHA,
	}
	return normalized, weighted
}

// scoreCollector exports the score histograms as HistogramVecs with the same
// options would (classic buckets only), but is far cheaper to feed. An attempt
// scores hundreds of nodes with every score plugin: one HistogramVec Observe
// per score took about 30 ns of atomics, 240 µs for an attempt with 500 scored
// nodes and 8 plugins. Here each plugin's scores are added under one lock
// with plain arithmetic.
type scoreCollector struct {
	metrics.BaseStableCollector
	normalized, weighted *scoreHistogram

	mu sync.Mutex // guards the series of both histograms
}

func newScoreCollector(normalized, weighted *metrics.HistogramOpts) *scoreCollector {
	return &scoreCollector{normalized: newScoreHistogram(normalized), weighted: newScoreHistogram(weighted)}
}

// observe adds the scores the i-th score plugin gave nodes.
func (c *scoreCollector) observe(profile, plugin string, nodes []record.NodeScore, i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	normalized := c.normalized.series(profile, plugin)
	weighted := c.weighted.series(profile, plugin)
	// Summed in the order Observe would have added them, so the sums come out
	// bit for bit the same.
	normalizedSum, weightedSum := normalized.sum, weighted.sum
	for j := range nodes {
		n, w := nodes[j].Normalized[i], nodes[j].Weighted[i]
		normalized.counts[c.normalized.bucket(n)]++
		weighted.counts[c.weighted.bucket(w)]++
		normalizedSum += float64(n)
		weightedSum += float64(w)
	}
	normalized.sum, weighted.sum = normalizedSum, weightedSum
}

func (c *scoreCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- c.normalized.desc
	ch <- c.weighted.desc
}

func (c *scoreCollector) CollectWithStability(ch chan<- metrics.Metric) {
	c.mu.Lock()
	collected := append(c.normalized.collect(), c.weighted.collect()...)
	c.mu.Unlock()
	for _, m := range collected {
		ch <- m
	}
}

// Reset forgets every series, as the registry's Reset does to the vectors of
// the other metrics.
func (c *scoreCollector) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.normalized.byLabels)
	clear(c.weighted.byLabels)
}

// scoreHistogram is one histogram of scoreCollector.
type scoreHistogram struct {
	name string
	// desc is registered; promDesc, with the help as component-base
	// annotates it ("[ALPHA] ..."), describes the collected metrics.
	desc        *metrics.Desc
	promDesc    *prometheus.Desc
	upperBounds []float64
	// bucketOf[v] is the bucket of the score v, for v from 0 to the last
	// upper bound: scores are integers, and a lookup is faster than a search.
	// (The histograms have far fewer than 256 buckets.)
	bucketOf []uint8
	byLabels map[scoreLabels]*histogramSeries
}

type scoreLabels struct{ profile, plugin string }

// histogramSeries is what a histogram has observed for one set of labels.
type histogramSeries struct {
	counts  []uint64 // by bucket, not cumulative; the last is +Inf's
	sum     float64
	created time.Time // reported in protobuf scrapes, as a HistogramVec's series reports it
}

func newScoreHistogram(opts *metrics.HistogramOpts) *scoreHistogram {
	name := metrics.BuildFQName(opts.Namespace, opts.Subsystem, opts.Name)
	labels := []string{labelProfile, labelPlugin}
	h := &scoreHistogram{
		name:        name,
		desc:        metrics.NewDesc(name, opts.Help, labels, nil, opts.StabilityLevel, ""),
		promDesc:    prometheus.NewDesc(name, fmt.Sprintf("[%v] %v", opts.StabilityLevel, opts.Help), labels, nil),
		upperBounds: opts.Buckets,
		bucketOf:    make([]uint8, int(opts.Buckets[len(opts.Buckets)-1])+1),
		byLabels:    map[scoreLabels]*histogramSeries{},
	}
	for v := range h.bucketOf {
		h.bucketOf[v] = uint8(h.search(float64(v)))
	}
	return h
}

// bucket returns the index of the bucket score falls in.
func (h *scoreHistogram) bucket(score int64) int {
	if uint64(score) < uint64(len(h.bucketOf)) {
		return int(h.bucketOf[score])
	}
	return h.search(float64(score))
}

// search returns the index of the bucket v falls in, as a client_golang
// histogram finds it: the first upper bound at or above v, else +Inf's.
func (h *scoreHistogram) search(v float64) int {
	return sort.SearchFloat64s(h.upperBounds, v)
}

// series returns the series of profile and plugin, created empty if new.
// The caller holds the collector's lock.
func (h *scoreHistogram) series(profile, plugin string) *histogramSeries {
	s := h.byLabels[scoreLabels{profile, plugin}]
	if s == nil {
		s = &histogramSeries{counts: make([]uint64, len(h.upperBounds)+1), created: time.Now()}
		h.byLabels[scoreLabels{profile, plugin}] = s
	}
	return s
}

// collect returns a const histogram for every series. The caller holds the
// collector's lock.
func (h *scoreHistogram) collect() []metrics.Metric {
	collected := make([]metrics.Metric, 0, len(h.byLabels))
	for labels, s := range h.byLabels {
		cumulative := make(map[float64]uint64, len(h.upperBounds))
		var count uint64
		for i, n := range s.counts {
			count += n
			if i < len(h.upperBounds) {
				cumulative[h.upperBounds[i]] = count
			}
		}
		collected = append(collected, prometheus.MustNewConstHistogramWithCreatedTimestamp(
			h.promDesc, count, s.sum, cumulative, s.created, labels.profile, labels.plugin))
	}
	return collected
}

// pipelineCollector reports the record pipeline's and tracer's own counters.
type pipelineCollector struct {
	metrics.BaseStableCollector
	descs []pipelineDesc
}

type pipelineDesc struct {
	name      string
	desc      *metrics.Desc
	valueType metrics.ValueType
	value     func() float64
}

func newPipelineCollector(s Sources) *pipelineCollector {
	desc := func(name, help string, t metrics.ValueType, value func() float64) pipelineDesc {
		return pipelineDesc{namespace + "_" + name, metrics.NewDesc(namespace+"_"+name, help, nil, nil, metrics.ALPHA, ""), t, value}
	}
	return &pipelineCollector{descs: []pipelineDesc{
		desc("record_buffer_records", "Decision records held in the record stream's buffer.", metrics.GaugeValue, s.BufferedRecords),
		desc("record_buffer_bytes", "Bytes of decision records, compressed, held in the record stream's buffer.", metrics.GaugeValue, s.BufferedBytes),
		desc("record_buffer_evicted_total", "Decision records dropped from the full record stream buffer (its count or its bytes); a reader that had not read them must relist.", metrics.CounterValue, s.EvictedRecords),
		desc("record_dropped_total", "Scheduling attempts that never became decision records because the record queue was full.", metrics.CounterValue, s.DroppedRecords),
		desc("record_stream_watchers", "Open watches of the record stream.", metrics.GaugeValue, s.StreamWatchers),
		desc("trace_spans_dropped_total", "Spans dropped before export because the export queue was full.", metrics.CounterValue, s.DroppedSpans),
		desc("trace_spans_export_failed_total", "Spans lost because their export failed, e.g. with the collector unreachable.", metrics.CounterValue, s.FailedSpans),
		desc("trace_attempts_skipped_total", "Attempts not traced because their spans could not have been exported: the export queue was full, or exports were failing (one attempt a second is still traced, to find out when the collector is back).", metrics.CounterValue, s.SkippedAttempts),
		desc("trace_malformed_traceparent_total", "Attempts whose pod had a malformed traceparent annotation, which was ignored (a pod counts once per attempt).", metrics.CounterValue, s.MalformedTraceparents),
	}}
}

func (c *pipelineCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, d := range c.descs {
		ch <- d.desc
	}
}

func (c *pipelineCollector) CollectWithStability(ch chan<- metrics.Metric) {
	for _, d := range c.descs {
		v := 0.0
		if d.value != nil {
			v = d.value()
		}
		ch <- metrics.NewLazyConstMetric(d.desc, d.valueType, v)
	}
}
