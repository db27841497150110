package record

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRejectionsByPlugin(t *testing.T) {
	a := &Attempt{Filter: []VerdictGroup{
		{Verdict: VerdictPassed, Count: 1, Nodes: []string{"ok"}},
		{Verdict: VerdictRejected, Plugin: "TaintToleration", Code: CodeUnschedulableAndUnresolvable, Reasons: []string{"untolerated taint"}, Count: 2, Nodes: []string{"t1", "t2"}},
		{Verdict: VerdictRejected, Plugin: "NodeResourcesFit", Code: CodeUnschedulable, Reasons: []string{"Insufficient cpu"}, Count: 1, Nodes: []string{"c1"}},
		{Verdict: VerdictRejected, Plugin: "NodeResourcesFit", Code: CodeUnschedulable, Reasons: []string{"Insufficient cpu", "Insufficient memory"}, Count: 2, Nodes: []string{"c2", "c3"}},
		{Verdict: VerdictNotEvaluated, NotEvaluatedReason: NotEvaluatedEnoughFeasible, Count: 7},
	}}
	want := []PluginRejections{
		{Plugin: "TaintToleration", Nodes: []string{"t1", "t2"}, Count: 2, Reasons: []string{"untolerated taint"}},
		{Plugin: "NodeResourcesFit", Nodes: []string{"c1", "c2", "c3"}, Count: 3, Reasons: []string{"Insufficient cpu", "Insufficient memory"}},
	}
	got := a.RejectionsByPlugin()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RejectionsByPlugin (-want +got):\n%s", diff)
	}
	if g := a.Filter[2]; len(g.Nodes) != 1 || len(g.Reasons) != 1 {
		t.Errorf("merging changed the first group of a plugin: %+v", g)
	}
}

func TestFinishTime(t *testing.T) {
	queued := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	started, finished := queued.Add(time.Second), queued.Add(2*time.Second)
	for _, tt := range []struct {
		name   string
		timing Timing
		want   time.Time
	}{
		{name: "finished", timing: Timing{Queued: queued, Started: started, Finished: finished}, want: finished},
		{name: "started only", timing: Timing{Queued: queued, Started: started}, want: started},
		{name: "queued only", timing: Timing{Queued: queued}, want: queued},
	} {
		if got := (&Attempt{Timing: tt.timing}).FinishTime(); !got.Equal(tt.want) {
			t.Errorf("%s: FinishTime = %v, want %v", tt.name, got, tt.want)
		}
	}
}
