package build

import (
	"time"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedscope/schedscope/pkg/record"
)

// PluginStatus is what a plugin returned at a point called once per
// attempt, and the wait a Permit plugin asked for.
type PluginStatus struct {
	Plugin, Point string
	Status        *fwk.Status
	Wait          time.Duration
}

// pluginRuns returns the plugins' runs, each with the code and reasons its
// plugin returned (Unreserve and PostBind return none) and its Permit
// wait. A status of a plugin whose calls were not counted is left out.
func pluginRuns(runs []record.PluginRun, statuses []PluginStatus) []record.PluginRun {
	type pluginPoint struct{ plugin, point string }
	index := make(map[pluginPoint]int, len(runs))
	for j, run := range runs {
		index[pluginPoint{run.Plugin, run.Point}] = j
	}
	for _, ps := range statuses {
		j, ok := index[pluginPoint{ps.Plugin, ps.Point}]
		if !ok {
			continue
		}
		if ps.Point != record.Unreserve && ps.Point != record.PostBind {
			runs[j].Code = ps.Status.Code().String()
			runs[j].Reasons = Reasons(ps.Status)
		}
		runs[j].PermitWait = ps.Wait
	}
	return runs
}
