package v1alpha1

import "github.com/schedscope/schedscope/pkg/record"

// The API's types are its own: a decision record (package record) is
// converted into them here, field by field, so that the record can change
// without changing the API. Slices are copied only where the types differ.

// ConvertPodRef converts a record's pod reference.
func ConvertPodRef(p record.PodRef) PodRef {
	return PodRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID}
}

// ConvertResult converts a record's result.
func ConvertResult(r record.Result) Result { return Result(r) }

// ConvertNodeCounts converts a record's node counts.
func ConvertNodeCounts(c record.NodeCounts) NodeCounts {
	return NodeCounts{Total: c.Total, Evaluated: c.Evaluated, Feasible: c.Feasible}
}

// ConvertTiming converts a record's timing.
func ConvertTiming(t record.Timing) Timing {
	return Timing{
		Queued: t.Queued, Started: t.Started, Finished: t.Finished, QueueWait: t.QueueWait,
		SchedulingCycle: t.SchedulingCycle, BindingCycle: t.BindingCycle, BindCall: t.BindCall,
	}
}

// ConvertPoints converts a record's extension point runs; nil stays nil.
func ConvertPoints(points []record.PointRun) []PointRun {
	if points == nil {
		return nil
	}
	out := make([]PointRun, len(points))
	for i, p := range points {
		out[i] = PointRun{Point: p.Point, Start: p.Start, Duration: p.Duration, Code: p.Code, Plugin: p.Plugin, Reasons: p.Reasons}
	}
	return out
}

// ConvertScorePlugins appends a record's score plugins to dst.
func ConvertScorePlugins(dst []ScorePlugin, plugins []record.ScorePlugin) []ScorePlugin {
	for _, p := range plugins {
		dst = append(dst, ScorePlugin{Name: p.Name, Weight: p.Weight})
	}
	return dst
}

// ConvertDetail converts a plugin's detail.
func ConvertDetail(d record.PluginDetail) PluginDetail {
	return PluginDetail{Plugin: d.Plugin, Node: d.Node, Detail: d.Detail}
}

// ConvertSummary returns the summary of a record, without what the record
// does not hold: its cluster, stream position, trace and stored size.
func ConvertSummary(a *record.Attempt) AttemptSummary {
	s := AttemptSummary{
		Pod: ConvertPodRef(a.Pod), Profile: a.Profile, Attempt: a.Attempt, Result: ConvertResult(a.Result),
		Message: a.Message, FailedPoint: a.FailedPoint, SelectedNode: a.SelectedNode,
		NominatedNode: a.NominatedNode, Finished: a.FinishTime(), Nodes: ConvertNodeCounts(a.Nodes),
	}
	for _, r := range a.RejectionsByPlugin() {
		s.Reasons = append(s.Reasons, RejectionSummary{Plugin: r.Plugin, Reasons: r.Reasons, Nodes: len(r.Nodes)})
	}
	return s
}

// ConvertMargin converts a record's margin; nil stays nil.
func ConvertMargin(m *record.Margin) *Margin {
	if m == nil {
		return nil
	}
	out := &Margin{Node: m.Node, RunnerUp: m.RunnerUp, By: m.By}
	for _, p := range m.Plugins {
		out.Plugins = append(out.Plugins, PluginMargin{Plugin: p.Plugin, By: p.By})
	}
	return out
}

// ConvertShadowOutcome converts a record's shadow outcome to the API's
// name: liveOnly is onlyLiveFits and shadowOnly onlyShadowFits.
func ConvertShadowOutcome(o record.ShadowOutcome) ShadowOutcome {
	switch o {
	case record.ShadowLiveOnly:
		return ShadowOnlyLiveFits
	case record.ShadowShadowOnly:
		return ShadowOnlyShadowFits
	}
	return ShadowOutcome(o)
}

// ConvertShadowRuns converts the shadow runs of live, a live attempt; nil
// stays nil.
func ConvertShadowRuns(live *record.Attempt) []ShadowRun {
	if live.Shadows == nil {
		return nil
	}
	out := make([]ShadowRun, len(live.Shadows))
	for i := range live.Shadows {
		out[i] = ConvertShadowRun(live, &live.Shadows[i])
	}
	return out
}

// ConvertShadowRun converts run, a shadow run of the live attempt live,
// with the plugins behind its difference from live.
func ConvertShadowRun(live *record.Attempt, run *record.ShadowRun) ShadowRun {
	out := ShadowRun{
		Shadow: run.Profile, Outcome: ConvertShadowOutcome(run.Outcome), NotComparedReason: run.NotComparedReason,
		Plugins: live.ShadowDifferences(run), LiveNodeRank: run.LiveNodeRank,
		LiveNodeScore: run.LiveNodeScore, ShadowNodeLiveScore: run.ShadowNodeLiveScore,
	}
	if a := run.Attempt; a != nil {
		out.SelectedNode = a.SelectedNode
		if a.SelectedNode == "" {
			out.Message = a.Message
		}
	}
	for _, p := range run.PostFilter {
		pf := ShadowPostFilter{Plugin: p.Plugin, DryRun: p.DryRun, Code: p.Code, Message: p.Message, NominatedNode: p.NominatedNode}
		for _, v := range p.Victims {
			pf.Victims = append(pf.Victims, ConvertPodRef(v))
		}
		out.PostFilter = append(out.PostFilter, pf)
	}
	return out
}

// HideNodes removes what a caller who may not list nodes must not see of
// the run: the shadow's node, the ranks and scores, and the PostFilter's
// nominated node and victims.
func (r *ShadowRun) HideNodes() {
	r.SelectedNode, r.LiveNodeRank, r.LiveNodeScore, r.ShadowNodeLiveScore = "", 0, nil, nil
	for i := range r.PostFilter {
		r.PostFilter[i].NominatedNode, r.PostFilter[i].Victims = "", nil
	}
}
