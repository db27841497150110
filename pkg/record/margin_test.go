package record

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMargin(t *testing.T) {
	plugins := []ScorePlugin{{Name: "NodeResourcesFit", Weight: 1}, {Name: "ImageLocality", Weight: 1}, {Name: "TaintToleration", Weight: 3}}
	node := func(name string, weighted ...int64) NodeScore {
		var total int64
		for _, w := range weighted {
			total += w
		}
		return NodeScore{Node: name, Weighted: weighted, Total: total}
	}
	tests := []struct {
		name    string
		attempt Attempt
		want    *Margin
	}{{
		name: "the chosen node beat the runner-up",
		attempt: Attempt{SelectedNode: "n1", Scores: &Scores{Plugins: plugins, Nodes: []NodeScore{
			node("n1", 90, 10, 30), node("n2", 50, 27, 30), node("n3", 10, 0, 0)}}},
		want: &Margin{Node: "n1", RunnerUp: "n2", By: 23, Plugins: []PluginMargin{{"NodeResourcesFit", 40}, {"ImageLocality", -17}}},
	}, {
		name: "a tie, and the extenders",
		attempt: Attempt{SelectedNode: "n2", Scores: &Scores{Plugins: plugins, Nodes: []NodeScore{
			node("n1", 60, 0, 0), {Node: "n2", Weighted: []int64{50, 0, 0}, Extenders: 10, Total: 60}}}},
		want: &Margin{Node: "n2", RunnerUp: "n1", By: 0, Plugins: []PluginMargin{{MarginExtenders, 10}, {"NodeResourcesFit", -10}}},
	}, {
		name: "equal scores",
		attempt: Attempt{SelectedNode: "n1", Scores: &Scores{Plugins: plugins, Nodes: []NodeScore{
			node("n2", 5, 5, 5), node("n1", 5, 5, 5)}}},
		want: &Margin{Node: "n1", RunnerUp: "n2"},
	}, {
		name:    "a single feasible node is not scored",
		attempt: Attempt{SelectedNode: "n1", Scores: &Scores{SkippedReason: ScoringSkippedSingleNode}},
	}, {
		name:    "one scored node",
		attempt: Attempt{SelectedNode: "n1", Scores: &Scores{Plugins: plugins, Nodes: []NodeScore{node("n1", 1, 2, 3)}}},
	}, {
		name:    "no scores",
		attempt: Attempt{SelectedNode: "n1"},
	}, {
		name:    "no node chosen",
		attempt: Attempt{Result: ResultUnschedulable, Scores: &Scores{Plugins: plugins, Nodes: []NodeScore{node("n1", 1, 2, 3), node("n2", 1, 1, 1)}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.attempt.Margin()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Margin (-want +got):\n%s", diff)
			}
		})
	}
}
