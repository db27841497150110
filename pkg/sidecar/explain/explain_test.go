package explain

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
)

func scheduled() *record.Attempt {
	return recordtest.MakeAttempt("ns", "p", "uid").
		Rejected("TaintToleration", "node(s) had untolerated taint {dedicated: infra}", "tainted-node").
		Rejected("NodeResourcesFit", "Insufficient cpu", "small-2", "small-1").
		Passed("a", "b", "c", "d").
		NotEvaluated(record.NotEvaluatedEnoughFeasible, "z").
		Scores([]string{"NodeResourcesFit", "ImageLocality"}, map[string][]int64{
			"a": {10, 10}, "b": {50, 40}, "c": {50, 0},
		}).
		Scheduled("b").Obj()
}

func rowNames(rows []v1alpha1.NodeRow) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Node)
	}
	return out
}

func TestExplainRowOrderAndPaging(t *testing.T) {
	tests := []struct {
		name      string
		opts      Options
		wantRows  []string
		wantTotal int
	}{
		{
			name: "chosen, scored by total, unscored, rejected by plugin, not evaluated",
			opts: Options{Group: AllGroups},
			// NodeResourcesFit sorts before TaintToleration.
			wantRows:  []string{"b", "c", "a", "d", "small-1", "small-2", "tainted-node", "z"},
			wantTotal: 8,
		},
		{name: "page", opts: Options{Group: AllGroups, Offset: 2, Limit: 3}, wantRows: []string{"a", "d", "small-1"}, wantTotal: 8},
		{name: "page past the end", opts: Options{Group: AllGroups, Offset: 100, Limit: 3}, wantRows: nil, wantTotal: 8},
		{name: "one group", opts: Options{Group: 2}, wantRows: []string{"tainted-node"}, wantTotal: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Explain(scheduled(), tt.opts)
			if diff := cmp.Diff(tt.wantRows, rowNames(e.Rows)); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
			if e.TotalRows != tt.wantTotal {
				t.Errorf("total rows %d, want %d", e.TotalRows, tt.wantTotal)
			}
		})
	}
}

func TestExplainGroupsAndColumns(t *testing.T) {
	e := Explain(scheduled(), Options{Group: AllGroups})
	wantGroups := []v1alpha1.Group{
		{Index: 0, Verdict: "passed", Nodes: 4, HasChosen: true},
		{Index: 1, Verdict: "rejected", Plugin: "NodeResourcesFit", Reasons: []string{"Insufficient cpu"}, Nodes: 2},
		{Index: 2, Verdict: "rejected", Plugin: "TaintToleration", Reasons: []string{"node(s) had untolerated taint {dedicated: infra}"}, Nodes: 1},
		{Index: 3, Verdict: "not-evaluated", NotEvaluatedReason: record.NotEvaluatedEnoughFeasible, Nodes: 1},
	}
	if diff := cmp.Diff(wantGroups, e.Groups); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"NodeResourcesFit", "TaintToleration"}, e.FilterPlugins); diff != "" {
		t.Errorf("filter plugins (-want +got):\n%s", diff)
	}
	total := int64(90)
	wantFirst := v1alpha1.NodeRow{Node: "b", Group: 0, Chosen: true, Verdict: "passed", Rank: 1, Scores: []int64{50, 40}, Total: &total}
	if diff := cmp.Diff(wantFirst, e.Rows[0]); diff != "" {
		t.Errorf("chosen row (-want +got):\n%s", diff)
	}
}

func TestNode(t *testing.T) {
	tests := []struct {
		name    string
		node    string
		wantOK  bool
		wantWhy []string
	}{
		{name: "chosen", node: "b", wantOK: true, wantWhy: []string{"was chosen", "best total score 90 of 3"}},
		{name: "rejected", node: "tainted-node", wantOK: true, wantWhy: []string{"rejected at Filter by TaintToleration", "untolerated taint"}},
		{name: "outscored", node: "c", wantOK: true, wantWhy: []string{"ranked 2 of 3 with total score 50", "chosen node b scored 90", "ImageLocality -40"}},
		{name: "not evaluated", node: "z", wantOK: true, wantWhy: []string{"not evaluated: enough feasible nodes found"}},
		{name: "passed, unscored", node: "d", wantOK: true, wantWhy: []string{"passed every filter but was not scored; b was chosen"}},
		{name: "unknown", node: "nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ans, ok := Node(scheduled(), tt.node)
			if ok != tt.wantOK {
				t.Fatalf("ok %v, want %v", ok, tt.wantOK)
			}
			if !ok {
				return
			}
			for _, w := range tt.wantWhy {
				if !strings.Contains(ans.Why, w) {
					t.Errorf("why %q does not say %q", ans.Why, w)
				}
			}
		})
	}
}

func TestExplainLargeAttemptIsPaged(t *testing.T) {
	a := recordtest.Large(1, 5000)
	e := Explain(a, Options{Group: AllGroups, Limit: 50})
	if len(e.Rows) != 50 || e.TotalRows != 5000 {
		t.Fatalf("%d rows of %d, want 50 of 5000", len(e.Rows), e.TotalRows)
	}
	if !e.Rows[0].Chosen || e.Rows[0].Node != a.SelectedNode {
		t.Errorf("first row %+v, want the chosen node %s", e.Rows[0], a.SelectedNode)
	}
	if len(e.Groups) != 4 {
		t.Errorf("%d groups, want 4 (passed and three rejecting plugins)", len(e.Groups))
	}
}

func TestExplainShowsPluginDetails(t *testing.T) {
	a := scheduled()
	a.Details = []record.PluginDetail{
		{Plugin: "NUMATopology", Node: "small-1", Detail: "NUMA zone 1 lacks 2 CPUs"},
		{Plugin: "NUMATopology", Detail: "pod needs a single NUMA zone"},
	}
	a.DetailsCut = 3
	e := Explain(a, Options{Group: AllGroups})
	if diff := cmp.Diff([]v1alpha1.PluginDetail{{Plugin: "NUMATopology", Detail: "pod needs a single NUMA zone"}}, e.Details); diff != "" {
		t.Errorf("attempt details (-want +got):\n%s", diff)
	}
	if e.DetailsCut != 3 {
		t.Errorf("details cut %d, want 3", e.DetailsCut)
	}
	for _, r := range e.Rows {
		want := []v1alpha1.PluginDetail(nil)
		if r.Node == "small-1" {
			want = []v1alpha1.PluginDetail{{Plugin: "NUMATopology", Node: "small-1", Detail: "NUMA zone 1 lacks 2 CPUs"}}
		}
		if diff := cmp.Diff(want, r.Details); diff != "" {
			t.Errorf("row %s details (-want +got):\n%s", r.Node, diff)
		}
	}
	ans, _ := Node(a, "small-1")
	if !strings.Contains(ans.Why, "(NUMATopology: NUMA zone 1 lacks 2 CPUs)") {
		t.Errorf("why %q does not give the plugin's detail", ans.Why)
	}
}

// TestExplainShadows: an explanation has the attempt's shadow runs, with
// the plugins behind their differences, and HideNodes removes their nodes,
// ranks, scores and victims with the rows and the margin.
func TestExplainShadows(t *testing.T) {
	a := scheduled()
	score := int64(50)
	a.Shadows = []record.ShadowRun{
		{Profile: "binpack", Outcome: record.ShadowOtherNode, LiveNodeRank: 2, LiveNodeScore: &score, ShadowNodeLiveScore: &score,
			Attempt: recordtest.MakeAttempt("ns", "p", "uid").Profile("binpack").Passed("a", "c").Rejected("NodeAffinity", "didn't match", "b").Scheduled("c").Obj()},
		{Profile: "strict", Outcome: record.ShadowLiveOnly,
			PostFilter: []record.ShadowPostFilter{{Plugin: "DefaultPreemption", DryRun: true, Code: record.CodeSuccess, NominatedNode: "a",
				Victims: []record.PodRef{{Namespace: "ns", Name: "low", UID: "uid-low"}}}},
			Attempt: recordtest.MakeAttempt("ns", "p", "uid").Profile("strict").Rejected("TaintToleration", "untolerated taint", "a", "b", "c").Unschedulable("0/3 nodes are available").Obj()},
	}
	e := Explain(a, Options{Group: AllGroups})
	want := []v1alpha1.ShadowRun{
		{Shadow: "binpack", Outcome: v1alpha1.ShadowOtherNode, Plugins: []string{"NodeAffinity"}, SelectedNode: "c", LiveNodeRank: 2, LiveNodeScore: &score, ShadowNodeLiveScore: &score},
		{Shadow: "strict", Outcome: v1alpha1.ShadowOnlyLiveFits, Message: "0/3 nodes are available", Plugins: []string{"TaintToleration"},
			PostFilter: []v1alpha1.ShadowPostFilter{{Plugin: "DefaultPreemption", DryRun: true, Code: record.CodeSuccess, NominatedNode: "a",
				Victims: []v1alpha1.PodRef{{Namespace: "ns", Name: "low", UID: "uid-low"}}}}},
	}
	if diff := cmp.Diff(want, e.Shadows); diff != "" {
		t.Errorf("shadows (-want +got):\n%s", diff)
	}
	HideNodes(e)
	want[0].SelectedNode, want[0].LiveNodeRank, want[0].LiveNodeScore, want[0].ShadowNodeLiveScore = "", 0, nil, nil
	want[1].PostFilter[0].NominatedNode, want[1].PostFilter[0].Victims = "", nil
	if diff := cmp.Diff(want, e.Shadows); diff != "" {
		t.Errorf("shadows with the nodes hidden (-want +got):\n%s", diff)
	}
	if !e.NodesHidden || len(e.Rows) != 0 || e.TotalRows != 0 || e.Margin != nil {
		t.Errorf("hidden: NodesHidden %v, %d rows, total %d, margin %v; want no rows and no margin", e.NodesHidden, len(e.Rows), e.TotalRows, e.Margin)
	}
}
