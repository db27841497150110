// Package record defines the decision record: what schedscope recorded about
// one scheduling attempt of one pod. The scheduler produces records, the
// record stream carries them as JSON, and the sidecar and the kubectl plugin
// read them. The package has no dependency on the scheduler itself.
package record

import (
	"slices"
	"time"
)

// Result is the outcome of a scheduling attempt.
type Result string

const (
	// ResultScheduled means the pod was bound to SelectedNode.
	ResultScheduled Result = "scheduled"
	// ResultUnschedulable means no node fits the pod (or a plugin rejected it
	// later in the cycle); the pod goes back to the queue.
	ResultUnschedulable Result = "unschedulable"
	// ResultError means an internal error ended the attempt.
	ResultError Result = "error"
)

// Extension point names, as the scheduling framework calls them.
const (
	PreFilter      = "PreFilter"
	Filter         = "Filter"
	PostFilter     = "PostFilter"
	PreScore       = "PreScore"
	Score          = "Score"
	NormalizeScore = "NormalizeScore"
	Reserve        = "Reserve"
	Unreserve      = "Unreserve"
	Permit         = "Permit"
	WaitOnPermit   = "WaitOnPermit"
	PreBind        = "PreBind"
	Bind           = "Bind"
	PostBind       = "PostBind"
)

// Status codes of the scheduler framework, as records spell them (the
// framework's Code.String()).
const (
	CodeSuccess                      = "Success"
	CodeError                        = "Error"
	CodeUnschedulable                = "Unschedulable"
	CodeWait                         = "Wait"
	CodeSkip                         = "Skip"
	CodeUnschedulableAndUnresolvable = "UnschedulableAndUnresolvable"
	CodePending                      = "Pending"
)

// Verdicts of a node in the Filter phase.
const (
	// VerdictPassed: every filter plugin accepted the node.
	VerdictPassed = "passed"
	// VerdictRejected: a plugin rejected the node; Plugin says which.
	VerdictRejected = "rejected"
	// VerdictNotEvaluated: the scheduler never ran filters on the node;
	// NotEvaluatedReason says why.
	VerdictNotEvaluated = "not-evaluated"
)

// Reasons a node was not evaluated.
const (
	// NotEvaluatedEnoughFeasible: the scheduler had found enough feasible
	// nodes (percentageOfNodesToScore) and stopped searching.
	NotEvaluatedEnoughFeasible = "enough feasible nodes found"
	// NotEvaluatedPreFilterResult: a PreFilter plugin narrowed the candidate
	// nodes and this node was not among them.
	NotEvaluatedPreFilterResult = "excluded by PreFilter result"
	// NotEvaluatedPreFilterRejected: PreFilter rejected the pod, so no node
	// was filtered.
	NotEvaluatedPreFilterRejected = "pod rejected at PreFilter"
	// NotEvaluatedNominatedNodeFit: the pod's nominated node passed, so the
	// scheduler evaluated no other node.
	NotEvaluatedNominatedNodeFit = "nominated node fits"
)

// Attempt is the record of one scheduling attempt. Where it is in the
// record stream and which trace it has are not part of it: the stream
// carries them beside it.
type Attempt struct {
	// Pod identifies the pod.
	Pod PodRef `json:"pod"`
	// Profile is the scheduler profile (spec.schedulerName) that ran.
	Profile string `json:"profile"`
	// Attempt counts the scheduling attempts of this pod, starting at 1.
	Attempt int `json:"attempt"`
	// Result is the outcome.
	Result Result `json:"result"`
	// Message explains a failed attempt, as the scheduler reports it in its
	// FailedScheduling event, cut to MaxTextBytes.
	Message string `json:"message,omitempty"`
	// FailedPoint is the extension point that ended a failed attempt.
	FailedPoint string `json:"failedPoint,omitempty"`
	// SelectedNode is the node the scheduler chose.
	SelectedNode string `json:"selectedNode,omitempty"`
	// NominatedNode is the node preemption nominated for the pod.
	NominatedNode string `json:"nominatedNode,omitempty"`
	// Victims are the pods preemption chose to evict for this pod.
	Victims []PodRef `json:"victims,omitempty"`
	// Shadows holds what each shadow profile of Profile would have done in
	// this attempt, in the order the shadows were declared.
	Shadows []ShadowRun `json:"shadows,omitempty"`

	// Timing of the attempt.
	Timing Timing `json:"timing"`
	// Points holds the time and status of every extension point that ran,
	// in the order it ran.
	Points []PointRun `json:"points,omitempty"`
	// Plugins holds the time each plugin spent at each extension point.
	// For Filter and Score it is the total over all nodes.
	Plugins []PluginRun `json:"plugins,omitempty"`

	// PreFilter holds each PreFilter plugin's result.
	PreFilter []PreFilterRun `json:"preFilter,omitempty"`
	// Nodes counts the nodes of the attempt.
	Nodes NodeCounts `json:"nodes"`
	// Filter holds the verdict of every node, grouped by identical verdict.
	Filter []VerdictGroup `json:"filter,omitempty"`
	// Scores holds the score breakdown of every scored node.
	Scores *Scores `json:"scores,omitempty"`
	// Details holds what plugins that explain themselves said of the
	// attempt and of the nodes they rejected, at most MaxDetails, each cut
	// to MaxDetailBytes.
	Details []PluginDetail `json:"details,omitempty"`
	// DetailsCut counts the details beyond MaxDetails that were not kept.
	DetailsCut int `json:"detailsCut,omitempty"`
}

// ShadowOutcome compares a shadow profile's choice with the live profile's.
type ShadowOutcome string

const (
	// ShadowSameNode: both chose the same node.
	ShadowSameNode ShadowOutcome = "sameNode"
	// ShadowOtherNode: both found a node, and they differ.
	ShadowOtherNode ShadowOutcome = "otherNode"
	// ShadowLiveOnly: the live profile found a node and the shadow did not.
	ShadowLiveOnly ShadowOutcome = "liveOnly"
	// ShadowShadowOnly: the shadow found a node and the live profile did not.
	ShadowShadowOnly ShadowOutcome = "shadowOnly"
	// ShadowNeither: neither found a node.
	ShadowNeither ShadowOutcome = "neither"
	// ShadowNotCompared: the shadow's run cannot be compared with the live
	// attempt; NotComparedReason says why. It is never a divergence.
	ShadowNotCompared ShadowOutcome = "notCompared"
)

// Reasons a shadow run was not compared.
const (
	// NotComparedSnapshotChanged: the scheduler's snapshot changed while the
	// shadow ran, so the shadow did not see the state the live attempt saw.
	NotComparedSnapshotChanged = "the cluster snapshot changed during the shadow's run"
	// NotComparedLiveError: the live attempt ended in an internal error
	// before it chose a node or found none.
	NotComparedLiveError = "the live attempt ended in an error"
	// NotComparedShadowError: the shadow's run ended in an internal error;
	// its Attempt says where.
	NotComparedShadowError = "the shadow's run ended in an error"
)

// ShadowRun is what a shadow profile would have done with the pod of a
// live attempt, on the cluster state the live attempt saw. A shadow only
// computes: it binds, reserves, permits, preempts and nominates nothing.
type ShadowRun struct {
	// Profile is the shadow profile (its schedulerName).
	Profile string `json:"profile"`
	// Outcome compares the shadow's choice with the live attempt's.
	Outcome ShadowOutcome `json:"outcome"`
	// NotComparedReason says why the run was not compared.
	NotComparedReason string `json:"notComparedReason,omitempty"`
	// LiveNodeRank is the rank of the live attempt's node among the nodes
	// the shadow scored, 1 for the best (nodes of equal score share a
	// rank); 0 when the shadow did not score it.
	LiveNodeRank int `json:"liveNodeRank,omitempty"`
	// LiveNodeScore is the shadow's total score of the live attempt's node,
	// when the shadow scored it.
	LiveNodeScore *int64 `json:"liveNodeScore,omitempty"`
	// ShadowNodeLiveScore is the live profile's total score of the
	// shadow's node, when the live profile scored it.
	ShadowNodeLiveScore *int64 `json:"shadowNodeLiveScore,omitempty"`
	// PostFilter is the shadow's PostFilter answer when it found no node:
	// each PostFilter plugin in order, until one would have helped.
	PostFilter []ShadowPostFilter `json:"postFilter,omitempty"`
	// Attempt is the shadow's own record, bounded as any attempt's: its
	// Result is scheduled when it chose SelectedNode (it binds nothing),
	// and it holds its own points, plugin times, verdicts, scores and
	// details. It has no shadows, victims or binding times.
	Attempt *Attempt `json:"attempt,omitempty"`
}

// ShadowPostFilter is one PostFilter plugin's answer in a shadow run.
type ShadowPostFilter struct {
	Plugin string `json:"plugin"`
	// DryRun tells whether the plugin was asked: a shadow dry-runs
	// DefaultPreemption, finding candidates and choosing one, and evicts
	// and nominates nothing; it does not call other PostFilter plugins,
	// which act as they decide. Message says why a plugin was not asked.
	DryRun bool `json:"dryRun"`
	// Code is the answer's status code: Success when preemption would
	// help.
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// NominatedNode is the node preemption would have nominated.
	NominatedNode string `json:"nominatedNode,omitempty"`
	// Victims are the pods preemption would have evicted there.
	Victims []PodRef `json:"victims,omitempty"`
}

// PluginDetail is a plugin's own explanation of its verdict.
type PluginDetail struct {
	// Plugin is the plugin that explained.
	Plugin string `json:"plugin"`
	// Node is the node explained; empty for the attempt as a whole.
	Node string `json:"node,omitempty"`
	// Detail is the plugin's text.
	Detail string `json:"detail"`
}

// PodRef identifies a pod.
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

// Timing holds the timestamps and durations of an attempt.
type Timing struct {
	// Queued is when the pod last entered the scheduling queue.
	Queued time.Time `json:"queued"`
	// Started is when the scheduling cycle started.
	Started time.Time `json:"started"`
	// Finished is when the attempt ended (bound, or handed back to the queue).
	Finished time.Time `json:"finished"`
	// QueueWait is the time between Queued and Started.
	QueueWait time.Duration `json:"queueWait"`
	// SchedulingCycle is the synchronous part: PreFilter to Permit.
	SchedulingCycle time.Duration `json:"schedulingCycle"`
	// BindingCycle is the asynchronous part: WaitOnPermit to PostBind.
	BindingCycle time.Duration `json:"bindingCycle,omitempty"`
	// BindCall is the time the Bind plugins took (the API call for DefaultBinder).
	BindCall time.Duration `json:"bindCall,omitempty"`
}

// PointRun is one run of an extension point.
type PointRun struct {
	Point    string        `json:"point"`
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"duration"`
	// Code is the framework status code the point returned ("Success", ...).
	Code string `json:"code"`
	// Plugin is the plugin whose status ended the point, if it failed.
	Plugin string `json:"plugin,omitempty"`
	// Reasons are the status's reasons, bounded by CutReasons, as in every
	// reasons list of a record.
	Reasons []string `json:"reasons,omitempty"`
}

// PluginRun is the time one plugin spent at one extension point.
type PluginRun struct {
	Plugin   string        `json:"plugin"`
	Point    string        `json:"point"`
	Duration time.Duration `json:"duration"`
	// Calls counts the calls: one per node for Filter and Score.
	Calls int64 `json:"calls"`
	// Timed counts the calls that were timed. Filter and Score time the
	// first 16 calls of a plugin and every 8th after, and Duration is
	// scaled to all calls; other points time every call.
	Timed int64 `json:"timed"`
	// Code is the status the plugin returned, for points called once per
	// attempt (empty for Filter and Score).
	Code    string   `json:"code,omitempty"`
	Reasons []string `json:"reasons,omitempty"`
	// PermitWait is the wait a Permit plugin asked for.
	PermitWait time.Duration `json:"permitWait,omitempty"`
}

// PreFilterRun is the result of one PreFilter plugin.
type PreFilterRun struct {
	Plugin  string   `json:"plugin"`
	Code    string   `json:"code"`
	Reasons []string `json:"reasons,omitempty"`
	// NodeNames is the node subset the plugin returned; nil means all nodes.
	NodeNames []string `json:"nodeNames,omitempty"`
}

// NodeCounts counts the nodes of an attempt.
type NodeCounts struct {
	// Total is the number of nodes in the scheduler's snapshot.
	Total int `json:"total"`
	// Evaluated is the number of nodes the Filter phase ran on.
	Evaluated int `json:"evaluated"`
	// Feasible is the number of nodes that passed every filter and were
	// kept for scoring.
	Feasible int `json:"feasible"`
}

// VerdictGroup is a set of nodes that got the same Filter verdict.
type VerdictGroup struct {
	Verdict string `json:"verdict"`
	// Plugin, Code and Reasons describe a rejection.
	Plugin  string   `json:"plugin,omitempty"`
	Code    string   `json:"code,omitempty"`
	Reasons []string `json:"reasons,omitempty"`
	// NotEvaluatedReason says why the nodes were never evaluated.
	NotEvaluatedReason string `json:"notEvaluatedReason,omitempty"`
	// Count is the number of nodes in the group.
	Count int `json:"count"`
	// Nodes are the node names, sorted. A not-evaluated group does not list
	// them, to keep a record the size of the nodes the scheduler looked at:
	// its nodes are the snapshot's nodes that no other group lists (those
	// outside a PreFilter result are the ones missing from the PreFilter
	// run's NodeNames).
	Nodes []string `json:"nodes,omitempty"`
}

// Rank orders verdict groups for reading: passed, then rejected, then not
// evaluated.
func (g VerdictGroup) Rank() int {
	switch g.Verdict {
	case VerdictPassed:
		return 0
	case VerdictRejected:
		return 1
	}
	return 2
}

// Scores is the score breakdown of an attempt.
type Scores struct {
	// SkippedReason is set when the scheduler did not score, e.g. because
	// only one node was feasible.
	SkippedReason string `json:"skippedReason,omitempty"`
	// Plugins lists the score plugins in the order of each node's values.
	Plugins []ScorePlugin `json:"plugins,omitempty"`
	// Nodes holds each scored node, highest total first.
	Nodes []NodeScore `json:"nodes,omitempty"`
}

// ScorePlugin is a score plugin and its weight in the profile.
type ScorePlugin struct {
	Name   string `json:"name"`
	Weight int64  `json:"weight"`
}

// NodeScore is one node's scores, one value per score plugin.
type NodeScore struct {
	Node string `json:"node"`
	// Raw is what Score returned.
	Raw []int64 `json:"raw"`
	// Normalized is the score after NormalizeScore (equal to Raw when the
	// plugin does not normalize).
	Normalized []int64 `json:"normalized"`
	// Weighted is Normalized times the plugin's weight.
	Weighted []int64 `json:"weighted"`
	// Extenders is the sum of the extenders' weighted scores.
	Extenders int64 `json:"extenders,omitempty"`
	// Total is the node's final score.
	Total int64 `json:"total"`
}

// Skipped scoring reasons.
const (
	// ScoringSkippedSingleNode: only one node was feasible, so the scheduler
	// chose it without scoring.
	ScoringSkippedSingleNode = "single feasible node"
)

// PluginRejections is what one Filter plugin rejected in an attempt.
type PluginRejections struct {
	Plugin string
	// Nodes are the rejected nodes, group after group.
	Nodes []string
	// Count is the number of rejected nodes, by the groups' counts.
	Count int
	// Reasons are the distinct reasons, in the order the groups give them.
	Reasons []string
}

// RejectionsByPlugin returns the Filter rejections of an attempt by plugin,
// in the order the plugins first appear in its verdict groups. Where a
// plugin has one group, its Nodes and Reasons are the group's own slices:
// read them, do not change them.
func (a *Attempt) RejectionsByPlugin() []PluginRejections {
	var out []PluginRejections
	for _, g := range a.Filter {
		if g.Verdict != VerdictRejected {
			continue
		}
		count := max(g.Count, len(g.Nodes))
		i := slices.IndexFunc(out, func(r PluginRejections) bool { return r.Plugin == g.Plugin })
		if i < 0 {
			out = append(out, PluginRejections{Plugin: g.Plugin, Nodes: slices.Clip(g.Nodes), Count: count, Reasons: slices.Clip(g.Reasons)})
			continue
		}
		r := &out[i]
		r.Nodes = append(r.Nodes, g.Nodes...)
		r.Count += count
		for _, reason := range g.Reasons {
			if !slices.Contains(r.Reasons, reason) {
				r.Reasons = append(r.Reasons, reason)
			}
		}
	}
	return out
}

// FinishTime is the time that orders an attempt: when it finished, or
// when it started if it has no finish time.
func (a *Attempt) FinishTime() time.Time {
	switch {
	case !a.Timing.Finished.IsZero():
		return a.Timing.Finished
	case !a.Timing.Started.IsZero():
		return a.Timing.Started
	default:
		return a.Timing.Queued
	}
}
