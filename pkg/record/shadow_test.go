package record

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestShadowDifferences(t *testing.T) {
	scores := func(nodes ...NodeScore) *Scores {
		return &Scores{
			Plugins: []ScorePlugin{{Name: "NodeResourcesFit", Weight: 1}, {Name: "ImageLocality", Weight: 1}, {Name: "TaintToleration", Weight: 3}},
			Nodes:   nodes,
		}
	}
	node := func(name string, weighted ...int64) NodeScore {
		var total int64
		for _, w := range weighted {
			total += w
		}
		return NodeScore{Node: name, Weighted: weighted, Total: total}
	}
	passed := func(nodes ...string) VerdictGroup {
		return VerdictGroup{Verdict: VerdictPassed, Count: len(nodes), Nodes: nodes}
	}
	rejected := func(plugin string, nodes ...string) VerdictGroup {
		return VerdictGroup{Verdict: VerdictRejected, Plugin: plugin, Code: CodeUnschedulable, Count: len(nodes), Nodes: nodes}
	}
	live := &Attempt{Result: ResultScheduled, SelectedNode: "n1", Filter: []VerdictGroup{passed("n1", "n2"), rejected("NodeAffinity", "n3")}}
	unschedulable := &Attempt{Result: ResultUnschedulable, Filter: []VerdictGroup{rejected("NodeAffinity", "n1", "n3"), rejected("TaintToleration", "n2")}}
	tests := []struct {
		name string
		live *Attempt
		run  ShadowRun
		want []string
	}{
		{
			name: "otherNode: the shadow rejected the live node",
			live: live,
			run: ShadowRun{Outcome: ShadowOtherNode, Attempt: &Attempt{Result: ResultScheduled, SelectedNode: "n2",
				Filter: []VerdictGroup{passed("n2"), rejected("NodeResourcesFit", "n1", "n3")}}},
			want: []string{"NodeResourcesFit"},
		},
		{
			name: "otherNode: the score plugins that favour the shadow's node, by how much",
			live: live,
			run: ShadowRun{Outcome: ShadowOtherNode, Attempt: &Attempt{Result: ResultScheduled, SelectedNode: "n2",
				Filter: []VerdictGroup{passed("n1", "n2"), rejected("NodeAffinity", "n3")},
				Scores: scores(node("n2", 50, 30, 90), node("n1", 100, 10, 60))}},
			want: []string{"TaintToleration", "ImageLocality"},
		},
		{
			name: "otherNode: extenders favour the shadow's node",
			live: live,
			run: ShadowRun{Outcome: ShadowOtherNode, Attempt: &Attempt{Result: ResultScheduled, SelectedNode: "n2",
				Filter: []VerdictGroup{passed("n1", "n2")},
				Scores: scores(NodeScore{Node: "n2", Weighted: []int64{50, 10, 0}, Extenders: 40, Total: 100}, node("n1", 50, 20, 0))}},
			want: []string{MarginExtenders},
		},
		{
			name: "otherNode: the shadow did not score the live node",
			live: live,
			run: ShadowRun{Outcome: ShadowOtherNode, Attempt: &Attempt{Result: ResultScheduled, SelectedNode: "n2",
				Filter: []VerdictGroup{passed("n1", "n2")}, Scores: scores(node("n2", 50, 30, 90))}},
		},
		{
			name: "liveOnly: the shadow's Filter plugin that rejected the live node",
			live: live,
			run: ShadowRun{Outcome: ShadowLiveOnly, Attempt: &Attempt{Result: ResultUnschedulable,
				Filter: []VerdictGroup{rejected("NodeResourcesFit", "n1", "n2"), rejected("NodeAffinity", "n3")}}},
			want: []string{"NodeResourcesFit"},
		},
		{
			name: "liveOnly: the shadow's PreFilter rejected the pod",
			live: live,
			run: ShadowRun{Outcome: ShadowLiveOnly, Attempt: &Attempt{Result: ResultUnschedulable,
				PreFilter: []PreFilterRun{{Plugin: "NodeResourcesFit", Code: CodeSuccess}, {Plugin: "InterPodAffinity", Code: CodeSkip}, {Plugin: "VolumeBinding", Code: CodeUnschedulableAndUnresolvable}},
				Filter:    []VerdictGroup{{Verdict: VerdictNotEvaluated, NotEvaluatedReason: NotEvaluatedPreFilterRejected, Count: 3}}}},
			want: []string{"VolumeBinding"},
		},
		{
			name: "liveOnly: the shadow's PreFilter result left the live node out",
			live: live,
			run: ShadowRun{Outcome: ShadowLiveOnly, Attempt: &Attempt{Result: ResultUnschedulable,
				PreFilter: []PreFilterRun{{Plugin: "NodeResourcesFit", Code: CodeSuccess}, {Plugin: "NodeAffinity", Code: CodeSuccess, NodeNames: []string{"n3"}}},
				Filter: []VerdictGroup{rejected("TaintToleration", "n3"),
					{Verdict: VerdictNotEvaluated, NotEvaluatedReason: NotEvaluatedPreFilterResult, Count: 2}}}},
			want: []string{"NodeAffinity"},
		},
		{
			name: "shadowOnly: the live plugin that rejected the shadow's node",
			live: unschedulable,
			run: ShadowRun{Outcome: ShadowShadowOnly, Attempt: &Attempt{Result: ResultScheduled, SelectedNode: "n2",
				Filter: []VerdictGroup{passed("n2"), rejected("NodeAffinity", "n1", "n3")}}},
			want: []string{"TaintToleration"},
		},
		{
			name: "sameNode",
			live: live,
			run: ShadowRun{Outcome: ShadowSameNode, Attempt: &Attempt{Result: ResultScheduled, SelectedNode: "n1",
				Filter: []VerdictGroup{passed("n1", "n2"), rejected("NodeAffinity", "n3")}, Scores: scores(node("n1", 100, 10, 60), node("n2", 50, 30, 90))}},
		},
		{
			name: "neither",
			live: unschedulable,
			run:  ShadowRun{Outcome: ShadowNeither, Attempt: &Attempt{Result: ResultUnschedulable, Filter: unschedulable.Filter}},
		},
		{
			name: "notCompared",
			live: live,
			run:  ShadowRun{Outcome: ShadowNotCompared, NotComparedReason: NotComparedShadowError, Attempt: &Attempt{Result: ResultError}},
		},
		{
			name: "no shadow attempt",
			live: live,
			run:  ShadowRun{Outcome: ShadowOtherNode},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.live.ShadowDifferences(&tt.run)); diff != "" {
				t.Errorf("ShadowDifferences (-want +got):\n%s", diff)
			}
		})
	}
}
