//go:build !kube1.35 && !kube1.36

package observe

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedscope/schedscope/pkg/record"
)

// The tests of score records built from the raw scores the framework keeps
// from Kubernetes v1.37 on (nodeRawScores).

// BenchmarkBuildRecord measures turning a 5000-node attempt into its record,
// which the background worker does off the scheduling path: the attempt of
// the default profile, which filters nodes until 500 are feasible and
// scores those with its eight score plugins, and one where a third of the
// nodes are rejected and none scored.
func BenchmarkBuildRecord(b *testing.B) {
	b.Run("default-profile", func(b *testing.B) {
		_, a, _, nodes := benchmarkAttempt(b, 5000)
		plugins := []string{"TaintToleration", "NodeAffinity", "NodeResourcesFit", "VolumeBinding", "PodTopologySpread", "InterPodAffinity", "NodeResourcesBalancedAllocation", "ImageLocality"}
		// The framework names each score by its plugin's Name(): the same
		// string for every node.
		for _, p := range plugins {
			a.table.scorePlugins = append(a.table.scorePlugins, record.ScorePlugin{Name: p, Weight: 1})
		}
		for i, n := range nodes[:500] {
			a.addVerdict(n.Node().Name, nil)
			ns := fwk.NodePluginScores{Name: n.Node().Name}
			for j, p := range plugins {
				ns.RawScores = append(ns.RawScores, fwk.PluginScore{Name: p, Score: int64((i + j) % 100)})
				ns.Scores = append(ns.Scores, fwk.PluginScore{Name: p, Score: int64((i + j) % 100)})
				ns.TotalScore += int64((i + j) % 100)
			}
			a.scores = append(a.scores, ns)
		}
		a.scored, a.feasible, a.result = true, 500, record.ResultScheduled
		b.ReportAllocs()
		// Each build reuses the arrays of the build before, as a record
		// reuses those of a released one.
		for b.Loop() {
			a.build()
		}
	})
	b.Run("rejected", func(b *testing.B) {
		_, a, _, nodes := benchmarkAttempt(b, 5000)
		reject := fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) had untolerated taint(s)").WithPlugin("TaintToleration")
		for i, n := range nodes {
			var s *fwk.Status
			if i%3 == 0 {
				s = reject
			}
			a.addVerdict(n.Node().Name, s)
		}
		a.result = record.ResultUnschedulable
		b.ReportAllocs()
		for b.Loop() {
			a.build()
		}
	})
}

// TestScoreBreakdown checks that each node's scores land under their
// plugin whatever order the node lists them in, that extenders' scores are
// summed apart, and that nodes are ordered by total, then by name.
func TestScoreBreakdown(t *testing.T) {
	a := scoredAttempt()
	a.scores = []fwk.NodePluginScores{
		{Name: "n1", RawScores: []fwk.PluginScore{pluginScore("A", 1), pluginScore("B", 2)},
			Scores: []fwk.PluginScore{pluginScore("A", 1), pluginScore("B", 4)}, TotalScore: 5},
		{Name: "n2", RawScores: []fwk.PluginScore{pluginScore("B", 3), pluginScore("A", 7)},
			Scores: []fwk.PluginScore{pluginScore("B", 6), pluginScore("A", 7), pluginScore("extender", 10)}, TotalScore: 23},
		{Name: "n0", RawScores: []fwk.PluginScore{pluginScore("A", 1), pluginScore("B", 2)},
			Scores: []fwk.PluginScore{pluginScore("A", 1), pluginScore("B", 4)}, TotalScore: 5},
	}
	a.scored = true
	got := a.scoreBreakdown()
	want := &record.Scores{
		Plugins: a.table.scorePlugins,
		Nodes: []record.NodeScore{
			{Node: "n2", Raw: []int64{7, 3}, Normalized: []int64{7, 3}, Weighted: []int64{7, 6}, Extenders: 10, Total: 23},
			{Node: "n0", Raw: []int64{1, 2}, Normalized: []int64{1, 2}, Weighted: []int64{1, 4}, Total: 5},
			{Node: "n1", Raw: []int64{1, 2}, Normalized: []int64{1, 2}, Weighted: []int64{1, 4}, Total: 5},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("score breakdown (-want +got):\n%s", diff)
	}
}

// TestPublishedRecordsKeepTheirOwnValues: attempts published one after
// the other, the later with fewer nodes and no raw scores, each reach the
// sink with their own verdicts and scores although their records share
// arrays: the later record has no value of the earlier.
func TestPublishedRecordsKeepTheirOwnValues(t *testing.T) {
	sink := &encodingSink{}
	r := NewRecorder(Options{Sink: sink})
	r.profileTable("p").scorePlugins = []record.ScorePlugin{{Name: "A", Weight: 2}}
	var want []record.Attempt
	for i, names := range [][]string{{"a", "b", "c"}, {"d"}} {
		var infos []fwk.NodeInfo
		for _, name := range names {
			n := framework.NewNodeInfo()
			n.SetNode(st.MakeNode().Name(name).Obj())
			infos = append(infos, n)
		}
		a := newAttempt(r.profileTable("p"), &v1.Pod{}, i+1, time.Unix(0, 0), time.Unix(1, 0), r.nodeSetOf(infos))
		for k, name := range names {
			a.addVerdict(name, nil)
			v := int64(10*(i+1) + k)
			ns := fwk.NodePluginScores{Name: name, Scores: []fwk.PluginScore{{Name: "A", Score: 2 * v}}, TotalScore: 2 * v}
			if i == 0 {
				ns.RawScores = []fwk.PluginScore{{Name: "A", Score: v + 1}}
			}
			a.scores = append(a.scores, ns)
		}
		a.scored, a.feasible, a.result = true, len(names), record.ResultScheduled
		want = append(want, record.Attempt{Filter: []record.VerdictGroup{{Verdict: record.VerdictPassed, Count: len(names), Nodes: slices.Clone(names)}}})
		r.publish(a)
	}
	for i, data := range sink.encoded {
		var got record.Attempt
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[i].Filter, got.Filter); diff != "" {
			t.Errorf("record %d: Filter groups (-want +got):\n%s", i, diff)
		}
		var normalized, raw []int64
		for _, n := range got.Scores.Nodes {
			normalized, raw = append(normalized, n.Normalized...), append(raw, n.Raw...)
		}
		wantNormalized, wantRaw := [][]int64{{12, 11, 10}, {20}}[i], [][]int64{{13, 12, 11}, {0}}[i]
		if !slices.Equal(normalized, wantNormalized) || !slices.Equal(raw, wantRaw) {
			t.Errorf("record %d: normalized scores %v, raw %v; want %v and %v", i, normalized, raw, wantNormalized, wantRaw)
		}
	}
}
