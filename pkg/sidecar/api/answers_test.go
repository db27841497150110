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

// storedBytes is the stored size in a summary: it follows the store's
// compression, not the API's types.
var storedBytes = regexp.MustCompile(`"storedBytes":\d+`)

// TestAnswersKeepTheirJSON checks every answer that shows a record, for
// records that set every field, against the JSON the API has answered
// (testdata/answers), so that the API's types keep their encoding.
func TestAnswersKeepTheirJSON(t *testing.T) {
	st := openStore(t, richRecords()...)
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
	for name, path := range map[string]string{
		"explain":         "namespaces/team-a/pods/web/explain",
		"explain-pending": "namespaces/team-b/pods/db/explain",
		"node":            "namespaces/team-a/pods/web/explain?node=node-00000",
		"node-rejected":   "namespaces/team-b/pods/db/explain?node=n1",
		"attempts":        "namespaces/team-a/pods/web/attempts",
		"pods":            "pods",
		"pending":         "pending",
	} {
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
