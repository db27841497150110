package tracing_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	tracingapi "k8s.io/component-base/tracing/api/v1"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/scheduler/tracing"
)

// newRecordingTracer returns a Tracer whose spans go to a SpanRecorder,
// through a provider with schedscope's sampler at rate (per million).
func newRecordingTracer(t *testing.T, rate int32, slow time.Duration) (*tracing.Tracer, *tracetest.SpanRecorder) {
	return newTracerWith(t, rate, tracing.Options{SlowThreshold: slow})
}

// newTracerWith is newRecordingTracer with opts, whose sampler lets a pod's
// traceparent decide when opts.FollowTraceparentSampling is set.
func newTracerWith(t *testing.T, rate int32, opts tracing.Options) (*tracing.Tracer, *tracetest.SpanRecorder) {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(tracing.NewSampler(&rate, opts.SlowThreshold, opts.FollowTraceparentSampling)),
		sdktrace.WithSpanProcessor(sr),
	)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	opts.TracerProvider = tp
	tr, err := tracing.New(context.Background(), &tracingapi.TracingConfiguration{SamplingRatePerMillion: &rate}, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return tr, sr
}

func podOf(rec *record.Attempt, annotations map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: rec.Pod.Namespace, Name: rec.Pod.Name, UID: types.UID(rec.Pod.UID), Annotations: annotations,
	}}
}

// assertAllEnded fails unless every started span was ended.
func assertAllEnded(t *testing.T, sr *tracetest.SpanRecorder) {
	t.Helper()
	started, ended := sr.Started(), sr.Ended()
	for _, s := range started {
		if s.EndTime().IsZero() {
			t.Errorf("span %q was never ended", s.Name())
		}
	}
	if len(started) != len(ended) {
		t.Errorf("%d spans started, %d ended", len(started), len(ended))
	}
}

// tree lists each span as the path of span names from its root, in start
// order.
func tree(spans []sdktrace.ReadOnlySpan) []string {
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	type entry struct {
		start time.Time
		path  string
	}
	var entries []entry
	for _, s := range spans {
		names := []string{s.Name()}
		for p, ok := byID[s.Parent().SpanID()]; ok; p, ok = byID[p.Parent().SpanID()] {
			names = append([]string{p.Name()}, names...)
		}
		entries = append(entries, entry{s.StartTime(), strings.Join(names, "/")})
	}
	slices.SortStableFunc(entries, func(a, b entry) int {
		if c := a.start.Compare(b.start); c != 0 {
			return c
		}
		return strings.Compare(a.path, b.path)
	})
	paths := make([]string, len(entries))
	for i, e := range entries {
		paths[i] = e.path
	}
	return paths
}

func spanNamed(t *testing.T, spans []sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range spans {
		if s.Name() == name {
			return s
		}
	}
	t.Fatalf("no span %q", name)
	return nil
}

func attrs(kvs []attribute.KeyValue) map[attribute.Key]any {
	m := make(map[attribute.Key]any, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value.AsInterface()
	}
	return m
}

// subset returns the entries of got whose keys are in want.
func subset(got, want map[attribute.Key]any) map[attribute.Key]any {
	out := map[attribute.Key]any{}
	for k := range want {
		if v, ok := got[k]; ok {
			out[k] = v
		}
	}
	return out
}

func eventNames(s sdktrace.ReadOnlySpan) []string {
	var names []string
	for _, e := range s.Events() {
		names = append(names, e.Name)
	}
	return names
}

const (
	attempt = "SchedulingAttempt"
	cycle   = attempt + "/SchedulingCycle"
	binding = attempt + "/BindingCycle"
)

var scheduledTree = []string{
	attempt,
	attempt + "/QueueWait",
	cycle,
	cycle + "/PreFilter",
	cycle + "/Filter",
	cycle + "/PreScore",
	cycle + "/Score",
	cycle + "/Reserve",
	cycle + "/Permit",
	binding,
	binding + "/WaitOnPermit",
	binding + "/PreBind",
	binding + "/Bind",
	binding + "/PostBind",
}

var shadowedTree = []string{
	attempt,
	attempt + "/QueueWait",
	cycle,
	cycle + "/PreFilter",
	cycle + "/Filter",
	cycle + "/PreScore",
	cycle + "/Score",
	cycle + "/ShadowRun",
	cycle + "/ShadowRun",
	cycle + "/Reserve",
	cycle + "/Permit",
	binding,
	binding + "/WaitOnPermit",
	binding + "/PreBind",
	binding + "/Bind",
	binding + "/PostBind",
}

var unschedulableTree = []string{
	attempt,
	attempt + "/QueueWait",
	cycle,
	cycle + "/PreFilter",
	cycle + "/Filter",
	cycle + "/PostFilter",
}

func TestTraceSpans(t *testing.T) {
	tests := []struct {
		name           string
		rec            *record.Attempt
		wantTree       []string
		wantRoot       map[attribute.Key]any
		wantRootStatus codes.Code
		// wantStatus is the status code of the first span of each name.
		wantStatus map[string]codes.Code
		// wantEvents are the event names of the first span of each name.
		wantEvents map[string][]string
		// wantDuration is the duration of the first span of each name.
		wantDuration map[string]time.Duration
	}{
		{
			name:     "scheduled",
			rec:      scheduledRecord("web-1", "uid-1"),
			wantTree: scheduledTree,
			wantRoot: map[attribute.Key]any{
				"k8s.pod.name":                "web-1",
				"k8s.namespace.name":          "default",
				"k8s.pod.uid":                 "uid-1",
				"k8s.node.name":               "node-2",
				tracing.ProfileKey:            "default-scheduler",
				tracing.AttemptKey:            int64(1),
				tracing.ResultKey:             "scheduled",
				tracing.LatencyKey:            0.0075,
				tracing.NodesTotalKey:         int64(3),
				tracing.NodesEvaluatedKey:     int64(3),
				tracing.NodesFeasibleKey:      int64(3),
				"error.type":                  nil,
				tracing.RejectionsKey:         nil,
				tracing.NominatedNodeKey:      nil,
				tracing.VictimsCountKey:       nil,
				tracing.FailedPointKey:        nil,
				tracing.ScoringSkippedKey:     nil,
				tracing.MessageKey:            nil,
				tracing.PreviousAttemptKey:    nil,
				tracing.NotEvaluatedReasonKey: nil,
			},
			wantRootStatus: codes.Unset,
			wantStatus:     map[string]codes.Code{"Filter": codes.Unset, "Bind": codes.Unset},
			wantEvents: map[string][]string{
				"Filter":          {"plugin", "plugin"},
				"Score":           {"plugin", "plugin", "node.score", "node.score", "node.score"},
				"Bind":            {"plugin"},
				"SchedulingCycle": nil,
			},
			wantDuration: map[string]time.Duration{
				attempt: ms(12.5), "QueueWait": ms(5), "SchedulingCycle": ms(3), "BindingCycle": ms(4), "Bind": ms(3),
			},
		},
		{
			name:     "unschedulable",
			rec:      unschedulableRecord("web-2", "uid-2"),
			wantTree: unschedulableTree,
			wantRoot: map[attribute.Key]any{
				"k8s.pod.name":            "web-2",
				"k8s.node.name":           nil,
				tracing.ResultKey:         "unschedulable",
				"error.type":              "unschedulable",
				tracing.FailedPointKey:    "Filter",
				tracing.RejectionsKey:     []string{"TaintToleration=3", "NodeResourcesFit=2"},
				tracing.NodesTotalKey:     int64(5),
				tracing.NodesEvaluatedKey: int64(5),
				tracing.NodesFeasibleKey:  int64(0),
				tracing.NominatedNodeKey:  nil,
			},
			wantRootStatus: codes.Error,
			wantStatus:     map[string]codes.Code{"PreFilter": codes.Unset, "Filter": codes.Error, "PostFilter": codes.Error},
			wantEvents: map[string][]string{
				"Filter":     {"plugin", "plugin", "nodes.rejected", "nodes.rejected"},
				"PostFilter": {"plugin"},
			},
			wantDuration: map[string]time.Duration{attempt: ms(4), "SchedulingCycle": ms(2), "Filter": ms(1)},
		},
		{
			name:     "preempting",
			rec:      preemptingRecord("web-3", "uid-3"),
			wantTree: unschedulableTree,
			wantRoot: map[attribute.Key]any{
				tracing.ResultKey:        "unschedulable",
				tracing.NominatedNodeKey: "node-4",
				tracing.VictimsCountKey:  int64(2),
				tracing.VictimsKey:       []string{"default/low-1", "batch/low-2"},
				tracing.RejectionsKey:    []string{"TaintToleration=3", "NodeResourcesFit=2"},
			},
			wantRootStatus: codes.Error,
			wantStatus:     map[string]codes.Code{"Filter": codes.Error, "PostFilter": codes.Unset},
		},
		{
			name:     "permit waiting",
			rec:      permitWaitingRecord("web-4", "uid-4"),
			wantTree: scheduledTree,
			wantRoot: map[attribute.Key]any{
				tracing.ResultKey:  "scheduled",
				"k8s.node.name":    "node-2",
				tracing.LatencyKey: (1500*time.Millisecond + ms(7.49)).Seconds(),
			},
			wantRootStatus: codes.Unset,
			wantStatus:     map[string]codes.Code{"Permit": codes.Unset, "WaitOnPermit": codes.Unset},
			wantEvents:     map[string][]string{"Permit": {"plugin"}, "WaitOnPermit": nil},
			wantDuration: map[string]time.Duration{
				"WaitOnPermit": 1500 * time.Millisecond,
				"BindingCycle": 1500*time.Millisecond + ms(3.99),
			},
		},
		{
			name:     "shadowed: a span per shadow run, within the scheduling cycle",
			rec:      shadowedRecord("web-6", "uid-6"),
			wantTree: shadowedTree,
			wantRoot: map[attribute.Key]any{
				tracing.ResultKey: "scheduled",
				"k8s.node.name":   "node-2",
			},
			wantRootStatus: codes.Unset,
			wantStatus:     map[string]codes.Code{"ShadowRun": codes.Unset},
			wantEvents:     map[string][]string{"ShadowRun": nil, "SchedulingCycle": nil},
			wantDuration:   map[string]time.Duration{"ShadowRun": ms(0.2), "SchedulingCycle": ms(3)},
		},
		{
			name:     "bind failure",
			rec:      bindFailureRecord("web-5", "uid-5"),
			wantTree: append(slices.Clone(scheduledTree[:len(scheduledTree)-1]), binding+"/Unreserve"),
			wantRoot: map[attribute.Key]any{
				tracing.ResultKey:      "error",
				"error.type":           "error",
				tracing.FailedPointKey: "Bind",
				tracing.PluginKey:      "DefaultBinder",
				tracing.MessageKey:     `binding rejected: pods "web" is forbidden`,
			},
			wantRootStatus: codes.Error,
			wantStatus:     map[string]codes.Code{"Bind": codes.Error, "Unreserve": codes.Unset, "BindingCycle": codes.Unset},
			wantEvents:     map[string][]string{"Bind": {"plugin"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, sr := newRecordingTracer(t, 1_000_000, 0)
			traceID := tr.Trace(podOf(tt.rec, nil), tt.rec)
			assertAllEnded(t, sr)
			spans := sr.Ended()
			if diff := cmp.Diff(tt.wantTree, tree(spans)); diff != "" {
				t.Errorf("span tree (-want +got):\n%s", diff)
			}
			root := spanNamed(t, spans, attempt)
			if got := root.SpanContext().TraceID().String(); got != traceID {
				t.Errorf("Trace returned %q, root span is in trace %q", traceID, got)
			}
			for _, s := range spans {
				if s.SpanContext().TraceID() != root.SpanContext().TraceID() {
					t.Errorf("span %q is in another trace", s.Name())
				}
			}
			// A nil want value asserts the attribute is absent.
			want := map[attribute.Key]any{}
			for k, v := range tt.wantRoot {
				if v != nil {
					want[k] = v
				}
			}
			if diff := cmp.Diff(want, subset(attrs(root.Attributes()), tt.wantRoot)); diff != "" {
				t.Errorf("root attributes (-want +got):\n%s", diff)
			}
			if got := root.Status().Code; got != tt.wantRootStatus {
				t.Errorf("root status = %v, want %v", got, tt.wantRootStatus)
			}
			for name, want := range tt.wantStatus {
				if got := spanNamed(t, spans, name).Status().Code; got != want {
					t.Errorf("span %s status = %v, want %v", name, got, want)
				}
			}
			for name, want := range tt.wantEvents {
				if diff := cmp.Diff(want, eventNames(spanNamed(t, spans, name))); diff != "" {
					t.Errorf("span %s events (-want +got):\n%s", name, diff)
				}
			}
			for name, want := range tt.wantDuration {
				s := spanNamed(t, spans, name)
				if got := s.EndTime().Sub(s.StartTime()); got != want {
					t.Errorf("span %s lasted %v, want %v", name, got, want)
				}
			}
			// Every span lies within the root.
			for _, s := range spans {
				if s.StartTime().Before(root.StartTime()) || s.EndTime().After(root.EndTime()) {
					t.Errorf("span %s [%v, %v] lies outside the attempt [%v, %v]", s.Name(),
						s.StartTime(), s.EndTime(), root.StartTime(), root.EndTime())
				}
			}
		})
	}
}

// TestTraceDetail checks the per-node and per-plugin detail carried by
// events: rejection groups, top scores and plugin totals.
func TestTraceDetail(t *testing.T) {
	tr, sr := newRecordingTracer(t, 1_000_000, 0)
	rec := unschedulableRecord("web", "uid")
	tr.Trace(podOf(rec, nil), rec)
	rec = scheduledRecord("web", "uid")
	tr.Trace(podOf(rec, nil), rec)

	var filterEvents, scoreEvents []map[attribute.Key]any
	for _, s := range sr.Ended() {
		for _, e := range s.Events() {
			switch {
			case s.Name() == "Filter" && e.Name == tracing.EventNodesRejected:
				filterEvents = append(filterEvents, attrs(e.Attributes))
			case s.Name() == "Score":
				scoreEvents = append(scoreEvents, attrs(e.Attributes))
			}
		}
	}
	wantFilter := []map[attribute.Key]any{
		{
			tracing.NodeCountKey:   int64(3),
			tracing.NodesSampleKey: []string{"node-1", "node-2", "node-3"},
			tracing.PluginKey:      "TaintToleration",
			tracing.CodeKey:        "UnschedulableAndUnresolvable",
			tracing.ReasonsKey:     []string{"node(s) had untolerated taint {dedicated: gpu}"},
		},
		{
			tracing.NodeCountKey:   int64(2),
			tracing.NodesSampleKey: []string{"node-4", "node-5"},
			tracing.PluginKey:      "NodeResourcesFit",
			tracing.CodeKey:        "Unschedulable",
			tracing.ReasonsKey:     []string{"Insufficient cpu"},
		},
	}
	if diff := cmp.Diff(wantFilter, filterEvents); diff != "" {
		t.Errorf("Filter rejection events (-want +got):\n%s", diff)
	}
	wantScore := []map[attribute.Key]any{
		{tracing.PluginKey: "NodeResourcesFit", tracing.PluginDurationKey: 0.0005, tracing.PluginCallsKey: int64(3)},
		{tracing.PluginKey: "ImageLocality", tracing.PluginDurationKey: 0.0004, tracing.PluginCallsKey: int64(3)},
		{"k8s.node.name": "node-2", tracing.ScoreRankKey: int64(1), tracing.ScoreTotalKey: int64(150),
			tracing.ScorePluginsKey: []string{"NodeResourcesFit=90", "ImageLocality=60"}},
		{"k8s.node.name": "node-1", tracing.ScoreRankKey: int64(2), tracing.ScoreTotalKey: int64(120),
			tracing.ScorePluginsKey: []string{"NodeResourcesFit=70", "ImageLocality=50"}},
		{"k8s.node.name": "node-3", tracing.ScoreRankKey: int64(3), tracing.ScoreTotalKey: int64(90),
			tracing.ScorePluginsKey: []string{"NodeResourcesFit=60", "ImageLocality=30"}},
	}
	if diff := cmp.Diff(wantScore, scoreEvents); diff != "" {
		t.Errorf("Score events (-want +got):\n%s", diff)
	}
}

// TestTraceShadowRunWithoutAttempt checks that a shadow run whose record
// holds no attempt of its own gets an empty span at the end of the
// scheduling cycle, with its profile and outcome.
func TestTraceShadowRunWithoutAttempt(t *testing.T) {
	tr, sr := newRecordingTracer(t, 1_000_000, 0)
	rec := shadowedRecord("web", "uid")
	rec.Shadows = []record.ShadowRun{{Profile: "binpack", Outcome: record.ShadowNotCompared, NotComparedReason: record.NotComparedLiveError}}
	tr.Trace(podOf(rec, nil), rec)
	assertAllEnded(t, sr)
	s := spanNamed(t, sr.Ended(), tracing.SpanShadowRun)
	cycleEnd := rec.Timing.Started.Add(rec.Timing.SchedulingCycle)
	if !s.StartTime().Equal(cycleEnd) || !s.EndTime().Equal(cycleEnd) {
		t.Errorf("span %s [%v, %v], want empty at the cycle's end %v", s.Name(), s.StartTime(), s.EndTime(), cycleEnd)
	}
	want := map[attribute.Key]any{
		tracing.ShadowProfileKey:           "binpack",
		tracing.ShadowOutcomeKey:           "notCompared",
		tracing.ShadowNotComparedReasonKey: "the live attempt ended in an error",
	}
	if diff := cmp.Diff(want, attrs(s.Attributes())); diff != "" {
		t.Errorf("span %s attributes (-want +got):\n%s", s.Name(), diff)
	}
}

func TestTraceparentAnnotation(t *testing.T) {
	const (
		parentTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		parentSpan  = "00f067aa0ba902b7"
	)
	tests := []struct {
		name          string
		role          tracing.TraceparentRole
		annotation    string
		wantLink      bool
		wantParent    bool
		wantMalformed uint64
	}{
		{name: "valid traceparent is linked, in a trace of the scheduler's", annotation: "00-" + parentTrace + "-" + parentSpan + "-01", wantLink: true},
		{name: "as parent: valid traceparent joins the trace", role: tracing.TraceparentParent, annotation: "00-" + parentTrace + "-" + parentSpan + "-01", wantParent: true},
		{name: "malformed traceparent starts a new trace and is counted", annotation: "00-not-a-trace-01", wantMalformed: 1},
		{name: "as parent: malformed traceparent starts a new trace and is counted", role: tracing.TraceparentParent, annotation: "00-not-a-trace-01", wantMalformed: 1},
		{name: "all-zero trace ID is malformed", annotation: "00-00000000000000000000000000000000-" + parentSpan + "-01", wantMalformed: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, sr := newTracerWith(t, 1_000_000, tracing.Options{Traceparent: tt.role})
			rec := scheduledRecord("web", "uid")
			traceID := tr.Trace(podOf(rec, map[string]string{tracing.TraceparentAnnotation: tt.annotation}), rec)
			assertAllEnded(t, sr)
			root := spanNamed(t, sr.Ended(), attempt)
			parent := root.Parent()
			if got := parent.IsValid(); got != tt.wantParent {
				t.Fatalf("root has a parent: %v, want %v", got, tt.wantParent)
			}
			links := root.Links()
			if got := len(links) == 1; got != tt.wantLink || len(links) > 1 {
				t.Fatalf("root has links %v, want the caller's: %v", links, tt.wantLink)
			}
			if tt.wantLink {
				caller := links[0].SpanContext
				if caller.TraceID().String() != parentTrace || caller.SpanID().String() != parentSpan || !caller.IsRemote() {
					t.Errorf("root links to %s/%s remote=%v, want %s/%s remote", caller.TraceID(), caller.SpanID(), caller.IsRemote(), parentTrace, parentSpan)
				}
				if diff := cmp.Diff(map[attribute.Key]any{tracing.CallerKey: true}, attrs(links[0].Attributes)); diff != "" {
					t.Errorf("caller link attributes (-want +got):\n%s", diff)
				}
			}
			if tt.wantParent {
				if parent.TraceID().String() != parentTrace || parent.SpanID().String() != parentSpan || !parent.IsRemote() {
					t.Errorf("root parent = %s/%s remote=%v, want %s/%s remote", parent.TraceID(), parent.SpanID(), parent.IsRemote(), parentTrace, parentSpan)
				}
				if traceID != parentTrace {
					t.Errorf("Trace returned %q, want the caller's trace %q", traceID, parentTrace)
				}
			} else if traceID == "" || traceID == parentTrace {
				t.Errorf("Trace returned %q, want a new trace", traceID)
			}
			if got := tr.MalformedTraceparents(); got != tt.wantMalformed {
				t.Errorf("MalformedTraceparents() = %d, want %d", got, tt.wantMalformed)
			}
		})
	}
}

// TestCraftedTraceparentNotFavoured traces many attempts of pods whose
// traceparent has a trace ID crafted to pass a trace-ID ratio sampler (its
// low 8 bytes zero) at a low rate: they are sampled at the rate, as pods
// without a traceparent are, and never in the caller's trace unless it is
// made the parent.
func TestCraftedTraceparentNotFavoured(t *testing.T) {
	const (
		crafted  = "00-4bf92f3577b34da60000000000000000-00f067aa0ba902b7-01"
		attempts = 20000
		rate     = 10_000 // 1%: 200 expected, with a standard deviation of 14
	)
	for _, role := range []tracing.TraceparentRole{tracing.TraceparentLink, tracing.TraceparentParent} {
		for _, annotation := range []string{crafted, ""} {
			t.Run(fmt.Sprintf("%s/traceparent=%q", role, annotation), func(t *testing.T) {
				tr, sr := newTracerWith(t, rate, tracing.Options{Traceparent: role})
				var annotations map[string]string
				if annotation != "" {
					annotations = map[string]string{tracing.TraceparentAnnotation: annotation}
				}
				sampled := 0
				for i := range attempts {
					rec := scheduledRecord("web", fmt.Sprintf("uid-%d", i))
					id := tr.Trace(podOf(rec, annotations), rec)
					if id == "" {
						continue
					}
					sampled++
					if wantCaller := role == tracing.TraceparentParent && annotation != ""; (id == "4bf92f3577b34da60000000000000000") != wantCaller {
						t.Fatalf("attempt %d traced in %s; in the caller's trace: %v", i, id, wantCaller)
					}
				}
				// Six standard deviations either side of the expected 200.
				if sampled < 115 || sampled > 285 {
					t.Errorf("%d of %d attempts sampled at %d per million, want about %d", sampled, attempts, rate, attempts*rate/1_000_000)
				}
				assertAllEnded(t, sr)
			})
		}
	}
}

func TestTraceLinksPreviousAttempt(t *testing.T) {
	tr, sr := newRecordingTracer(t, 1_000_000, 0)
	first := unschedulableRecord("web", "uid-a")
	second := unschedulableRecord("web", "uid-a")
	second.Attempt = 2
	third := scheduledRecord("web", "uid-a")
	third.Attempt = 3
	other := scheduledRecord("db", "uid-b")

	var ids []string
	for _, rec := range []*record.Attempt{first, other, second, third} {
		ids = append(ids, tr.Trace(podOf(rec, nil), rec))
	}
	roots := map[int]sdktrace.ReadOnlySpan{}
	var otherRoot sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if s.Name() != attempt {
			continue
		}
		if attrs(s.Attributes())["k8s.pod.uid"] == "uid-b" {
			otherRoot = s
			continue
		}
		roots[int(attrs(s.Attributes())[tracing.AttemptKey].(int64))] = s
	}
	if len(roots) != 3 || otherRoot == nil {
		t.Fatalf("got roots of attempts %v and other pod %v", roots, otherRoot)
	}
	if got := roots[1].Links(); len(got) != 0 {
		t.Errorf("first attempt has links %v, want none", got)
	}
	if got := otherRoot.Links(); len(got) != 0 {
		t.Errorf("another pod's attempt has links %v, want none", got)
	}
	for n := 2; n <= 3; n++ {
		links := roots[n].Links()
		if len(links) != 1 {
			t.Fatalf("attempt %d has %d links, want 1", n, len(links))
		}
		if got, want := links[0].SpanContext, roots[n-1].SpanContext(); !got.Equal(want) {
			t.Errorf("attempt %d links to %v, want attempt %d's root %v", n, got, n-1, want)
		}
		if diff := cmp.Diff(map[attribute.Key]any{tracing.PreviousAttemptKey: int64(n - 1)}, attrs(links[0].Attributes)); diff != "" {
			t.Errorf("attempt %d link attributes (-want +got):\n%s", n, diff)
		}
		if roots[n].SpanContext().TraceID() == roots[n-1].SpanContext().TraceID() {
			t.Errorf("attempts %d and %d share a trace; want one trace per attempt", n-1, n)
		}
	}
	if slices.Contains(ids, "") {
		t.Errorf("Trace returned trace IDs %q, want all sampled", ids)
	}
}

func TestSampling(t *testing.T) {
	slow := scheduledRecord("slow", "uid-slow")
	slow.Timing.Finished = slow.Timing.Started.Add(1500 * time.Millisecond)
	slow.Timing.BindingCycle = 1500*time.Millisecond - slow.Timing.SchedulingCycle
	// A long queue wait alone does not make an attempt slow.
	queued := scheduledRecord("queued", "uid-queued")
	queued.Timing.Queued = queued.Timing.Started.Add(-time.Hour)
	queued.Timing.QueueWait = time.Hour

	tests := []struct {
		name        string
		rate        int32
		rec         *record.Attempt
		wantSampled bool
	}{
		{name: "rate 0: scheduled attempt not sampled", rate: 0, rec: scheduledRecord("web", "uid"), wantSampled: false},
		{name: "rate 0: long queue wait not sampled", rate: 0, rec: queued, wantSampled: false},
		{name: "rate 0: unschedulable attempt sampled", rate: 0, rec: unschedulableRecord("web", "uid"), wantSampled: true},
		{name: "rate 0: error attempt sampled", rate: 0, rec: bindFailureRecord("web", "uid"), wantSampled: true},
		{name: "rate 0: slow attempt sampled", rate: 0, rec: slow, wantSampled: true},
		{name: "rate 1e6: scheduled attempt sampled", rate: 1_000_000, rec: scheduledRecord("web", "uid"), wantSampled: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, sr := newRecordingTracer(t, tt.rate, time.Second)
			traceID := tr.Trace(podOf(tt.rec, nil), tt.rec)
			assertAllEnded(t, sr)
			if got := traceID != ""; got != tt.wantSampled {
				t.Fatalf("Trace returned %q; sampled = %v, want %v", traceID, got, tt.wantSampled)
			}
			spans := sr.Ended()
			if !tt.wantSampled {
				if len(spans) != 0 {
					t.Errorf("recorded %d spans of an unsampled attempt", len(spans))
				}
				return
			}
			// Children follow the root's decision: the whole tree is there.
			if len(spans) != 1+len(tt.rec.Points)+2+boolInt(tt.rec.Timing.BindingCycle > 0) {
				t.Errorf("recorded spans %v, want the whole attempt", tree(spans))
			}
			for _, s := range spans {
				if !s.SpanContext().IsSampled() {
					t.Errorf("span %s is not sampled", s.Name())
				}
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestSamplerRemoteParent checks that a pod's traceparent decides whether
// its attempts are traced only when the scheduler is told to follow it;
// otherwise the rate decides, whatever the annotation's sampled flag.
func TestSamplerRemoteParent(t *testing.T) {
	const (
		sampled    = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		notSampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
	)
	tests := []struct {
		name       string
		rate       int32
		role       tracing.TraceparentRole
		follow     bool
		annotation string
		want       bool
	}{
		{name: "sampled flag ignored at rate 0", rate: 0, annotation: sampled, want: false},
		{name: "unsampled flag ignored at rate 100%", rate: 1_000_000, annotation: notSampled, want: true},
		{name: "as parent: sampled flag ignored at rate 0", rate: 0, role: tracing.TraceparentParent, annotation: sampled, want: false},
		{name: "as parent: unsampled flag ignored at rate 100%", rate: 1_000_000, role: tracing.TraceparentParent, annotation: notSampled, want: true},
		{name: "followed: sampled flag traces at rate 0", rate: 0, role: tracing.TraceparentParent, follow: true, annotation: sampled, want: true},
		{name: "followed: unsampled flag skips at rate 100%", rate: 1_000_000, role: tracing.TraceparentParent, follow: true, annotation: notSampled, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, sr := newTracerWith(t, tt.rate, tracing.Options{SlowThreshold: time.Second, Traceparent: tt.role, FollowTraceparentSampling: tt.follow})
			rec := scheduledRecord("web", "uid")
			got := tr.Trace(podOf(rec, map[string]string{tracing.TraceparentAnnotation: tt.annotation}), rec)
			if (got != "") != tt.want {
				t.Errorf("traced: %v (trace %q), want %v", got != "", got, tt.want)
			}
			if !tt.want && len(sr.Ended()) != 0 {
				t.Errorf("%d spans recorded for an unsampled attempt", len(sr.Ended()))
			}
		})
	}
}

// TestTraceparentOptionsValidated checks that an unknown traceparent role
// is refused, and that following a traceparent's sampled flag is unless the
// traceparent is the parent.
func TestTraceparentOptionsValidated(t *testing.T) {
	rate := int32(0)
	for _, tt := range []struct {
		name    string
		opts    tracing.Options
		wantErr string
	}{
		{name: "link", opts: tracing.Options{Traceparent: tracing.TraceparentLink}},
		{name: "parent, followed", opts: tracing.Options{Traceparent: tracing.TraceparentParent, FollowTraceparentSampling: true}},
		{name: "unknown role", opts: tracing.Options{Traceparent: "child"}, wantErr: `traceparent: Unsupported value: "child"`},
		{name: "followed as a link", opts: tracing.Options{FollowTraceparentSampling: true}, wantErr: "needs traceparent: parent"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.TracerProvider = sdktrace.NewTracerProvider()
			_, err := tracing.New(context.Background(), &tracingapi.TracingConfiguration{SamplingRatePerMillion: &rate}, tt.opts)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("New: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("New: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestNilTracer(t *testing.T) {
	tr, err := tracing.New(context.Background(), nil, tracing.Options{})
	if err != nil || tr != nil {
		t.Fatalf("New(nil config) = %v, %v; want nil, nil", tr, err)
	}
	rec := scheduledRecord("web", "uid")
	if got := tr.Trace(podOf(rec, nil), rec); got != "" {
		t.Errorf("nil Tracer returned trace ID %q", got)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Errorf("nil Tracer Shutdown: %v", err)
	}
	if tr.DroppedSpans() != 0 || tr.MalformedTraceparents() != 0 {
		t.Errorf("nil Tracer counts non-zero")
	}
}
