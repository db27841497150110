package build

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedscope/schedscope/pkg/record"
)

// TestPluginRunsTakeTheirStatuses: each run gets the code and reasons its
// plugin returned at its point, but not at Unreserve and PostBind, which
// return none, and a Permit run its wait; a status of a run not counted
// is left out.
func TestPluginRunsTakeTheirStatuses(t *testing.T) {
	runs := []record.PluginRun{
		{Plugin: "A", Point: record.PreScore, Calls: 1, Timed: 1},
		{Plugin: "B", Point: record.PreScore, Calls: 1, Timed: 1},
		{Plugin: "A", Point: record.Unreserve, Calls: 1, Timed: 1},
		{Plugin: "A", Point: record.Permit, Calls: 1, Timed: 1},
	}
	statuses := []PluginStatus{
		{Plugin: "B", Point: record.PreScore, Status: fwk.NewStatus(fwk.Error, "boom")},
		{Plugin: "A", Point: record.PreScore, Status: fwk.NewStatus(fwk.Skip)},
		{Plugin: "A", Point: record.Unreserve},
		{Plugin: "A", Point: record.Permit, Status: fwk.NewStatus(fwk.Wait), Wait: time.Second},
		{Plugin: "C", Point: record.PreScore, Status: fwk.NewStatus(fwk.Error, "not counted")},
	}
	want := []record.PluginRun{
		{Plugin: "A", Point: record.PreScore, Calls: 1, Timed: 1, Code: record.CodeSkip},
		{Plugin: "B", Point: record.PreScore, Calls: 1, Timed: 1, Code: record.CodeError, Reasons: []string{"boom"}},
		{Plugin: "A", Point: record.Unreserve, Calls: 1, Timed: 1},
		{Plugin: "A", Point: record.Permit, Calls: 1, Timed: 1, Code: record.CodeWait, PermitWait: time.Second},
	}
	if diff := cmp.Diff(want, pluginRuns(runs, statuses)); diff != "" {
		t.Errorf("plugin runs (-want +got):\n%s", diff)
	}
}
