package observe

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedscope/schedscope/pkg/record"
)

// scoredAttempt is an attempt of profile p whose Score plugins are A
// (weight 1) and B (weight 2).
func scoredAttempt() *attempt {
	r := NewRecorder(Options{Sink: discard{}})
	a := newAttempt(r.profileTable("p"), &v1.Pod{}, 1, time.Unix(0, 0), time.Unix(1, 0), emptyNodeSet)
	a.table.scorePlugins = []record.ScorePlugin{{Name: "A", Weight: 1}, {Name: "B", Weight: 2}}
	return a
}

func pluginScore(name string, v int64) fwk.PluginScore { return fwk.PluginScore{Name: name, Score: v} }

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
		}
	}
}

// BenchmarkFilterCallParallel is BenchmarkFilterCall from many goroutines,
// as the framework's parallel Filter workers call it: each on nodes of its
// own at a time (the workers take the nodes in chunks).
func BenchmarkFilterCallParallel(b *testing.B) {
	state, a, filter, nodes := benchmarkAttempt(b, 5000)
	pod := st.MakePod().Name("p").Obj()
	ctx := context.Background()
	var workers atomic.Int32
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(workers.Add(1)) * len(nodes) / 16
		for pb.Next() {
			node := nodes[i%len(nodes)]
			a.addVerdict(node.Node().Name, filter.Filter(ctx, state, pod, node))
			i++
		}
	})
	_ = a
}

// encodingSink keeps the JSON of each record it is given, as the stream
// buffer does.
type encodingSink struct{ encoded [][]byte }

func (s *encodingSink) Add(a *record.Attempt, _ string) error {
	data, err := record.Encode(a)
	s.encoded = append(s.encoded, data)
	return err
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

// TestBuildFindsNodesByAnyNameString: a record's Filter groups and score
// order are the same whether the framework names a node by the snapshot's
// own string or by an equal copy (a node updated since the snapshot's name
// cache was built), and a node's later verdict replaces its earlier one.
func TestBuildFindsNodesByAnyNameString(t *testing.T) {
	r := NewRecorder(Options{Sink: discard{}})
	const nodes = 200
	var infos []fwk.NodeInfo
	for i := range nodes {
		n := framework.NewNodeInfo()
		n.SetNode(st.MakeNode().Name(fmt.Sprintf("node-%03d", nodes-1-i)).Obj())
		infos = append(infos, n)
	}
	a := newAttempt(r.profileTable("p"), &v1.Pod{}, 1, time.Unix(0, 0), time.Unix(1, 0), r.nodeSetOf(infos))
	a.preFilterStatus = nil
	a.table.scorePlugins = []record.ScorePlugin{{Name: "A", Weight: 1}}
	reject := fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu").WithPlugin("NodeResourcesFit")
	var passed, rejected []string
	for i, info := range infos {
		name := info.Node().Name
		if i%2 == 1 {
			name = strings.Clone(name)
		}
		if i%3 == 0 {
			a.addVerdict(name, reject)
			rejected = append(rejected, name)
			continue
		}
		a.addVerdict(name, nil)
		passed = append(passed, name)
		// Totals of 0 to 4: many ties, broken by name.
		a.scores = append(a.scores, fwk.NodePluginScores{Name: name, Scores: []fwk.PluginScore{{Name: "A", Score: int64(i % 5)}}, TotalScore: int64(i % 5)})
	}
	// The first node, rejected, is filtered again and passes.
	first := infos[0].Node().Name
	a.addVerdict(strings.Clone(first), nil)
	rejected = slices.DeleteFunc(rejected, func(n string) bool { return n == first })
	passed = append(passed, first)
	a.feasible, a.scored, a.result = len(passed), true, record.ResultScheduled
	rec := a.build()

	slices.Sort(passed)
	slices.Sort(rejected)
	want := []record.VerdictGroup{
		{Verdict: record.VerdictPassed, Count: len(passed), Nodes: passed},
		{Verdict: record.VerdictRejected, Plugin: "NodeResourcesFit", Code: "Unschedulable", Reasons: []string{"Insufficient cpu"}, Count: len(rejected), Nodes: rejected},
	}
	if diff := cmp.Diff(want, rec.Filter); diff != "" {
		t.Errorf("Filter groups (-want +got):\n%s", diff)
	}
	if rec.Nodes != (record.NodeCounts{Total: nodes, Evaluated: nodes, Feasible: len(passed)}) {
		t.Errorf("node counts %+v", rec.Nodes)
	}
	got := make([]record.NodeScore, len(rec.Scores.Nodes))
	copy(got, rec.Scores.Nodes)
	if !slices.IsSortedFunc(got, func(x, y record.NodeScore) int {
		if x.Total != y.Total {
			return int(y.Total - x.Total)
		}
		return strings.Compare(x.Node, y.Node)
	}) {
		t.Errorf("scored nodes are not by total, then name: %v", got)
	}
	if len(got) != len(a.scores) {
		t.Errorf("%d scored nodes in the record, want %d", len(got), len(a.scores))
	}
}

// tracer traces every record as the same trace.
type tracer string

func (t tracer) Trace(*v1.Pod, *record.Attempt) string { return string(t) }

// traceSink keeps the trace ID of each record it is given.
type traceSink struct{ traceIDs []string }

func (s *traceSink) Add(_ *record.Attempt, traceID string) error {
	s.traceIDs = append(s.traceIDs, traceID)
	return nil
}

// TestPublishHandsTheTraceToTheSink: the trace ID the Tracer returns goes
// to the Sink beside the record; without a Tracer, the record has none.
func TestPublishHandsTheTraceToTheSink(t *testing.T) {
	for _, tt := range []struct {
		name   string
		tracer Tracer
		want   string
	}{
		{name: "traced", tracer: tracer("4bf92f3577b34da6a3ce929d0e0e4736"), want: "4bf92f3577b34da6a3ce929d0e0e4736"},
		{name: "not traced"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sink := &traceSink{}
			r := NewRecorder(Options{Sink: sink, Tracer: tt.tracer})
			r.publish(newAttempt(r.profileTable("p"), &v1.Pod{}, 1, time.Unix(0, 0), time.Unix(1, 0), emptyNodeSet))
			if diff := cmp.Diff([]string{tt.want}, sink.traceIDs); diff != "" {
				t.Errorf("trace IDs (-want +got):\n%s", diff)
			}
		})
	}
}
