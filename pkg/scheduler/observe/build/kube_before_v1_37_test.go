//go:build kube1.35 || kube1.36

package build

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedscope/schedscope/pkg/record"
)

// TestScoreBreakdownFromKeptRawScores checks the raw scores of a minor
// whose framework keeps none: a plugin with NormalizeScore has the scores
// its normalizer was given, by the scored nodes' order, and one without
// has its normalized score.
func TestScoreBreakdownFromKeptRawScores(t *testing.T) {
	a := scoredAttempt()
	a.Scores = []fwk.NodePluginScores{
		{Name: "n1", Scores: []fwk.PluginScore{pluginScore("A", 1), pluginScore("B", 40)}, TotalScore: 41},
		{Name: "n2", Scores: []fwk.PluginScore{pluginScore("B", 200), pluginScore("A", 7)}, TotalScore: 207},
	}
	// B normalizes: the framework gives its normalizer the scored nodes in
	// the order of a.Scores.
	a.KeptRawScores = map[string]fwk.NodeScoreList{"B": {{Name: "n1", Score: 3}, {Name: "n2", Score: 9}}}
	a.Scored = true
	got := scoreBreakdown(a, NewArrays())
	want := &record.Scores{
		Plugins: a.ScorePlugins,
		Nodes: []record.NodeScore{
			{Node: "n2", Raw: []int64{7, 9}, Normalized: []int64{7, 100}, Weighted: []int64{7, 200}, Total: 207},
			{Node: "n1", Raw: []int64{1, 3}, Normalized: []int64{1, 20}, Weighted: []int64{1, 40}, Total: 41},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("score breakdown (-want +got):\n%s", diff)
	}
}
