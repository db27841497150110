package build

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/scheduler/observe/nodeset"
)

// nodeInfos returns the snapshot's list of the named nodes, in that order.
func nodeInfos(names ...string) []fwk.NodeInfo {
	var list []fwk.NodeInfo
	for _, name := range names {
		n := framework.NewNodeInfo()
		n.SetNode(st.MakeNode().Name(name).Obj())
		list = append(list, n)
	}
	return list
}

// newAttempt is an attempt of profile p over the nodes of list, queued at
// 0 and started at 1s, with no verdicts yet.
func newAttempt(list []fwk.NodeInfo) *Attempt {
	nodes := nodeset.New(list)
	return &Attempt{
		Pod:      &v1.Pod{},
		Profile:  "p",
		Number:   1,
		Queued:   time.Unix(0, 0),
		Started:  time.Unix(1, 0),
		Nodes:    nodes,
		Verdicts: make([]*fwk.Status, nodes.Len()),
	}
}

// setVerdict records a node's Filter verdict as observe does: by the name
// the framework gives, success as Passed.
func setVerdict(a *Attempt, node string, s *fwk.Status) {
	i, ok := a.Nodes.Find(node)
	if !ok {
		panic("no node " + node)
	}
	if s.IsSuccess() {
		s = Passed
	}
	a.Verdicts[i] = s
}

// scoredAttempt is an attempt of no nodes whose Score plugins are A
// (weight 1) and B (weight 2).
func scoredAttempt() *Attempt {
	a := newAttempt(nil)
	a.ScorePlugins = []record.ScorePlugin{{Name: "A", Weight: 1}, {Name: "B", Weight: 2}}
	return a
}

func pluginScore(name string, v int64) fwk.PluginScore { return fwk.PluginScore{Name: name, Score: v} }

func TestAttemptRecordsVerdictsAndNotEvaluatedNodes(t *testing.T) {
	a := newAttempt(nodeInfos("d", "b", "c", "a"))
	a.Number = 2
	setVerdict(a, "b", fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu").WithPlugin("NodeResourcesFit"))
	setVerdict(a, "a", nil)
	a.Feasible = 1
	a.Result = record.ResultScheduled
	rec := Record(a, NewArrays())
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

// TestRecordFindsNodesByAnyNameString: a record's Filter groups and score
// order are the same whether the framework names a node by the snapshot's
// own string or by an equal copy (a node updated since the snapshot's name
// cache was built), and a node's later verdict replaces its earlier one.
func TestRecordFindsNodesByAnyNameString(t *testing.T) {
	const nodes = 200
	var names []string
	for i := range nodes {
		names = append(names, fmt.Sprintf("node-%03d", nodes-1-i))
	}
	infos := nodeInfos(names...)
	a := newAttempt(infos)
	a.ScorePlugins = []record.ScorePlugin{{Name: "A", Weight: 1}}
	reject := fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu").WithPlugin("NodeResourcesFit")
	var passed, rejected []string
	for i, info := range infos {
		name := info.Node().Name
		if i%2 == 1 {
			name = strings.Clone(name)
		}
		if i%3 == 0 {
			setVerdict(a, name, reject)
			rejected = append(rejected, name)
			continue
		}
		setVerdict(a, name, nil)
		passed = append(passed, name)
		// Totals of 0 to 4: many ties, broken by name.
		a.Scores = append(a.Scores, fwk.NodePluginScores{Name: name, Scores: []fwk.PluginScore{{Name: "A", Score: int64(i % 5)}}, TotalScore: int64(i % 5)})
	}
	// The first node, rejected, is filtered again and passes.
	first := infos[0].Node().Name
	setVerdict(a, strings.Clone(first), nil)
	rejected = slices.DeleteFunc(rejected, func(n string) bool { return n == first })
	passed = append(passed, first)
	a.Feasible, a.Scored, a.Result = len(passed), true, record.ResultScheduled
	rec := Record(a, NewArrays())

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
	if len(got) != len(a.Scores) {
		t.Errorf("%d scored nodes in the record, want %d", len(got), len(a.Scores))
	}
}

// TestRecordTiming: the cycles an attempt reached take their time, the
// others none, and an attempt never queued did not wait.
func TestRecordTiming(t *testing.T) {
	at := func(s int64) time.Time { return time.Unix(s, 0) }
	tests := []struct {
		name                                              string
		queued, started, cycleEnd, bindingStart, finished time.Time
		want                                              record.Timing
	}{
		{
			name:   "bound",
			queued: at(1), started: at(3), cycleEnd: at(4), bindingStart: at(5), finished: at(9),
			want: record.Timing{Queued: at(1), Started: at(3), Finished: at(9), QueueWait: 2 * time.Second, SchedulingCycle: time.Second, BindingCycle: 4 * time.Second},
		},
		{
			name:   "failed in the scheduling cycle",
			queued: at(1), started: at(3), finished: at(4),
			want: record.Timing{Queued: at(1), Started: at(3), Finished: at(4), QueueWait: 2 * time.Second},
		},
		{
			name:    "never queued",
			started: at(3), cycleEnd: at(4), finished: at(4),
			want: record.Timing{Started: at(3), Finished: at(4), SchedulingCycle: time.Second},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &Attempt{Queued: tt.queued, Started: tt.started, CycleEnd: tt.cycleEnd, BindingStart: tt.bindingStart, Finished: tt.finished}
			if diff := cmp.Diff(tt.want, timing(a)); diff != "" {
				t.Errorf("timing (-want +got):\n%s", diff)
			}
		})
	}
}
