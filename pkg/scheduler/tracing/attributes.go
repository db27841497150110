package tracing

import "go.opentelemetry.io/otel/attribute"

// Span names. They form a closed set: the attempt, its three phases, the
// scheduling framework's extension points (record.Filter, record.Bind, ...)
// and the shadow runs.
const (
	// SpanAttempt is the root span of an attempt, from the time the pod was
	// queued to the end of the attempt.
	SpanAttempt = "SchedulingAttempt"
	// SpanQueueWait is the time the pod waited in the scheduling queue.
	SpanQueueWait = "QueueWait"
	// SpanSchedulingCycle is the synchronous cycle, PreFilter to Permit.
	SpanSchedulingCycle = "SchedulingCycle"
	// SpanBindingCycle is the asynchronous cycle, WaitOnPermit to PostBind.
	SpanBindingCycle = "BindingCycle"
	// SpanShadowRun is one shadow profile's run within the scheduling
	// cycle (record.ShadowRun).
	SpanShadowRun = "ShadowRun"
	// spanOtherPoint names the span of an extension point this package does
	// not know, so that span names stay a closed set.
	spanOtherPoint = "ExtensionPoint"
)

// Span event names.
const (
	// EventPlugin carries one plugin's total time at an extension point.
	EventPlugin = "plugin"
	// EventNodesRejected carries a group of nodes a Filter plugin rejected
	// with the same status.
	EventNodesRejected = "nodes.rejected"
	// EventNodesNotEvaluated carries a group of nodes the Filter phase did
	// not evaluate, and why.
	EventNodesNotEvaluated = "nodes.not_evaluated"
	// EventNodeScore carries one of the highest scored nodes.
	EventNodeScore = "node.score"
)

// Attribute keys of schedscope's spans, resources and events. The
// Kubernetes object keys (k8s.pod.name, k8s.node.name, ...) and error.type
// come from the OpenTelemetry semantic conventions.
const (
	// ProfileKey is the scheduler profile that ran the attempt.
	ProfileKey = attribute.Key("schedscope.profile")
	// ProfilesKey is the resource attribute listing the scheduler's profiles.
	ProfilesKey = attribute.Key("schedscope.profiles")
	// AttemptKey is the attempt's number among the pod's attempts, from 1.
	AttemptKey = attribute.Key("schedscope.attempt")
	// ResultKey is the outcome: scheduled, unschedulable or error.
	ResultKey = attribute.Key("schedscope.result")
	// LatencyKey is the attempt's time in the scheduler, from the start of
	// the scheduling cycle to the end of the attempt, in seconds. The queue
	// wait is not included.
	LatencyKey = attribute.Key("schedscope.latency")
	// MessageKey explains a failed attempt.
	MessageKey = attribute.Key("schedscope.message")
	// FailedPointKey is the extension point that ended a failed attempt.
	FailedPointKey = attribute.Key("schedscope.failed_point")
	// NominatedNodeKey is the node preemption nominated for the pod.
	NominatedNodeKey = attribute.Key("schedscope.nominated_node.name")
	// VictimsCountKey counts the pods preemption chose to evict.
	VictimsCountKey = attribute.Key("schedscope.victims.count")
	// VictimsKey lists the first victims as namespace/name.
	VictimsKey = attribute.Key("schedscope.victims")
	// NodesTotalKey is the number of nodes in the scheduler's snapshot.
	NodesTotalKey = attribute.Key("schedscope.nodes.total")
	// NodesEvaluatedKey is the number of nodes the Filter phase ran on.
	NodesEvaluatedKey = attribute.Key("schedscope.nodes.evaluated")
	// NodesFeasibleKey is the number of nodes that passed every filter.
	NodesFeasibleKey = attribute.Key("schedscope.nodes.feasible")
	// RejectionsKey is the histogram of Filter rejections: one
	// "Plugin=nodes" entry per rejecting plugin, most nodes first.
	RejectionsKey = attribute.Key("schedscope.rejections")
	// ScoringSkippedKey says why the attempt did not score nodes.
	ScoringSkippedKey = attribute.Key("schedscope.scoring.skipped_reason")
	// BindCallKey is the time the Bind plugins took, in seconds.
	BindCallKey = attribute.Key("schedscope.bind_call.duration")

	// CodeKey is the framework status code of an extension point or plugin.
	CodeKey = attribute.Key("schedscope.code")
	// PluginKey is a plugin's name: the one that ended an extension point,
	// or the one an event is about.
	PluginKey = attribute.Key("schedscope.plugin")
	// ReasonsKey are the reasons of a status.
	ReasonsKey = attribute.Key("schedscope.reasons")
	// PluginDurationKey is a plugin's total time at an extension point, in
	// seconds, summed over all nodes for Filter and Score.
	PluginDurationKey = attribute.Key("schedscope.plugin.duration")
	// PluginCallsKey counts a plugin's calls at an extension point.
	PluginCallsKey = attribute.Key("schedscope.plugin.calls")
	// PermitWaitKey is the wait a Permit plugin asked for, in seconds.
	PermitWaitKey = attribute.Key("schedscope.permit.wait")
	// NodeCountKey is the number of nodes of a verdict group.
	NodeCountKey = attribute.Key("schedscope.node_count")
	// NodesSampleKey lists the first nodes of a verdict group.
	NodesSampleKey = attribute.Key("schedscope.nodes.sample")
	// NotEvaluatedReasonKey says why nodes were not evaluated.
	NotEvaluatedReasonKey = attribute.Key("schedscope.not_evaluated_reason")
	// ScoreRankKey is a node's rank by total score, from 1.
	ScoreRankKey = attribute.Key("schedscope.score.rank")
	// ScoreTotalKey is a node's final score.
	ScoreTotalKey = attribute.Key("schedscope.score.total")
	// ScorePluginsKey lists a node's weighted score per plugin, as
	// "Plugin=score".
	ScorePluginsKey = attribute.Key("schedscope.score.plugins")
	// PreviousAttemptKey, on a link, is the number of the linked attempt.
	PreviousAttemptKey = attribute.Key("schedscope.previous_attempt")
	// CallerKey, true on a link, marks the link to the span of the pod's
	// TraceparentAnnotation.
	CallerKey = attribute.Key("schedscope.caller")

	// ShadowProfileKey is the shadow profile of a shadow run.
	ShadowProfileKey = attribute.Key("schedscope.shadow.profile")
	// ShadowOutcomeKey compares a shadow run's choice with the live
	// attempt's (record.ShadowOutcome).
	ShadowOutcomeKey = attribute.Key("schedscope.shadow.outcome")
	// ShadowNodeKey is the node a shadow run chose, when it chose one.
	ShadowNodeKey = attribute.Key("schedscope.shadow.node")
	// ShadowNotComparedReasonKey says why a shadow run was not compared.
	ShadowNotComparedReasonKey = attribute.Key("schedscope.shadow.not_compared_reason")
)

// Bounds on per-node detail, so that a trace stays small on large clusters.
const (
	// maxTopScores is the number of highest scored nodes recorded.
	maxTopScores = 5
	// maxVerdictEvents is the number of Filter verdict groups recorded as
	// events, largest first.
	maxVerdictEvents = 32
	// maxNodesSample is the number of node names listed per verdict group.
	maxNodesSample = 5
	// maxVictims is the number of victims listed by name.
	maxVictims = 10
)
