//go:build !kube1.35 && !kube1.36

package build

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	fwk "k8s.io/kube-scheduler/framework"

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
	benchmarkAttempt := func() (*Attempt, []fwk.NodeInfo) {
		names := make([]string, 5000)
		for i := range names {
			names[i] = fmt.Sprintf("node-%04d", len(names)-i)
		}
		nodes := nodeInfos(names...)
		return newAttempt(nodes), nodes
	}
	b.Run("default-profile", func(b *testing.B) {
		a, nodes := benchmarkAttempt()
		plugins := []string{"TaintToleration", "NodeAffinity", "NodeResourcesFit", "VolumeBinding", "PodTopologySpread", "InterPodAffinity", "NodeResourcesBalancedAllocation", "ImageLocality"}
		// The framework names each score by its plugin's Name(): the same
		// string for every node.
		for _, p := range plugins {
			a.ScorePlugins = append(a.ScorePlugins, record.ScorePlugin{Name: p, Weight: 1})
		}
		for i, n := range nodes[:500] {
			setVerdict(a, n.Node().Name, nil)
			ns := fwk.NodePluginScores{Name: n.Node().Name}
			for j, p := range plugins {
				ns.RawScores = append(ns.RawScores, fwk.PluginScore{Name: p, Score: int64((i + j) % 100)})
				ns.Scores = append(ns.Scores, fwk.PluginScore{Name: p, Score: int64((i + j) % 100)})
				ns.TotalScore += int64((i + j) % 100)
			}
			a.Scores = append(a.Scores, ns)
		}
		a.Scored, a.Feasible, a.Result = true, 500, record.ResultScheduled
		b.ReportAllocs()
		// Each build reuses the arrays of the build before, as a record
		// reuses those of a released one.
		arrays := NewArrays()
		for b.Loop() {
			Record(a, arrays)
		}
	})
	b.Run("rejected", func(b *testing.B) {
		a, nodes := benchmarkAttempt()
		reject := fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) had untolerated taint(s)").WithPlugin("TaintToleration")
		for i, n := range nodes {
			var s *fwk.Status
			if i%3 == 0 {
				s = reject
			}
			setVerdict(a, n.Node().Name, s)
		}
		a.Result = record.ResultUnschedulable
		b.ReportAllocs()
		arrays := NewArrays()
		for b.Loop() {
			Record(a, arrays)
		}
	})
}

// TestScoreBreakdown checks that each node's scores land under their
// plugin whatever order the node lists them in, that extenders' scores are
// summed apart, and that nodes are ordered by total, then by name.
func TestScoreBreakdown(t *testing.T) {
	a := scoredAttempt()
	a.Scores = []fwk.NodePluginScores{
		{Name: "n1", RawScores: []fwk.PluginScore{pluginScore("A", 1), pluginScore("B", 2)},
			Scores: []fwk.PluginScore{pluginScore("A", 1), pluginScore("B", 4)}, TotalScore: 5},
		{Name: "n2", RawScores: []fwk.PluginScore{pluginScore("B", 3), pluginScore("A", 7)},
			Scores: []fwk.PluginScore{pluginScore("B", 6), pluginScore("A", 7), pluginScore("extender", 10)}, TotalScore: 23},
		{Name: "n0", RawScores: []fwk.PluginScore{pluginScore("A", 1), pluginScore("B", 2)},
			Scores: []fwk.PluginScore{pluginScore("A", 1), pluginScore("B", 4)}, TotalScore: 5},
	}
	a.Scored = true
	got := scoreBreakdown(a, NewArrays())
	want := &record.Scores{
		Plugins: a.ScorePlugins,
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
