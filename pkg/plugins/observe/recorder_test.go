package observe

import (
	"context"
	"fmt"
	"testing"
	"time"

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
	w, err := r.wrap("bench", "FakeScorer", &fakeScorer{})
	if err != nil {
		b.Fatal(err)
	}
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
	return state, a, w.(fwk.FilterPlugin), infos
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
// which the background worker does off the scheduling path.
func BenchmarkBuildRecord(b *testing.B) {
	_, a, _, nodes := benchmarkAttempt(b, 5000)
	reject := fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) had untolerated taint(s)").WithPlugin(WrappedName("TaintToleration"))
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
	a.addVerdict("b", fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu").WithPlugin(WrappedName("NodeResourcesFit")))
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
