package tracing_test

import (
	"context"
	"encoding/hex"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/util/wait"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"k8s.io/utils/ptr"

	"github.com/schedscope/schedscope/pkg/scheduler/tracing"
)

// receiver is an OTLP gRPC trace receiver that keeps what it receives.
type receiver struct {
	collectortrace.UnimplementedTraceServiceServer

	mu       sync.Mutex
	resource []*commonpb.KeyValue
	spans    []*tracepb.Span
	scopes   []string
}

func (r *receiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		r.resource = rs.GetResource().GetAttributes()
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, s)
				r.scopes = append(r.scopes, ss.GetScope().GetName())
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func (r *receiver) received() ([]*commonpb.KeyValue, []*tracepb.Span, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.resource, slices.Clone(r.spans), slices.Clone(r.scopes)
}

// startReceiver serves a receiver on a loopback port until the test ends.
func startReceiver(t *testing.T, opts ...grpc.ServerOption) (*receiver, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{}
	srv := grpc.NewServer(opts...)
	collectortrace.RegisterTraceServiceServer(srv, r)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return r, lis.Addr().String()
}

func otlpAttrs(kvs []*commonpb.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = v.IntValue
		case *commonpb.AnyValue_DoubleValue:
			m[kv.GetKey()] = v.DoubleValue
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = v.BoolValue
		case *commonpb.AnyValue_ArrayValue:
			var s []string
			for _, e := range v.ArrayValue.GetValues() {
				s = append(s, e.GetStringValue())
			}
			m[kv.GetKey()] = s
		}
	}
	return m
}

// TestOTLPReceiver exports over real OTLP gRPC to an in-process receiver.
func TestOTLPReceiver(t *testing.T) {
	r, endpoint := startReceiver(t)
	ctx := context.Background()
	tr, err := tracing.New(ctx, &tracingapi.TracingConfiguration{
		Endpoint: &endpoint, SamplingRatePerMillion: ptr.To[int32](1_000_000),
	}, tracing.Options{Profiles: []string{"default-scheduler"}, Version: "v0.1.0"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer func() {
		if err := tr.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}()
	scheduled := scheduledRecord("web-1", "uid-1")
	scheduledID := tr.Trace(podOf(scheduled, nil), scheduled)
	unschedulable := unschedulableRecord("web-2", "uid-2")
	unschedulableID := tr.Trace(podOf(unschedulable, nil), unschedulable)
	shadowed := shadowedRecord("web-3", "uid-3")
	shadowedID := tr.Trace(podOf(shadowed, nil), shadowed)
	if err := tr.ForceFlush(ctx); err != nil {
		t.Fatalf("ForceFlush: %v", err)
	}
	wantSpans := len(scheduledTree) + len(unschedulableTree) + len(shadowedTree)
	var spans []*tracepb.Span
	var resource []*commonpb.KeyValue
	var scopes []string
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		resource, spans, scopes = r.received()
		return len(spans) >= wantSpans, nil
	}); err != nil {
		t.Fatalf("received %d spans, want %d: %v", len(spans), wantSpans, err)
	}

	wantResource := map[string]any{
		"service.name":        "schedscope-scheduler",
		"service.version":     "v0.1.0",
		"schedscope.profiles": []string{"default-scheduler"},
	}
	gotResource := otlpAttrs(resource)
	for k := range gotResource {
		if _, ok := wantResource[k]; !ok {
			delete(gotResource, k)
		}
	}
	if diff := cmp.Diff(wantResource, gotResource); diff != "" {
		t.Errorf("resource (-want +got):\n%s", diff)
	}
	for _, s := range scopes {
		if s != tracing.ScopeName {
			t.Errorf("span of scope %q, want %q", s, tracing.ScopeName)
		}
	}

	byTrace := map[string][]*tracepb.Span{}
	for _, s := range spans {
		id := hex.EncodeToString(s.GetTraceId())
		byTrace[id] = append(byTrace[id], s)
	}
	for _, tc := range []struct {
		pod, traceID string
		wantTree     []string
		wantRoot     map[string]any
		// wantShadowRuns are the attributes of the ShadowRun spans, in
		// start order.
		wantShadowRuns []map[string]any
	}{
		{
			pod: "web-1", traceID: scheduledID, wantTree: scheduledTree,
			wantRoot: map[string]any{"k8s.pod.name": "web-1", "k8s.node.name": "node-2", "schedscope.result": "scheduled"},
		},
		{
			pod: "web-2", traceID: unschedulableID, wantTree: unschedulableTree,
			wantRoot: map[string]any{"k8s.pod.name": "web-2", "schedscope.result": "unschedulable",
				"schedscope.rejections": []string{"TaintToleration=3", "NodeResourcesFit=2"}},
		},
		{
			pod: "web-3", traceID: shadowedID, wantTree: shadowedTree,
			wantRoot: map[string]any{"k8s.pod.name": "web-3", "k8s.node.name": "node-2", "schedscope.result": "scheduled"},
			wantShadowRuns: []map[string]any{
				{"schedscope.shadow.profile": "binpack", "schedscope.shadow.outcome": "otherNode", "schedscope.shadow.node": "node-1"},
				{"schedscope.shadow.profile": "spread", "schedscope.shadow.outcome": "notCompared",
					"schedscope.shadow.not_compared_reason": "the cluster snapshot changed during the shadow's run"},
			},
		},
	} {
		got := byTrace[tc.traceID]
		if diff := cmp.Diff(tc.wantTree, otlpTree(got)); diff != "" {
			t.Errorf("pod %s: received spans (-want +got):\n%s", tc.pod, diff)
		}
		var shadowRuns []*tracepb.Span
		for _, s := range got {
			if s.GetName() == tracing.SpanShadowRun {
				shadowRuns = append(shadowRuns, s)
			}
		}
		slices.SortStableFunc(shadowRuns, func(a, b *tracepb.Span) int {
			return time.Unix(0, int64(a.GetStartTimeUnixNano())).Compare(time.Unix(0, int64(b.GetStartTimeUnixNano())))
		})
		var gotShadowRuns []map[string]any
		for _, s := range shadowRuns {
			gotShadowRuns = append(gotShadowRuns, otlpAttrs(s.GetAttributes()))
		}
		if diff := cmp.Diff(tc.wantShadowRuns, gotShadowRuns); diff != "" {
			t.Errorf("pod %s: ShadowRun spans' attributes (-want +got):\n%s", tc.pod, diff)
		}
		for _, s := range got {
			if s.GetName() != tracing.SpanAttempt {
				continue
			}
			gotRoot := otlpAttrs(s.GetAttributes())
			for k := range gotRoot {
				if _, ok := tc.wantRoot[k]; !ok {
					delete(gotRoot, k)
				}
			}
			if diff := cmp.Diff(tc.wantRoot, gotRoot); diff != "" {
				t.Errorf("pod %s: root attributes (-want +got):\n%s", tc.pod, diff)
			}
		}
	}
	if tr.FailedSpans() != 0 || tr.DroppedSpans() != 0 {
		t.Errorf("FailedSpans() = %d, DroppedSpans() = %d, want 0", tr.FailedSpans(), tr.DroppedSpans())
	}
}

// otlpTree lists OTLP spans as paths of names from their root, in start
// order.
func otlpTree(spans []*tracepb.Span) []string {
	byID := map[string]*tracepb.Span{}
	for _, s := range spans {
		byID[string(s.GetSpanId())] = s
	}
	type entry struct {
		start uint64
		path  string
	}
	var entries []entry
	for _, s := range spans {
		path := s.GetName()
		for p, ok := byID[string(s.GetParentSpanId())]; ok; p, ok = byID[string(p.GetParentSpanId())] {
			path = p.GetName() + "/" + path
		}
		entries = append(entries, entry{s.GetStartTimeUnixNano(), path})
	}
	slices.SortStableFunc(entries, func(a, b entry) int {
		if a.start != b.start {
			if a.start < b.start {
				return -1
			}
			return 1
		}
		switch {
		case a.path < b.path:
			return -1
		case a.path > b.path:
			return 1
		}
		return 0
	})
	paths := make([]string, len(entries))
	for i, e := range entries {
		paths[i] = e.path
	}
	return paths
}
