package observe

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedscope/schedscope/pkg/record"
)

// benchmarkAttempt returns a cycle state holding an attempt over nodes and
// the wrapper of a filter plugin registered in its profile.
func benchmarkAttempt(b *testing.B, nodes int) (fwk.CycleState, *attempt, fwk.FilterPlugin, []fwk.NodeInfo) {
	r := NewRecorder(Options{Sink: discard{}})
	w := observedFilter(r, "bench")
	infos := make([]fwk.NodeInfo, nodes)
	for i := range infos {
		n := framework.NewNodeInfo()
		n.SetNode(st.MakeNode().Name(fmt.Sprintf("node-%04d", nodes-i)).Obj())
		infos[i] = n
	}
	state := framework.NewCycleState()
	a := newAttempt(r.profileTable("bench"), st.MakePod().Name("p").Obj(), 1, time.Now(), time.Now(), r.nodeSetOf(infos))
	state.Write(stateKey, a)
	a.table.current.Store(a)
	return state, a, w, infos
}

// BenchmarkFilterCall measures what observing adds to one Filter call of one
// plugin on one node: the wrapper's timing, and the framework wrapper's
// verdict slot. Run with -benchmem: it must not allocate.
func BenchmarkFilterCall(b *testing.B) {
	state, a, filter, nodes := benchmarkAttempt(b, 5000)
	pod := st.MakePod().Name("p").Obj()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		node := nodes[i%len(nodes)]
		s := filter.Filter(ctx, state, pod, node)
		a.addVerdict(node.Node().Name, s)
		if i++; i == len(nodes) {
			i = 0
			a.nVerdicts.Store(0)
		}
	}
}

// BenchmarkFilterCallParallel is BenchmarkFilterCall from many goroutines,
// as the framework's parallel Filter workers call it.
func BenchmarkFilterCallParallel(b *testing.B) {
	state, a, filter, nodes := benchmarkAttempt(b, 5000)
	pod := st.MakePod().Name("p").Obj()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			node := nodes[i%len(nodes)]
			a.addVerdict(node.Node().Name, filter.Filter(ctx, state, pod, node))
			i++
		}
	})
	_ = a
}

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
	r := NewRecorder(Options{Sink: discard{}})
	a := newAttempt(r.profileTable("p"), &v1.Pod{}, 1, time.Unix(0, 0), time.Unix(1, 0), emptyNodeSet)
	a.table.scorePlugins = []record.ScorePlugin{{Name: "A", Weight: 1}, {Name: "B", Weight: 2}}
	score := func(name string, v int64) fwk.PluginScore { return fwk.PluginScore{Name: name, Score: v} }
	a.scores = []fwk.NodePluginScores{
		{Name: "n1", RawScores: []fwk.PluginScore{score("A", 1), score("B", 2)},
			Scores: []fwk.PluginScore{score("A", 1), score("B", 4)}, TotalScore: 5},
		{Name: "n2", RawScores: []fwk.PluginScore{score("B", 3), score("A", 7)},
			Scores: []fwk.PluginScore{score("B", 6), score("A", 7), score("extender", 10)}, TotalScore: 23},
		{Name: "n0", RawScores: []fwk.PluginScore{score("A", 1), score("B", 2)},
			Scores: []fwk.PluginScore{score("A", 1), score("B", 4)}, TotalScore: 5},
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

func TestAttemptRecordsVerdictsAndNotEvaluatedNodes(t *testing.T) {
	r := NewRecorder(Options{Sink: discard{}})
	pod := &v1.Pod{}
	var infos []fwk.NodeInfo
	for _, name := range []string{"d", "b", "c", "a"} {
		n := framework.NewNodeInfo()
		n.SetNode(st.MakeNode().Name(name).Obj())
		infos = append(infos, n)
	}
	a := newAttempt(r.profileTable("p"), pod, 2, time.Unix(0, 0), time.Unix(1, 0), r.nodeSetOf(infos))
	a.preFilterStatus = nil
	a.addVerdict("b", fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu").WithPlugin("NodeResourcesFit"))
	a.addVerdict("a", nil)
	a.feasible = 1
	a.result = record.ResultScheduled
	rec := a.build()
	want := []record.VerdictGroup{
		{Verdict: record.VerdictPassed, Count: 1, Nodes: []string{"a"}},
		{Verdict: record.VerdictRejected, Plugin: "NodeResourcesFit", Code: "Unschedulable", Reasons: []string{"Insufficient cpu"}, Count: 1, Nodes: []string{"b"}},
		{Verdict: record.VerdictNotEvaluated, NotEvaluatedReason: record.NotEvaluatedEnoughFeasible, Count: 2},
	}
	if fmt.Sprint(want) != fmt.Sprint(rec.Filter) {
		t.Errorf("verdicts:\n got %+v\nwant %+v", rec.Filter, want)
	}
	if rec.Nodes != (record.NodeCounts{Total: 4, Evaluated: 2, Feasible: 1}) {
		t.Errorf("node counts %+v", rec.Nodes)
	}
	if rec.Timing.QueueWait != time.Second || rec.Attempt != 2 {
		t.Errorf("queue wait %s attempt %d, want 1s and 2", rec.Timing.QueueWait, rec.Attempt)
	}
	if rec.Scores == nil || rec.Scores.SkippedReason != record.ScoringSkippedSingleNode {
		t.Errorf("scores %+v, want scoring skipped for the single feasible node", rec.Scores)
	}
}
