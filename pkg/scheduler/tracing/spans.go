package tracing

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/schedscope/schedscope/pkg/record"
)

// knownPoints are the extension points named as spans.
var knownPoints = map[string]bool{
	record.PreFilter: true, record.Filter: true, record.PostFilter: true,
	record.PreScore: true, record.Score: true, record.NormalizeScore: true,
	record.Reserve: true, record.Unreserve: true, record.Permit: true,
	record.WaitOnPermit: true, record.PreBind: true, record.Bind: true, record.PostBind: true,
}

// bindingPoints run in the binding cycle. Unreserve runs in either cycle.
var bindingPoints = map[string]bool{
	record.WaitOnPermit: true, record.PreBind: true, record.Bind: true, record.PostBind: true,
}

// buildTrace creates and ends the spans of rec, under the span of ctx if
// any, and returns the root span's context. When the root is not sampled,
// no other span is created.
func buildTrace(ctx context.Context, tracer trace.Tracer, rec *record.Attempt, links []trace.Link) trace.SpanContext {
	tm := rec.Timing
	start, end := tm.Started, tm.Finished
	if !tm.Queued.IsZero() && (start.IsZero() || tm.Queued.Before(start)) {
		start = tm.Queued
	}
	if end.Before(start) {
		end = start
	}
	// The sampler decides on the result and the latency alone; the other
	// attributes are built only for a span that records.
	ctx, root := tracer.Start(ctx, SpanAttempt,
		trace.WithTimestamp(start),
		trace.WithLinks(links...),
		trace.WithAttributes(samplingAttributes(rec)...),
	)
	defer root.End(trace.WithTimestamp(end))
	if !root.IsRecording() {
		return root.SpanContext()
	}
	root.SetAttributes(rootAttributes(rec)...)
	if rec.Result != record.ResultScheduled {
		root.SetStatus(codes.Error, cut(rec.Message))
	}

	if !tm.Queued.IsZero() && tm.QueueWait > 0 {
		_, s := tracer.Start(ctx, SpanQueueWait, trace.WithTimestamp(tm.Queued))
		s.End(trace.WithTimestamp(tm.Queued.Add(tm.QueueWait)))
	}

	schedCtx, schedSpan := tracer.Start(ctx, SpanSchedulingCycle, trace.WithTimestamp(tm.Started))
	schedEnd := tm.Started.Add(tm.SchedulingCycle)
	var bindCtx context.Context
	var bindSpan trace.Span
	var bindStart time.Time
	if tm.BindingCycle > 0 {
		bindStart = tm.Finished.Add(-tm.BindingCycle)
		bindCtx, bindSpan = tracer.Start(ctx, SpanBindingCycle,
			trace.WithTimestamp(bindStart),
			trace.WithAttributes(BindCallKey.Float64(tm.BindCall.Seconds())),
		)
	}

	plugins := map[string][]record.PluginRun{}
	for _, p := range rec.Plugins {
		plugins[p.Point] = append(plugins[p.Point], p)
	}
	seen := map[string]bool{}
	for _, p := range rec.Points {
		parent := schedCtx
		pEnd := p.Start.Add(p.Duration)
		if bindSpan != nil && (bindingPoints[p.Point] || (p.Point == record.Unreserve && !p.Start.Before(bindStart))) {
			parent = bindCtx
		} else if tm.SchedulingCycle == 0 && pEnd.After(schedEnd) {
			// No recorded cycle end: the cycle spans its points.
			schedEnd = pEnd
		}
		span := pointSpan(parent, tracer, p)
		// Plugin totals and per-node detail cover every run of the point;
		// they go on its first run.
		if !seen[p.Point] {
			seen[p.Point] = true
			addPluginEvents(span, plugins[p.Point], pEnd)
			switch p.Point {
			case record.Filter:
				addVerdictEvents(span, rec.Filter, pEnd)
			case record.Score:
				addScoreEvents(span, rec.Scores, pEnd)
			}
		}
		span.End(trace.WithTimestamp(pEnd))
	}
	for _, sr := range rec.Shadows {
		if sEnd := shadowSpan(schedCtx, tracer, sr, schedEnd); tm.SchedulingCycle == 0 && sEnd.After(schedEnd) {
			schedEnd = sEnd
		}
	}
	// Without a Filter or Score span, the detail goes on the cycle.
	if !seen[record.Filter] {
		addVerdictEvents(schedSpan, rec.Filter, schedEnd)
	}
	if !seen[record.Score] {
		addScoreEvents(schedSpan, rec.Scores, schedEnd)
	}
	schedSpan.End(trace.WithTimestamp(schedEnd))
	if bindSpan != nil {
		bindSpan.End(trace.WithTimestamp(tm.Finished))
	}
	return root.SpanContext()
}

// samplingAttributes are the root span's attributes the sampler reads.
func samplingAttributes(rec *record.Attempt) []attribute.KeyValue {
	latency := time.Duration(0)
	if !rec.Timing.Started.IsZero() && rec.Timing.Finished.After(rec.Timing.Started) {
		latency = rec.Timing.Finished.Sub(rec.Timing.Started)
	}
	return []attribute.KeyValue{ResultKey.String(string(rec.Result)), LatencyKey.Float64(latency.Seconds())}
}

// rootAttributes describe the attempt, beside samplingAttributes.
func rootAttributes(rec *record.Attempt) []attribute.KeyValue {
	// Room for every attribute below: growing the list would copy it.
	attrs := make([]attribute.KeyValue, 0, 18)
	attrs = append(attrs,
		stringAttr(semconv.K8SPodNameKey, rec.Pod.Name),
		stringAttr(semconv.K8SNamespaceNameKey, rec.Pod.Namespace),
		stringAttr(semconv.K8SPodUIDKey, rec.Pod.UID),
		stringAttr(ProfileKey, rec.Profile),
		AttemptKey.Int(rec.Attempt),
		NodesTotalKey.Int(rec.Nodes.Total),
		NodesEvaluatedKey.Int(rec.Nodes.Evaluated),
		NodesFeasibleKey.Int(rec.Nodes.Feasible),
	)
	if rec.SelectedNode != "" {
		attrs = append(attrs, stringAttr(semconv.K8SNodeNameKey, rec.SelectedNode))
	}
	if rec.Result != record.ResultScheduled {
		attrs = append(attrs, semconv.ErrorTypeKey.String(string(rec.Result)))
	}
	if rec.Message != "" {
		attrs = append(attrs, stringAttr(MessageKey, rec.Message))
	}
	if rec.FailedPoint != "" {
		attrs = append(attrs, stringAttr(FailedPointKey, rec.FailedPoint))
		for _, p := range rec.Points {
			if p.Point == rec.FailedPoint && p.Code != record.CodeSuccess && p.Plugin != "" {
				attrs = append(attrs, stringAttr(PluginKey, p.Plugin))
				break
			}
		}
	}
	if rec.NominatedNode != "" {
		attrs = append(attrs, stringAttr(NominatedNodeKey, rec.NominatedNode))
	}
	if len(rec.Victims) > 0 {
		names := make([]string, 0, min(len(rec.Victims), maxVictims))
		for _, v := range rec.Victims[:min(len(rec.Victims), maxVictims)] {
			names = append(names, v.Namespace+"/"+v.Name)
		}
		attrs = append(attrs, VictimsCountKey.Int(len(rec.Victims)), listAttr(VictimsKey, names))
	}
	if h := rejections(rec); len(h) > 0 {
		attrs = append(attrs, listAttr(RejectionsKey, h))
	}
	if rec.Scores != nil && rec.Scores.SkippedReason != "" {
		attrs = append(attrs, stringAttr(ScoringSkippedKey, rec.Scores.SkippedReason))
	}
	return attrs
}

// rejections is the histogram of rejected nodes per Filter plugin, as
// "Plugin=nodes", most nodes first.
func rejections(a *record.Attempt) []string {
	byPlugin := a.RejectionsByPlugin()
	slices.SortFunc(byPlugin, func(a, b record.PluginRejections) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Plugin, b.Plugin))
	})
	h := make([]string, len(byPlugin))
	for i, r := range byPlugin {
		h[i] = fmt.Sprintf("%s=%d", r.Plugin, r.Count)
	}
	return h
}

// pointSpan starts the span of one extension point run. The caller ends it.
func pointSpan(ctx context.Context, tracer trace.Tracer, p record.PointRun) trace.Span {
	name := p.Point
	attrs := []attribute.KeyValue{stringAttr(CodeKey, p.Code)}
	if !knownPoints[name] {
		name = spanOtherPoint
	}
	if p.Plugin != "" {
		attrs = append(attrs, stringAttr(PluginKey, p.Plugin))
	}
	if len(p.Reasons) > 0 {
		attrs = append(attrs, listAttr(ReasonsKey, p.Reasons))
	}
	switch p.Code {
	case record.CodeError, record.CodeUnschedulable, record.CodeUnschedulableAndUnresolvable:
		attrs = append(attrs, stringAttr(semconv.ErrorTypeKey, p.Code))
	}
	_, span := tracer.Start(ctx, name, trace.WithTimestamp(p.Start), trace.WithAttributes(attrs...))
	switch p.Code {
	case record.CodeError, record.CodeUnschedulable, record.CodeUnschedulableAndUnresolvable:
		desc := p.Code
		if p.Plugin != "" {
			desc = p.Plugin + ": " + desc
		}
		if len(p.Reasons) > 0 {
			desc += ": " + strings.Join(p.Reasons, "; ")
		}
		span.SetStatus(codes.Error, cut(desc))
	}
	return span
}

// shadowSpan creates and ends the span of one shadow run, over the time
// its own attempt took; a run without its attempt's times gets an empty
// span at cycleEnd. It returns the span's end.
func shadowSpan(ctx context.Context, tracer trace.Tracer, sr record.ShadowRun, cycleEnd time.Time) time.Time {
	start, end := cycleEnd, cycleEnd
	attrs := []attribute.KeyValue{
		stringAttr(ShadowProfileKey, sr.Profile),
		stringAttr(ShadowOutcomeKey, string(sr.Outcome)),
	}
	if a := sr.Attempt; a != nil {
		if !a.Timing.Started.IsZero() {
			start, end = a.Timing.Started, a.Timing.Finished
			if end.Before(start) {
				end = start
			}
		}
		if a.SelectedNode != "" {
			attrs = append(attrs, stringAttr(ShadowNodeKey, a.SelectedNode))
		}
	}
	if sr.NotComparedReason != "" {
		attrs = append(attrs, stringAttr(ShadowNotComparedReasonKey, sr.NotComparedReason))
	}
	_, span := tracer.Start(ctx, SpanShadowRun, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	span.End(trace.WithTimestamp(end))
	return end
}

// addPluginEvents records each plugin's total time at a point.
func addPluginEvents(span trace.Span, runs []record.PluginRun, at time.Time) {
	for _, r := range runs {
		attrs := []attribute.KeyValue{
			stringAttr(PluginKey, r.Plugin),
			PluginDurationKey.Float64(r.Duration.Seconds()),
			PluginCallsKey.Int64(r.Calls),
		}
		if r.Code != "" {
			attrs = append(attrs, stringAttr(CodeKey, r.Code))
		}
		if len(r.Reasons) > 0 {
			attrs = append(attrs, listAttr(ReasonsKey, r.Reasons))
		}
		if r.PermitWait > 0 {
			attrs = append(attrs, PermitWaitKey.Float64(r.PermitWait.Seconds()))
		}
		span.AddEvent(EventPlugin, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	}
}

// addVerdictEvents records the Filter verdict groups other than passed,
// the largest maxVerdictEvents first.
func addVerdictEvents(span trace.Span, groups []record.VerdictGroup, at time.Time) {
	var shown []record.VerdictGroup
	for _, g := range groups {
		if g.Verdict != record.VerdictPassed {
			shown = append(shown, g)
		}
	}
	slices.SortStableFunc(shown, func(a, b record.VerdictGroup) int { return cmp.Compare(groupSize(b), groupSize(a)) })
	for _, g := range shown[:min(len(shown), maxVerdictEvents)] {
		attrs := []attribute.KeyValue{
			NodeCountKey.Int(groupSize(g)),
			listAttr(NodesSampleKey, g.Nodes[:min(len(g.Nodes), maxNodesSample)]),
		}
		name := EventNodesRejected
		if g.Verdict == record.VerdictNotEvaluated {
			name = EventNodesNotEvaluated
			attrs = append(attrs, stringAttr(NotEvaluatedReasonKey, g.NotEvaluatedReason))
		} else {
			attrs = append(attrs, stringAttr(PluginKey, g.Plugin), stringAttr(CodeKey, g.Code))
			if len(g.Reasons) > 0 {
				attrs = append(attrs, listAttr(ReasonsKey, g.Reasons))
			}
		}
		span.AddEvent(name, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	}
}

// addScoreEvents records the maxTopScores highest scored nodes.
func addScoreEvents(span trace.Span, scores *record.Scores, at time.Time) {
	if scores == nil {
		return
	}
	for i, n := range scores.Nodes[:min(len(scores.Nodes), maxTopScores)] {
		perPlugin := make([]string, 0, len(scores.Plugins))
		for j, p := range scores.Plugins {
			if j < len(n.Weighted) {
				perPlugin = append(perPlugin, fmt.Sprintf("%s=%d", p.Name, n.Weighted[j]))
			}
		}
		span.AddEvent(EventNodeScore, trace.WithTimestamp(at), trace.WithAttributes(
			stringAttr(semconv.K8SNodeNameKey, n.Node),
			ScoreRankKey.Int(i+1),
			ScoreTotalKey.Int64(n.Total),
			listAttr(ScorePluginsKey, perPlugin),
		))
	}
}

// groupSize is the number of nodes in a verdict group, which lists the
// names of all but not-evaluated nodes.
func groupSize(g record.VerdictGroup) int {
	return max(g.Count, len(g.Nodes))
}
