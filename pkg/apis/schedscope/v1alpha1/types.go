package v1alpha1

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PodRef identifies a pod.
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

// Result is the outcome of a scheduling attempt.
type Result string

const (
	// ResultScheduled means the pod was bound to the selected node.
	ResultScheduled Result = "scheduled"
	// ResultUnschedulable means no node fits the pod (or a plugin rejected
	// it later in the cycle); the pod went back to the queue.
	ResultUnschedulable Result = "unschedulable"
	// ResultError means an internal error ended the attempt.
	ResultError Result = "error"
)

// Verdicts of a node in the Filter phase (Group.Verdict, NodeRow.Verdict).
const (
	// VerdictPassed: every filter plugin accepted the node.
	VerdictPassed = "passed"
	// VerdictRejected: a plugin rejected the node; Plugin says which.
	VerdictRejected = "rejected"
	// VerdictNotEvaluated: the scheduler never ran filters on the node;
	// NotEvaluatedReason says why.
	VerdictNotEvaluated = "not-evaluated"
)

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
	// Reasons are the status's reasons.
	Reasons []string `json:"reasons,omitempty"`
}

// ScorePlugin is a score plugin and its weight in the profile.
type ScorePlugin struct {
	Name   string `json:"name"`
	Weight int64  `json:"weight"`
}

// Margin says why the chosen node beat the runner-up, the scored node
// with the next highest total: by how much, and which score plugins'
// weighted scores made the difference.
type Margin struct {
	// Node is the chosen node and RunnerUp the other scored node with the
	// highest total.
	Node     string `json:"node"`
	RunnerUp string `json:"runnerUp"`
	// By is Node's total minus RunnerUp's; 0 is a tie, which the
	// scheduler breaks at random.
	By int64 `json:"by"`
	// Plugins are the score plugins ("extenders" for the extenders' share)
	// whose weighted scores differ between the two nodes, most in Node's
	// favour first.
	Plugins []PluginMargin `json:"plugins,omitempty"`
}

// PluginMargin is one plugin's weighted score on the chosen node minus
// its weighted score on the runner-up.
type PluginMargin struct {
	Plugin string `json:"plugin"`
	By     int64  `json:"by"`
}

// String says the margin in a line, as kubectl schedscope explain and the
// page print it: "n1 beat n2 by 23: NodeResourcesFit +40, ImageLocality -17".
func (m *Margin) String() string {
	var b strings.Builder
	switch {
	case m.By > 0:
		fmt.Fprintf(&b, "%s beat %s by %d", m.Node, m.RunnerUp, m.By)
	case m.By == 0:
		fmt.Fprintf(&b, "%s tied with %s (the scheduler picked at random)", m.Node, m.RunnerUp)
	default:
		fmt.Fprintf(&b, "%s was chosen though %s scored %d more", m.Node, m.RunnerUp, -m.By)
	}
	for i, p := range m.Plugins {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(&b, "%s%s %+d", sep, p.Plugin, p.By)
	}
	return b.String()
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

// Cursor is the follower's position in the scheduler's record stream. It is
// stored together with the records it covers, so that a restart resumes
// exactly where the last stored record left off.
type Cursor struct {
	// Epoch is the stream epoch Seq belongs to; empty before the first list.
	Epoch string `json:"epoch"`
	// Seq is the sequence of the last record stored (or skipped as lost).
	Seq uint64 `json:"seq"`
	// Lost counts, over the life of the store, the records the follower
	// knows it missed because the scheduler dropped them before they were
	// read.
	Lost uint64 `json:"lost"`
}

// AttemptSummary is one attempt without its per-node detail.
type AttemptSummary struct {
	// Cluster is the cluster the attempt was made in, as its sidecar's
	// --cluster-name names it; empty for the unnamed cluster.
	Cluster       string             `json:"cluster,omitempty"`
	Seq           uint64             `json:"seq"`
	Epoch         string             `json:"epoch"`
	Pod           PodRef             `json:"pod"`
	Profile       string             `json:"profile"`
	Attempt       int                `json:"attempt"`
	Result        Result             `json:"result"`
	Message       string             `json:"message,omitempty"`
	FailedPoint   string             `json:"failedPoint,omitempty"`
	SelectedNode  string             `json:"selectedNode,omitempty"`
	NominatedNode string             `json:"nominatedNode,omitempty"`
	TraceID       string             `json:"traceID,omitempty"`
	Finished      time.Time          `json:"finished"`
	Nodes         NodeCounts         `json:"nodes"`
	Reasons       []RejectionSummary `json:"reasons,omitempty"`
	// StoredBytes is the size of the stored
	StoredBytes int `json:"storedBytes"`
	// Repeats counts the later attempts of the pod, in a row, whose
	// outcome was this one's (unschedulable at the same point, for the
	// same reasons, on the same nodes): they are folded into this one and
	// stored once, as upstream folds repeated events into one with a
	// count. LastAttempt and LastFinished are the last of them.
	Repeats      int       `json:"repeats,omitempty"`
	LastAttempt  int       `json:"lastAttempt,omitempty"`
	LastFinished time.Time `json:"lastFinished,omitzero"`
}

// RejectionSummary says how many nodes one plugin rejected in an attempt.
type RejectionSummary struct {
	Plugin  string   `json:"plugin"`
	Reasons []string `json:"reasons,omitempty"`
	Nodes   int      `json:"nodes"`
}

// PodStatus is a pod as its latest attempt left it.
type PodStatus struct {
	// Cluster is the pod's cluster (Latest's); empty for the unnamed one.
	Cluster   string    `json:"cluster,omitempty"`
	Pod       PodRef    `json:"pod"`
	Profile   string    `json:"profile"`
	FirstSeen time.Time `json:"firstSeen"`
	// Latest is the pod's latest attempt.
	Latest AttemptSummary `json:"latest"`
}

// Pending reports whether the pod's latest attempt did not schedule it.
func (p PodStatus) Pending() bool { return p.Latest.Result != ResultScheduled }

// Rejection grouping keys.
const (
	ByPlugin = "plugin"
	ByNode   = "node"
)

// RejectionCount is how often a plugin rejected nodes, or a node was rejected.
type RejectionCount struct {
	// Key is the plugin or the node name.
	Key string `json:"key"`
	// Attempts counts the attempts with at least one such rejection.
	Attempts int64 `json:"attempts"`
	// Nodes counts node rejections (a node rejected in two attempts counts twice).
	Nodes int64 `json:"nodes"`
	// Plugins counts, for a node, the rejections by each plugin.
	Plugins map[string]int64 `json:"plugins,omitempty"`
	// Series holds the counts in each bucket when the query has a Step.
	Series []RejectionBucket `json:"series,omitempty"`
}

// RejectionBucket is the count of one key in one time bucket.
type RejectionBucket struct {
	Start    time.Time `json:"start"`
	Attempts int64     `json:"attempts"`
	Nodes    int64     `json:"nodes"`
}

// StoreStats describes a store's contents.
type StoreStats struct {
	// Attempts counts the attempts recorded, folded repeats included.
	Attempts int64 `json:"attempts"`
	// Folded counts the repeats folded into another attempt: Attempts -
	// Folded attempts are stored.
	Folded int64 `json:"folded"`
	Pods   int64 `json:"pods"`
	// Bytes is the size of the stored records.
	Bytes int64 `json:"bytes"`
	// DiskBytes is the size of the store's files on disk: records, indexes
	// and the write-ahead log.
	DiskBytes int64 `json:"diskBytes"`
	// Clusters splits the counts by cluster, in name order; the unnamed
	// cluster is "".
	Clusters []ClusterStoreStats `json:"clusters,omitempty"`
}

// ClusterStoreStats describes one cluster's part of a store.
type ClusterStoreStats struct {
	Cluster  string `json:"cluster"`
	Attempts int64  `json:"attempts"`
	Folded   int64  `json:"folded"`
	Pods     int64  `json:"pods"`
	Bytes    int64  `json:"bytes"`
}

// FollowerStatus is what the sidecar's follower reports about itself.
type FollowerStatus struct {
	// Cursor is the position stored last, with the total of lost records.
	Cursor Cursor `json:"cursor"`
	// Watching is true while a watch is open.
	Watching bool `json:"watching"`
	// Relists counts the relists after 410 Gone since the sidecar started.
	Relists uint64 `json:"relists"`
	// EpochChanges counts the epoch changes since the sidecar started.
	EpochChanges uint64 `json:"epochChanges"`
	// LastGap is the number of records lost in the latest gap.
	LastGap   uint64    `json:"lastGap"`
	LastGapAt time.Time `json:"lastGapAt,omitzero"`
	// LastError is the latest error following the stream.
	LastError   string    `json:"lastError,omitempty"`
	LastErrorAt time.Time `json:"lastErrorAt,omitzero"`
	// LastEventAt is when the stream last sent anything.
	LastEventAt time.Time `json:"lastEventAt,omitzero"`
}

// AttemptList is the response of the attempts endpoints.
type AttemptList struct {
	Items []AttemptSummary `json:"items"`
}

// PodList is the response of the pods and pending endpoints.
type PodList struct {
	Items []PodStatus `json:"items"`
}

// RejectionList is the response of the rejections endpoint.
type RejectionList struct {
	By    string           `json:"by"`
	Since time.Time        `json:"since"`
	Until time.Time        `json:"until,omitzero"`
	Step  string           `json:"step,omitempty"`
	Items []RejectionCount `json:"items"`
}

// Status is the response of the status endpoint.
type Status struct {
	Follower *FollowerStatus `json:"follower,omitempty"`
	Store    StoreStats      `json:"store"`
	// TraceURL links a record's TraceID in the trace viewer, {traceID}
	// standing for the ID.
	TraceURL string `json:"traceURL,omitempty"`
}

// Explanation is a scheduling attempt laid out for reading.
type Explanation struct {
	// Cluster is the pod's cluster; empty for the unnamed one.
	Cluster       string     `json:"cluster,omitempty"`
	Pod           PodRef     `json:"pod"`
	Profile       string     `json:"profile"`
	Attempt       int        `json:"attempt"`
	Seq           uint64     `json:"seq"`
	Result        Result     `json:"result"`
	Message       string     `json:"message,omitempty"`
	FailedPoint   string     `json:"failedPoint,omitempty"`
	SelectedNode  string     `json:"selectedNode,omitempty"`
	NominatedNode string     `json:"nominatedNode,omitempty"`
	TraceID       string     `json:"traceID,omitempty"`
	Timing        Timing     `json:"timing"`
	Points        []PointRun `json:"points,omitempty"`
	Nodes         NodeCounts `json:"nodes"`

	// FilterPlugins are the plugins that rejected at least one node.
	FilterPlugins []string `json:"filterPlugins"`
	// ScorePlugins are the columns of NodeRow.Scores.
	ScorePlugins []ScorePlugin `json:"scorePlugins"`
	// ScoringSkipped says why nodes were not scored, if they were not.
	ScoringSkipped string `json:"scoringSkipped,omitempty"`
	// Margin says why the chosen node beat the runner-up; nil when fewer
	// than two nodes were scored, or when the caller may not list nodes.
	Margin *Margin `json:"margin,omitempty"`
	// Groups are the nodes grouped by identical verdict, in row order.
	Groups []Group `json:"groups"`
	// Details are what plugins said of the attempt as a whole; what they
	// said of a node is in its row.
	Details []PluginDetail `json:"details,omitempty"`
	// DetailsCut counts the plugins' details the record did not keep.
	DetailsCut int `json:"detailsCut,omitempty"`
	// Hints are the single changes that would let the pod fit, most
	// nodes first, when the attempt was unschedulable and the pod still
	// waits; see Hint.
	Hints []Hint `json:"hints,omitempty"`
	// Shadows are what the shadow profiles of Profile would have done in
	// this attempt, in the order they were declared.
	Shadows []ShadowRun `json:"shadows,omitempty"`

	// NodesHidden is true when the caller may not list nodes: then Rows is
	// empty and TotalRows 0, and what shows of the nodes is the groups'
	// counts and reasons, as upstream's FailedScheduling event shows them.
	NodesHidden bool `json:"nodesHidden,omitempty"`
	// Rows is the requested page of nodes.
	Rows []NodeRow `json:"rows"`
	// TotalRows is the number of rows the page was taken from.
	TotalRows int `json:"totalRows"`
	Offset    int `json:"offset"`
	Limit     int `json:"limit"`
}

// Group is a set of nodes with the same Filter verdict.
type Group struct {
	Index              int      `json:"index"`
	Verdict            string   `json:"verdict"`
	Plugin             string   `json:"plugin,omitempty"`
	Reasons            []string `json:"reasons,omitempty"`
	NotEvaluatedReason string   `json:"notEvaluatedReason,omitempty"`
	Nodes              int      `json:"nodes"`
	// HasChosen is true for the group holding the chosen node.
	HasChosen bool `json:"hasChosen,omitempty"`
}

// NodeRow is one node of the matrix.
type NodeRow struct {
	Node   string `json:"node"`
	Group  int    `json:"group"`
	Chosen bool   `json:"chosen,omitempty"`
	// Verdict is the Filter verdict.
	Verdict            string   `json:"verdict"`
	Plugin             string   `json:"plugin,omitempty"`
	Reasons            []string `json:"reasons,omitempty"`
	NotEvaluatedReason string   `json:"notEvaluatedReason,omitempty"`
	// Rank is the node's place by total score (1 is best); 0 if unscored.
	Rank int `json:"rank,omitempty"`
	// Scores are the weighted scores, one per ScorePlugin; nil if unscored.
	Scores []int64 `json:"scores,omitempty"`
	Total  *int64  `json:"total,omitempty"`
	// Details are what plugins said of the node.
	Details []PluginDetail `json:"details,omitempty"`
}

// NodeAnswer explains the fate of one node.
type NodeAnswer struct {
	Pod          PodRef  `json:"pod"`
	Attempt      int     `json:"attempt"`
	Result       Result  `json:"result"`
	SelectedNode string  `json:"selectedNode,omitempty"`
	Row          NodeRow `json:"row"`
	// Why is a sentence saying why the pod did (not) land on the node.
	Why string `json:"why"`
}

// HintKind is the kind of change a Hint suggests.
type HintKind string

// The changes a Hint suggests.
const (
	// HintTolerate: the pod tolerates Taint.
	HintTolerate HintKind = "Tolerate"
	// HintLowerRequests: the pod requests at most Requests.
	HintLowerRequests HintKind = "LowerRequests"
	// HintAddNodeLabels: nodes get Labels (or the pod stops selecting them).
	HintAddNodeLabels HintKind = "AddNodeLabels"
	// HintUncordon: the nodes become schedulable again.
	HintUncordon HintKind = "Uncordon"
	// HintPreempt: the pod may preempt pods of lower priority (its
	// preemptionPolicy is Never).
	HintPreempt HintKind = "Preempt"
	// HintNoSingleChange: no one change lets the pod fit any node.
	HintNoSingleChange HintKind = "NoSingleChange"
)

// MaxHintNodes bounds Hint.NodeNames.
const MaxHintNodes = 5

// Hint is one change after which the Filter plugins that rejected some
// nodes in the attempt would pass them, judged on the nodes and pods as
// they are now. Hints cover the rejections of TaintToleration,
// NodeAffinity, NodeUnschedulable and NodeResourcesFit; a node that
// another plugin rejected is never counted as fitting.
type Hint struct {
	Kind HintKind `json:"kind"`
	// Plugins are the Filter plugins whose rejections the change answers.
	Plugins []string `json:"plugins"`
	// Message says the change in a sentence.
	Message string `json:"message"`
	// Nodes counts the nodes that would fit after the change.
	Nodes int `json:"nodes"`
	// NodeNames are the first MaxHintNodes of them, for callers who may
	// list nodes; empty otherwise.
	NodeNames []string `json:"nodeNames,omitempty"`
	// Taint is the taint to tolerate (HintTolerate).
	Taint *corev1.Taint `json:"taint,omitempty"`
	// Requests are the largest requests that fit (HintLowerRequests).
	Requests corev1.ResourceList `json:"requests,omitempty"`
	// Labels are the labels the nodes lack (HintAddNodeLabels).
	Labels map[string]string `json:"labels,omitempty"`
}

// ShadowOutcome compares a shadow profile's choice with the live profile's.
type ShadowOutcome string

// The outcomes of a shadow run.
const (
	// ShadowSameNode: both chose the same node.
	ShadowSameNode ShadowOutcome = "sameNode"
	// ShadowOtherNode: both found a node, and they differ.
	ShadowOtherNode ShadowOutcome = "otherNode"
	// ShadowOnlyLiveFits: the live profile found a node, the shadow none.
	ShadowOnlyLiveFits ShadowOutcome = "onlyLiveFits"
	// ShadowOnlyShadowFits: the shadow found a node, the live profile none.
	ShadowOnlyShadowFits ShadowOutcome = "onlyShadowFits"
	// ShadowNeither: neither found a node.
	ShadowNeither ShadowOutcome = "neither"
	// ShadowNotCompared: the shadow's run could not be compared with the
	// live attempt; NotComparedReason says why. It is never a divergence.
	ShadowNotCompared ShadowOutcome = "notCompared"
)

// ShadowRun is what a shadow profile would have done in a live attempt, on
// the cluster state that attempt saw. A shadow binds nothing.
type ShadowRun struct {
	// Shadow is the shadow profile's schedulerName.
	Shadow  string        `json:"shadow"`
	Outcome ShadowOutcome `json:"outcome"`
	// NotComparedReason says why the run was not compared.
	NotComparedReason string `json:"notComparedReason,omitempty"`
	// Message is the shadow's message when it found no node.
	Message string `json:"message,omitempty"`
	// Plugins are the plugins behind the difference from the live
	// attempt, most decisive first (record.Attempt.ShadowDifferences).
	Plugins []string `json:"plugins,omitempty"`
	// SelectedNode is the node the shadow chose. It, the ranks and the
	// scores are empty when the caller may not list nodes.
	SelectedNode string `json:"selectedNode,omitempty"`
	// LiveNodeRank is the live attempt's node's rank among the nodes the
	// shadow scored (1 is best); 0 when the shadow did not score it.
	LiveNodeRank int `json:"liveNodeRank,omitempty"`
	// LiveNodeScore is the shadow's total score of the live attempt's node.
	LiveNodeScore *int64 `json:"liveNodeScore,omitempty"`
	// ShadowNodeLiveScore is the live profile's total score of the
	// shadow's node.
	ShadowNodeLiveScore *int64 `json:"shadowNodeLiveScore,omitempty"`
	// PostFilter is the shadow's dry-run PostFilter answer when it found
	// no node. Its node and victims are empty when the caller may not
	// list nodes.
	PostFilter []ShadowPostFilter `json:"postFilter,omitempty"`
}

// ShadowPostFilter is one PostFilter plugin's answer in a shadow run.
type ShadowPostFilter struct {
	Plugin string `json:"plugin"`
	// DryRun tells whether the plugin was asked (a shadow dry-runs
	// DefaultPreemption only); Message says why when it was not.
	DryRun        bool     `json:"dryRun"`
	Code          string   `json:"code,omitempty"`
	Message       string   `json:"message,omitempty"`
	NominatedNode string   `json:"nominatedNode,omitempty"`
	Victims       []PodRef `json:"victims,omitempty"`
}

// ShadowSummary counts a shadow's runs over a window: the response of the
// shadows endpoints.
type ShadowSummary struct {
	Shadow string    `json:"shadow"`
	Since  time.Time `json:"since"`
	Until  time.Time `json:"until,omitzero"`
	// Compared counts the runs compared with their live attempt: the sum
	// of SameNode, OtherNode, OnlyLiveFits, OnlyShadowFits and Neither.
	Compared       int64 `json:"compared"`
	SameNode       int64 `json:"sameNode"`
	OtherNode      int64 `json:"otherNode"`
	OnlyLiveFits   int64 `json:"onlyLiveFits"`
	OnlyShadowFits int64 `json:"onlyShadowFits"`
	Neither        int64 `json:"neither"`
	// NotCompared counts the runs that could not be compared, and
	// NotComparedReasons says why, most frequent first.
	NotCompared        int64         `json:"notCompared"`
	NotComparedReasons []ReasonCount `json:"notComparedReasons,omitempty"`
	// TopPlugins are the plugins most often behind a difference (the first
	// of a run's ShadowRun.Plugins), most frequent first.
	TopPlugins []PluginCount `json:"topPlugins,omitempty"`
}

// ReasonCount is how often a reason was given.
type ReasonCount struct {
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
}

// PluginCount is how often a plugin was behind a difference.
type PluginCount struct {
	Plugin string `json:"plugin"`
	Count  int64  `json:"count"`
}
