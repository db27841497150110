package v1alpha1

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
)

// rich returns a record that sets every field the conversions read.
func rich() *record.Attempt {
	a := recordtest.MakeAttempt("team-a", "web", "uid-web").Number(3).
		Unschedulable("0/3 nodes are available").
		Rejected("NodeAffinity", "node(s) didn't match Pod's node affinity/selector", "n1", "n2").
		Passed("n3").Scores([]string{"NodeResourcesFit", "ImageLocality"}, map[string][]int64{"n3": {80, 10}}).Obj()
	a.NominatedNode = "n3"
	a.Timing.QueueWait = time.Millisecond
	a.Timing.SchedulingCycle = 7 * time.Millisecond
	a.Timing.BindingCycle = 2 * time.Millisecond
	a.Timing.BindCall = time.Millisecond
	a.Points = []record.PointRun{
		{Point: record.Filter, Start: a.Timing.Started, Duration: 123456, Code: record.CodeSuccess},
		{Point: record.PostFilter, Start: a.Timing.Started.Add(time.Millisecond), Duration: 654321, Code: record.CodeUnschedulable,
			Plugin: "DefaultPreemption", Reasons: []string{"preemption is not helpful"}},
	}
	a.Details = []record.PluginDetail{{Plugin: "NodeResourcesFit", Node: "n1", Detail: "cpu: 2 requested, 1 free"}}
	return a
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestConversionsKeepTheRecordsJSON checks that each conversion's result
// encodes exactly as the record's own field does: the API answers what it
// answered when it embedded the record's types.
func TestConversionsKeepTheRecordsJSON(t *testing.T) {
	a := rich()
	for _, tt := range []struct {
		name        string
		record, api any
	}{
		{name: "pod", record: a.Pod, api: ConvertPodRef(a.Pod)},
		{name: "result", record: a.Result, api: ConvertResult(a.Result)},
		{name: "nodes", record: a.Nodes, api: ConvertNodeCounts(a.Nodes)},
		{name: "timing", record: a.Timing, api: ConvertTiming(a.Timing)},
		{name: "points", record: a.Points, api: ConvertPoints(a.Points)},
		{name: "no points", record: []record.PointRun(nil), api: ConvertPoints(nil)},
		{name: "score plugins", record: a.Scores.Plugins, api: ConvertScorePlugins(nil, a.Scores.Plugins)},
		{name: "detail", record: a.Details[0], api: ConvertDetail(a.Details[0])},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(marshal(t, tt.record), marshal(t, tt.api)); diff != "" {
				t.Errorf("(-record +api):\n%s", diff)
			}
		})
	}
}

func TestConvertSummary(t *testing.T) {
	a := rich()
	want := AttemptSummary{
		Pod: PodRef{Namespace: "team-a", Name: "web", UID: "uid-web"}, Profile: "default-scheduler", Attempt: 3,
		Result: ResultUnschedulable, Message: "0/3 nodes are available", FailedPoint: record.Filter, NominatedNode: "n3",
		Finished: a.Timing.Finished, Nodes: NodeCounts{Total: 3, Evaluated: 3, Feasible: 1},
		Reasons: []RejectionSummary{{Plugin: "NodeAffinity", Reasons: []string{"node(s) didn't match Pod's node affinity/selector"}, Nodes: 2}},
	}
	if diff := cmp.Diff(want, ConvertSummary(a)); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
}

func TestConvertShadowRun(t *testing.T) {
	live := recordtest.MakeAttempt("team-a", "web", "uid-web").Passed("n1", "n2").Scheduled("n1").Obj()
	score := func(v int64) *int64 { return &v }
	live.Shadows = []record.ShadowRun{
		{Profile: "binpack", Outcome: record.ShadowOtherNode, LiveNodeRank: 2, LiveNodeScore: score(10), ShadowNodeLiveScore: score(5),
			Attempt: recordtest.MakeAttempt("team-a", "web", "uid-web").Profile("binpack").Passed("n2").Rejected("NodeResourcesFit", "Insufficient cpu", "n1").Scheduled("n2").Obj()},
		{Profile: "strict", Outcome: record.ShadowLiveOnly,
			PostFilter: []record.ShadowPostFilter{{Plugin: "DefaultPreemption", DryRun: true, Code: record.CodeSuccess, NominatedNode: "n2",
				Victims: []record.PodRef{{Namespace: "team-b", Name: "low", UID: "uid-low"}}}},
			Attempt: recordtest.MakeAttempt("team-a", "web", "uid-web").Profile("strict").Unschedulable("0/2 nodes are available").
				Rejected("NodeAffinity", "didn't match", "n1", "n2").Obj()},
		{Profile: "spread", Outcome: record.ShadowShadowOnly},
		{Profile: "broken", Outcome: record.ShadowNotCompared, NotComparedReason: record.NotComparedShadowError},
	}
	want := []ShadowRun{
		{Shadow: "binpack", Outcome: ShadowOtherNode, Plugins: []string{"NodeResourcesFit"}, SelectedNode: "n2",
			LiveNodeRank: 2, LiveNodeScore: score(10), ShadowNodeLiveScore: score(5)},
		{Shadow: "strict", Outcome: ShadowOnlyLiveFits, Message: "0/2 nodes are available", Plugins: []string{"NodeAffinity"},
			PostFilter: []ShadowPostFilter{{Plugin: "DefaultPreemption", DryRun: true, Code: record.CodeSuccess, NominatedNode: "n2",
				Victims: []PodRef{{Namespace: "team-b", Name: "low", UID: "uid-low"}}}}},
		{Shadow: "spread", Outcome: ShadowOnlyShadowFits},
		{Shadow: "broken", Outcome: ShadowNotCompared, NotComparedReason: record.NotComparedShadowError},
	}
	got := ConvertShadowRuns(live)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shadow runs (-want +got):\n%s", diff)
	}
	for i := range got {
		got[i].HideNodes()
	}
	want[0].SelectedNode, want[0].LiveNodeRank, want[0].LiveNodeScore, want[0].ShadowNodeLiveScore = "", 0, nil, nil
	want[1].PostFilter[0].NominatedNode, want[1].PostFilter[0].Victims = "", nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shadow runs with the nodes hidden (-want +got):\n%s", diff)
	}
}
