package metrics

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"

	"github.com/schedscope/schedscope/pkg/record"
)

func TestObserveRecord(t *testing.T) {
	registry := metrics.NewKubeRegistry()
	m := New(Sources{DroppedRecords: func() float64 { return 3 }})
	m.RegisterTo(registry)
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

// TestREADMEListsEveryMetric keeps the README's metrics table and the code in step.
func TestREADMEListsEveryMetric(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(schedscope_[a-z_]+)` \\|").FindAllSubmatch(readme, -1) {
		documented = append(documented, string(m[1]))
	}
	names := New(Sources{}).Names()
	sort.Strings(documented)
	sort.Strings(names)
	if diff := cmp.Diff(names, documented); diff != "" {
		t.Errorf("README metrics table differs from the code (-code +README):\n%s", diff)
	}
}
