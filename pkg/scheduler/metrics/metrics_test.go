package metrics

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/testing/protocmp"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"

	"github.com/schedscope/schedscope/pkg/record"
)

func TestObserveRecord(t *testing.T) {
	registry := metrics.NewKubeRegistry()
	m := New()
	m.RegisterTo(registry, Sources{DroppedRecords: func() float64 { return 3 }})
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.ObserveRecord(&record.Attempt{
		Profile: "p", Result: record.ResultUnschedulable,
		Timing: record.Timing{Queued: start, Started: start, Finished: start.Add(3 * time.Millisecond), QueueWait: 0},
		Plugins: []record.PluginRun{
			{Plugin: "NodeName", Point: record.Filter, Duration: 2 * time.Microsecond, Calls: 3},
			{Plugin: "TaintToleration", Point: record.Filter, Duration: 5 * time.Microsecond, Calls: 3},
		},
		Filter: []record.VerdictGroup{
			{Verdict: record.VerdictRejected, Plugin: "TaintToleration", Code: "UnschedulableAndUnresolvable", Nodes: []string{"a", "b"}},
			{Verdict: record.VerdictRejected, Plugin: "NodeResourcesFit", Code: "Unschedulable", Nodes: []string{"c"}},
		},
	})
	m.ObserveRecord(&record.Attempt{
		Profile: "p", Result: record.ResultScheduled,
		Timing: record.Timing{Started: start, Finished: start.Add(time.Millisecond)},
		Scores: &record.Scores{
			Plugins: []record.ScorePlugin{{Name: "ImageLocality", Weight: 2}},
			Nodes:   []record.NodeScore{{Node: "a", Raw: []int64{40}, Normalized: []int64{40}, Weighted: []int64{80}, Total: 80}},
		},
	})

	want := `
# HELP schedscope_attempts_total [ALPHA] Scheduling attempts by profile and result (scheduled, unschedulable, error).
# TYPE schedscope_attempts_total counter
schedscope_attempts_total{profile="p",result="scheduled"} 1
schedscope_attempts_total{profile="p",result="unschedulable"} 1
# HELP schedscope_attempt_unschedulable_by_plugin_total [ALPHA] Unschedulable attempts by each plugin that rejected at least one node (or the pod, at PreFilter).
# TYPE schedscope_attempt_unschedulable_by_plugin_total counter
schedscope_attempt_unschedulable_by_plugin_total{plugin="NodeResourcesFit",profile="p"} 1
schedscope_attempt_unschedulable_by_plugin_total{plugin="TaintToleration",profile="p"} 1
# HELP schedscope_filter_verdicts_total [ALPHA] Filter verdicts on nodes by plugin and status code: Success for a node the plugin passed, else the code it rejected with.
# TYPE schedscope_filter_verdicts_total counter
schedscope_filter_verdicts_total{code="Success",plugin="NodeName",profile="p"} 3
schedscope_filter_verdicts_total{code="Success",plugin="TaintToleration",profile="p"} 1
schedscope_filter_verdicts_total{code="Unschedulable",plugin="NodeResourcesFit",profile="p"} 1
schedscope_filter_verdicts_total{code="UnschedulableAndUnresolvable",plugin="TaintToleration",profile="p"} 2
# HELP schedscope_record_dropped_total [ALPHA] Scheduling attempts that never became decision records because the record queue was full.
# TYPE schedscope_record_dropped_total counter
schedscope_record_dropped_total 3
# HELP schedscope_score_weighted [ALPHA] Weighted score (normalized times the plugin's weight) a plugin gave each scored node.
# TYPE schedscope_score_weighted histogram
schedscope_score_weighted_bucket{plugin="ImageLocality",profile="p",le="0"} 0
schedscope_score_weighted_bucket{plugin="ImageLocality",profile="p",le="10"} 0
schedscope_score_weighted_bucket{plugin="ImageLocality",profile="p",le="25"} 0
schedscope_score_weighted_bucket{plugin="ImageLocality",profile="p",le="50"} 0
schedscope_score_weighted_bucket{plugin="ImageLocality",profile="p",le="100"} 1
schedscope_score_weighted_bucket{plugin="ImageLocality",profile="p",le="200"} 1
schedscope_score_weighted_bucket{plugin="ImageLocality",profile="p",le="300"} 1
schedscope_score_weighted_bucket{plugin="ImageLocality",profile="p",le="500"} 1
schedscope_score_weighted_bucket{plugin="ImageLocality",profile="p",le="1000"} 1
schedscope_score_weighted_bucket{plugin="ImageLocality",profile="p",le="2500"} 1
schedscope_score_weighted_bucket{plugin="ImageLocality",profile="p",le="10000"} 1
schedscope_score_weighted_bucket{plugin="ImageLocality",profile="p",le="+Inf"} 1
schedscope_score_weighted_sum{plugin="ImageLocality",profile="p"} 80
schedscope_score_weighted_count{plugin="ImageLocality",profile="p"} 1
`
	if err := testutil.GatherAndCompare(registry, strings.NewReader(want),
		"schedscope_attempts_total", "schedscope_attempt_unschedulable_by_plugin_total", "schedscope_filter_verdicts_total",
		"schedscope_record_dropped_total", "schedscope_score_weighted"); err != nil {
		t.Error(err)
	}
}

// TestObserveRecordCountsShadows counts each shadow run by its profile,
// shadow and outcome, and times the shadow's plugins under the shadow's
// name.
func TestObserveRecordCountsShadows(t *testing.T) {
	registry := metrics.NewKubeRegistry()
	m := New()
	m.RegisterTo(registry, Sources{})
	shadowRecord := &record.Attempt{Profile: "binpack", Plugins: []record.PluginRun{{Plugin: "NodeResourcesFit", Point: record.Score, Duration: 3 * time.Microsecond, Calls: 2}}}
	m.ObserveRecord(&record.Attempt{Profile: "p", Result: record.ResultScheduled, Shadows: []record.ShadowRun{
		{Profile: "binpack", Outcome: record.ShadowOtherNode, Attempt: shadowRecord},
	}})
	m.ObserveRecord(&record.Attempt{Profile: "p", Result: record.ResultScheduled, Shadows: []record.ShadowRun{
		{Profile: "binpack", Outcome: record.ShadowNotCompared, NotComparedReason: record.NotComparedSnapshotChanged},
	}})
	m.ShadowPods.WithLabelValues("binpack").Inc()

	want := `
# HELP schedscope_shadow_attempts_total [ALPHA] Attempts of a profile that a shadow profile also ran, by how the shadow's choice compares: sameNode, otherNode, liveOnly, shadowOnly, neither, or notCompared when the shadow could not see the live attempt's state.
# TYPE schedscope_shadow_attempts_total counter
schedscope_shadow_attempts_total{outcome="notCompared",profile="p",shadow="binpack"} 1
schedscope_shadow_attempts_total{outcome="otherNode",profile="p",shadow="binpack"} 1
# HELP schedscope_shadow_pods_total [ALPHA] Pods seen that name a shadow profile's schedulerName: a shadow schedules no pod, so nothing schedules them.
# TYPE schedscope_shadow_pods_total counter
schedscope_shadow_pods_total{shadow="binpack"} 1
`
	if err := testutil.GatherAndCompare(registry, strings.NewReader(want), "schedscope_shadow_attempts_total", "schedscope_shadow_pods_total"); err != nil {
		t.Error(err)
	}
	if got, err := testutil.GetHistogramMetricCount(m.PluginDuration.WithLabelValues("binpack", "NodeResourcesFit", record.Score)); err != nil || got != 1 {
		t.Errorf("the shadow's NodeResourcesFit Score times observed %d times (%v), want 1", got, err)
	}
}

// TestDocsListEveryMetric keeps the metrics table of docs/scheduler.md and
// the code in step.
func TestDocsListEveryMetric(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/scheduler.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(schedscope_[a-z_]+)` \\|").FindAllSubmatch(doc, -1) {
		documented = append(documented, string(m[1]))
	}
	names := New().Names()
	sort.Strings(documented)
	sort.Strings(names)
	if diff := cmp.Diff(names, documented); diff != "" {
		t.Errorf("docs/scheduler.md's metrics table differs from the code (-code +docs):\n%s", diff)
	}
}

// TestScoreHistogramsMatchObserve checks that the score histograms expose
// exactly what HistogramVecs with the same options expose when each score is
// observed on its own.
func TestScoreHistogramsMatchObserve(t *testing.T) {
	registry := metrics.NewKubeRegistry()
	m := New()
	m.RegisterTo(registry, Sources{})

	reference := metrics.NewKubeRegistry()
	normalizedOpts, weightedOpts := scoreHistogramOpts()
	normalized := metrics.NewHistogramVec(normalizedOpts, []string{labelProfile, labelPlugin})
	weighted := metrics.NewHistogramVec(weightedOpts, []string{labelProfile, labelPlugin})
	reference.MustRegister(normalized, weighted)

	// Scores on, next to and between the buckets' upper bounds, below the
	// first and above the last, and far enough out that float64 rounds them.
	scores := []int64{math.MinInt64, -1 << 60, -101, -1, 5, 99, 101, 1e6, 1<<60 + 1, math.MaxInt64}
	for _, bounds := range [][]float64{normalizedOpts.Buckets, weightedOpts.Buckets} {
		for _, b := range bounds {
			scores = append(scores, int64(b)-1, int64(b), int64(b)+1)
		}
	}
	attempt := func(profile string, plugins, nodes, offset int) *record.Attempt {
		rec := &record.Attempt{Profile: profile, Result: record.ResultScheduled, Scores: &record.Scores{}}
		for i := range plugins {
			rec.Scores.Plugins = append(rec.Scores.Plugins, record.ScorePlugin{Name: fmt.Sprintf("Plugin%d", i)})
		}
		for n := range nodes {
			s := record.NodeScore{Node: fmt.Sprintf("node-%d", n)}
			for i := range plugins {
				s.Normalized = append(s.Normalized, scores[(offset+n+i)%len(scores)])
				s.Weighted = append(s.Weighted, scores[(offset+3*n+i)%len(scores)])
			}
			rec.Scores.Nodes = append(rec.Scores.Nodes, s)
		}
		return rec
	}
	observe := func(rec *record.Attempt) {
		m.ObserveRecord(rec)
		for i, p := range rec.Scores.Plugins {
			normalized := normalized.WithLabelValues(rec.Profile, p.Name)
			weighted := weighted.WithLabelValues(rec.Profile, p.Name)
			for _, n := range rec.Scores.Nodes {
				normalized.Observe(float64(n.Normalized[i]))
				weighted.Observe(float64(n.Weighted[i]))
			}
		}
	}
	compare := func() {
		t.Helper()
		want, err := reference.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got, err := registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got = slices.DeleteFunc(got, func(f *dto.MetricFamily) bool {
			return f.GetName() != "schedscope_score_normalized" && f.GetName() != "schedscope_score_weighted"
		})
		// Each histogram's creation time is its own.
		ignoreCreated := protocmp.IgnoreFields(&dto.Histogram{}, "created_timestamp")
		if diff := cmp.Diff(want, got, protocmp.Transform(), ignoreCreated); diff != "" {
			t.Errorf("score histograms (-reference +schedscope):\n%s", diff)
		}
	}

	for offset := range 3 * len(scores) {
		observe(attempt("default-scheduler", 4, 2*len(scores), offset))
	}
	observe(attempt("other", 2, len(scores), 0))
	observe(attempt("other", 3, 0, 0)) // series with no observations
	compare()

	// As the registries are reset with DELETE /metrics.
	registry.Reset()
	reference.Reset()
	observe(attempt("other", 1, len(scores), 1))
	compare()
}

// TestScoreHistogramsScrapedWhileObserving is for the race detector.
func TestScoreHistogramsScrapedWhileObserving(t *testing.T) {
	registry := metrics.NewKubeRegistry()
	m := New()
	m.RegisterTo(registry, Sources{})
	rec := &record.Attempt{Profile: "p", Result: record.ResultScheduled, Scores: &record.Scores{
		Plugins: []record.ScorePlugin{{Name: "ImageLocality"}},
		Nodes:   []record.NodeScore{{Node: "a", Normalized: []int64{40}, Weighted: []int64{80}}},
	}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			m.ObserveRecord(rec)
		}
	}()
	for scraping := true; scraping; {
		select {
		case <-done:
			scraping = false
		default:
		}
		if _, err := registry.Gather(); err != nil {
			t.Fatal(err)
		}
	}
	want := `
# HELP schedscope_score_normalized [ALPHA] Normalized score a plugin gave each scored node.
# TYPE schedscope_score_normalized histogram
schedscope_score_normalized_bucket{plugin="ImageLocality",profile="p",le="0"} 0
schedscope_score_normalized_bucket{plugin="ImageLocality",profile="p",le="10"} 0
schedscope_score_normalized_bucket{plugin="ImageLocality",profile="p",le="20"} 0
schedscope_score_normalized_bucket{plugin="ImageLocality",profile="p",le="30"} 0
schedscope_score_normalized_bucket{plugin="ImageLocality",profile="p",le="40"} 1000
schedscope_score_normalized_bucket{plugin="ImageLocality",profile="p",le="50"} 1000
schedscope_score_normalized_bucket{plugin="ImageLocality",profile="p",le="60"} 1000
schedscope_score_normalized_bucket{plugin="ImageLocality",profile="p",le="70"} 1000
schedscope_score_normalized_bucket{plugin="ImageLocality",profile="p",le="80"} 1000
schedscope_score_normalized_bucket{plugin="ImageLocality",profile="p",le="90"} 1000
schedscope_score_normalized_bucket{plugin="ImageLocality",profile="p",le="100"} 1000
schedscope_score_normalized_bucket{plugin="ImageLocality",profile="p",le="+Inf"} 1000
schedscope_score_normalized_sum{plugin="ImageLocality",profile="p"} 40000
schedscope_score_normalized_count{plugin="ImageLocality",profile="p"} 1000
`
	if err := testutil.GatherAndCompare(registry, strings.NewReader(want), "schedscope_score_normalized"); err != nil {
		t.Error(err)
	}
}

// BenchmarkObserveRecord observes the record of a 5000-node attempt under
// the default profile: 500 nodes scored by 8 plugins.
func BenchmarkObserveRecord(b *testing.B) {
	m := New()
	m.RegisterTo(metrics.NewKubeRegistry(), Sources{})
	rec := &record.Attempt{Profile: "default-scheduler", Result: record.ResultScheduled, Scores: &record.Scores{}}
	for i := range 8 {
		rec.Scores.Plugins = append(rec.Scores.Plugins, record.ScorePlugin{Name: fmt.Sprintf("Plugin%d", i), Weight: int64(i%3 + 1)})
		rec.Plugins = append(rec.Plugins, record.PluginRun{Plugin: fmt.Sprintf("Plugin%d", i), Point: record.Filter, Calls: 500})
	}
	for n := range 500 {
		s := record.NodeScore{Node: fmt.Sprintf("node-%d", n)}
		for i, p := range rec.Scores.Plugins {
			s.Raw = append(s.Raw, int64((n*7+i)%101))
			s.Normalized = append(s.Normalized, int64((n*7+i)%101))
			s.Weighted = append(s.Weighted, int64((n*7+i)%101)*p.Weight)
		}
		rec.Scores.Nodes = append(rec.Scores.Nodes, s)
	}
	b.ReportAllocs()
	for b.Loop() {
		m.ObserveRecord(rec)
	}
}
