package api

import (
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
	"github.com/schedscope/schedscope/pkg/stream"
)

var update = flag.Bool("update", false, "rewrite testdata/answers from the answers served")

// richRecords are records that set every field an answer shows: a
// scheduled attempt with scores, details, victims and a trace, and an
// unschedulable one that is still pending.
func richRecords() []stream.Record {
	a := recordtest.Large(7, 10)
	a.Pod = record.PodRef{Namespace: "team-a", Name: "web", UID: "uid-web"}
	a.Attempt = 3
	a.NominatedNode = "node-00009"
	a.Victims = []record.PodRef{{Namespace: "team-a", Name: "batch", UID: "uid-batch"}}
	a.Timing.QueueWait = time.Millisecond
	a.Timing.SchedulingCycle = 7 * time.Millisecond
	a.Timing.BindingCycle = 2 * time.Millisecond
	a.Timing.BindCall = time.Millisecond
	a.Points[0].Start = a.Timing.Started
	a.Points[2].Code = record.CodeUnschedulable
	a.Points[2].Plugin = "DefaultPreemption"
	a.Points[2].Reasons = []string{"preempted 1 pod"}
	a.PreFilter = []record.PreFilterRun{{Plugin: "NodeAffinity", Code: record.CodeSuccess, NodeNames: []string{"node-00000"}}}
	a.Details = []record.PluginDetail{
		{Plugin: "DynamicResources", Detail: "no claims"},
		{Plugin: "NodeResourcesFit", Node: "node-00000", Detail: "cpu: 2 requested, 1 free"},
	}
	a.DetailsCut = 2

	b := recordtest.MakeAttempt("team-b", "db", "uid-db").Finished(recordtest.Base.Add(time.Second)).
		Unschedulable("0/3 nodes are available").
		Rejected("NodeAffinity", "node(s) didn't match Pod's node affinity/selector", "n1", "n2").
		NotEvaluated(record.NotEvaluatedEnoughFeasible, "n3").Obj()
	b.FailedPoint = record.Filter
	return []stream.Record{
		{Seq: 41, TraceID: "0af7651916cd43dd8448eb211c80319c", Attempt: a},
		{Seq: 42, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Attempt: b},
	}
}

// shadowRecords are records of a live attempt with the runs of its
// shadows, every field of a run set: one shadow chose another node, one
// found none and would have preempted, one was not compared.
func shadowRecords() []stream.Record {
	pod := func(profile string) *recordtest.Wrapper {
		return recordtest.MakeAttempt("team-c", "api", "uid-api").Profile(profile).Finished(recordtest.Base.Add(2 * time.Second))
	}
	score := func(v int64) *int64 { return &v }
	a := pod("default-scheduler").Passed("n1", "n2").Scores([]string{"NodeResourcesFit", "ImageLocality"}, map[string][]int64{"n1": {80, 10}, "n2": {40, 20}}).Scheduled("n1").Obj()
	a.Shadows = []record.ShadowRun{
		{Profile: "binpack", Outcome: record.ShadowOtherNode, LiveNodeRank: 2, LiveNodeScore: score(60), ShadowNodeLiveScore: score(60),
			Attempt: pod("binpack").Passed("n1", "n2").Scores([]string{"NodeResourcesFit", "ImageLocality"}, map[string][]int64{"n1": {40, 20}, "n2": {90, 10}}).Scheduled("n2").Obj()},
		{Profile: "strict", Outcome: record.ShadowLiveOnly,
			PostFilter: []record.ShadowPostFilter{
				{Plugin: "DefaultPreemption", DryRun: true, Code: record.CodeSuccess, Message: "preemption would help", NominatedNode: "n2",
					Victims: []record.PodRef{{Namespace: "team-c", Name: "batch", UID: "uid-batch"}}},
			},
			Attempt: pod("strict").Rejected("NodeAffinity", "node(s) didn't match Pod's node affinity/selector", "n1", "n2").Unschedulable("0/2 nodes are available").Obj()},
		{Profile: "flaky", Outcome: record.ShadowNotCompared, NotComparedReason: record.NotComparedSnapshotChanged, Attempt: pod("flaky").Passed("n1").Scheduled("n1").Obj()},
	}
	return []stream.Record{{Seq: 43, TraceID: "5bf92f3577b34da6a3ce929d0e0e4737", Attempt: a}}
}

// storedBytes is the stored size in a summary: it follows the store's
// compression, not the API's types.
var storedBytes = regexp.MustCompile(`"storedBytes":\d+`)

// TestAnswersKeepTheirJSON checks every answer that shows a record, for
// records that set every field, against the JSON the API has answered
// (testdata/answers), so that the API's types keep their encoding.
func TestAnswersKeepTheirJSON(t *testing.T) {
	for _, tt := range []struct {
		records []stream.Record
		answers map[string]string
	}{
		{
			records: richRecords(),
			answers: map[string]string{
				"explain":         "namespaces/team-a/pods/web/explain",
				"explain-pending": "namespaces/team-b/pods/db/explain",
				"node":            "namespaces/team-a/pods/web/explain?node=node-00000",
				"node-rejected":   "namespaces/team-b/pods/db/explain?node=n1",
				"attempts":        "namespaces/team-a/pods/web/attempts",
				"pods":            "pods",
				"pending":         "pending",
			},
		},
		{
			records: shadowRecords(),
			answers: map[string]string{
				"explain-shadows": "namespaces/team-c/pods/api/explain",
				"explain-shadow":  "namespaces/team-c/pods/api/explain?shadow=binpack",
				"shadow-summary":  "shadows/binpack",
			},
		},
	} {
		st := openStore(t, tt.records...)
		h, err := New(Config{
			Store: st, Authenticator: fakeAuthn, Authorizer: &fakeAuthz{rules: []string{"alice get */*", "alice list */", "alice list nodes"}},
			Now: func() time.Time { return recordtest.Base.Add(time.Minute) },
		})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		defer srv.Close()
		e := &env{srv: srv}
		for name, path := range tt.answers {
			t.Run(name, func(t *testing.T) {
				code, body := e.get(t, "alice", v1alpha1.Prefix+path)
				if code != http.StatusOK {
					t.Fatalf("status %d: %s", code, body)
				}
				got := storedBytes.ReplaceAllString(string(body), `"storedBytes":0`)
				file := filepath.Join("testdata", "answers", name+".json")
				if *update {
					if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(string(want), got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", path, diff)
				}
			})
		}
	}
}
