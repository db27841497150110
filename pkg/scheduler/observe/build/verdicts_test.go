package build

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedscope/schedscope/pkg/record"
)

// TestFilterVerdictsSayWhyNodesWereNotEvaluated: the nodes without a
// verdict are grouped by why Filter did not see them, and identical
// rejections of different status values are one group, ranked after the
// nodes that passed.
func TestFilterVerdictsSayWhyNodesWereNotEvaluated(t *testing.T) {
	tainted := func() *fwk.Status {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) had untolerated taint(s)").WithPlugin("TaintToleration")
	}
	tests := []struct {
		name  string
		setup func(a *Attempt)
		want  []record.VerdictGroup
	}{
		{
			name: "PreFilter rejected",
			setup: func(a *Attempt) {
				a.PreFilterStatus = fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "no").WithPlugin("NodeAffinity")
			},
			want: []record.VerdictGroup{{Verdict: record.VerdictNotEvaluated, NotEvaluatedReason: record.NotEvaluatedPreFilterRejected, Count: 4}},
		},
		{
			name: "the nominated node fit",
			setup: func(a *Attempt) {
				a.Pod.Status.NominatedNodeName = "b"
				setVerdict(a, "b", nil)
				a.Feasible = 1
			},
			want: []record.VerdictGroup{
				{Verdict: record.VerdictPassed, Count: 1, Nodes: []string{"b"}},
				{Verdict: record.VerdictNotEvaluated, NotEvaluatedReason: record.NotEvaluatedNominatedNodeFit, Count: 3},
			},
		},
		{
			name: "enough feasible nodes, outside PreFilter's result",
			setup: func(a *Attempt) {
				a.PreFilterResult = &fwk.PreFilterResult{NodeNames: sets.New("a", "b", "c")}
				setVerdict(a, "c", tainted())
				setVerdict(a, "a", tainted())
				setVerdict(a, "b", nil)
				a.Feasible = 1
			},
			want: []record.VerdictGroup{
				{Verdict: record.VerdictPassed, Count: 1, Nodes: []string{"b"}},
				{Verdict: record.VerdictRejected, Plugin: "TaintToleration", Code: "UnschedulableAndUnresolvable", Reasons: []string{"node(s) had untolerated taint(s)"}, Count: 2, Nodes: []string{"a", "c"}},
				{Verdict: record.VerdictNotEvaluated, NotEvaluatedReason: record.NotEvaluatedPreFilterResult, Count: 1},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAttempt(nodeInfos("d", "c", "b", "a"))
			a.Pod = &v1.Pod{}
			tt.setup(a)
			got, counts := filterVerdicts(a, NewArrays())
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
			evaluated := 0
			for _, g := range tt.want {
				if g.Verdict != record.VerdictNotEvaluated {
					evaluated += g.Count
				}
			}
			if counts != (record.NodeCounts{Total: 4, Evaluated: evaluated}) {
				t.Errorf("node counts %+v, want 4 nodes, %d evaluated", counts, evaluated)
			}
		})
	}
}
