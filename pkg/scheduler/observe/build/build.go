package build

import (
	"time"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/scheduler/observe/nodeset"
)

// Attempt is what was collected of one scheduling attempt, the input of
// Record. Record sets the codes, reasons and waits of PluginRuns from
// Statuses, and only reads the rest.
type Attempt struct {
	Pod     *v1.Pod
	Profile string
	// Number is the pod's attempt number.
	Number int

	Queued, Started, CycleEnd, BindingStart, Finished time.Time
	BindCall                                          time.Duration

	Result        record.Result
	Message       string
	FailedPoint   string
	SelectedNode  string
	NominatedNode string
	Victims       []record.PodRef
	Points        []record.PointRun
	PreFilter     []record.PreFilterRun
	Details       []record.PluginDetail
	DetailsCut    int

	// PluginRuns are the plugins' calls and their time, point by point in
	// the order the framework runs them; Statuses are what the plugins of
	// the points called once per attempt returned.
	PluginRuns []record.PluginRun
	Statuses   []PluginStatus

	// Nodes are the snapshot's nodes; Verdicts[i] is the last status
	// Filter returned for node i: Passed, a rejection, or nil if the node
	// was not filtered.
	Nodes           *nodeset.Set
	Verdicts        []*fwk.Status
	PreFilterStatus *fwk.Status
	PreFilterResult *fwk.PreFilterResult
	Feasible        int

	// ScorePlugins are the profile's score plugins, with weights; Scores
	// are the framework's scores of the scored nodes when Scored.
	ScorePlugins []record.ScorePlugin
	Scores       []fwk.NodePluginScores
	Scored       bool
	// KeptRawScores are the scores each plugin gave the scored nodes before
	// its NormalizeScore, in the framework's order of the scored nodes,
	// where the framework does not keep them itself
	// (!FrameworkKeepsRawScores).
	KeptRawScores map[string]fwk.NodeScoreList
}

// Record builds the record of a. The record's largest slices are arrays'
// (see Arrays): it must not be read after arrays is released.
func Record(a *Attempt, arrays *Arrays) *record.Attempt {
	rec := &record.Attempt{
		Pod:           record.PodRef{Namespace: a.Pod.Namespace, Name: a.Pod.Name, UID: string(a.Pod.UID)},
		Profile:       a.Profile,
		Attempt:       a.Number,
		Result:        a.Result,
		Message:       record.CutText(a.Message, record.MaxTextBytes),
		FailedPoint:   a.FailedPoint,
		SelectedNode:  a.SelectedNode,
		NominatedNode: a.NominatedNode,
		Victims:       a.Victims,
		Points:        a.Points,
		PreFilter:     a.PreFilter,
		Details:       a.Details,
		DetailsCut:    a.DetailsCut,
		Timing:        timing(a),
	}
	rec.Plugins = pluginRuns(a.PluginRuns, a.Statuses)
	rec.Filter, rec.Nodes = filterVerdicts(a, arrays)
	rec.Nodes.Feasible = a.Feasible
	rec.Scores = scoreBreakdown(a, arrays)
	return rec
}

// timing returns the attempt's timing: a cycle it did not reach takes no
// time, and an attempt never queued did not wait.
func timing(a *Attempt) record.Timing {
	t := record.Timing{
		Queued:    a.Queued,
		Started:   a.Started,
		Finished:  a.Finished,
		QueueWait: a.Started.Sub(a.Queued),
		BindCall:  a.BindCall,
	}
	if !a.CycleEnd.IsZero() {
		t.SchedulingCycle = a.CycleEnd.Sub(a.Started)
	}
	if !a.BindingStart.IsZero() {
		t.BindingCycle = a.Finished.Sub(a.BindingStart)
	}
	if a.Queued.IsZero() {
		t.QueueWait = 0
	}
	return t
}

// Reasons returns a status's reasons as a record keeps them, bounded by
// record.CutReasons; a nil status (success) has none. The status itself is
// not changed: it is what the scheduler sees.
func Reasons(s *fwk.Status) []string {
	if s == nil {
		return nil
	}
	return record.CutReasons(s.Reasons())
}
