package tracing_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"k8s.io/utils/ptr"

	"github.com/schedscope/schedscope/pkg/scheduler/tracing"
)

// TestNewExportsThroughQueue drives the whole pipeline New builds, with an
// in-memory exporter in place of OTLP: sampler, queue, resource.
func TestNewExportsThroughQueue(t *testing.T) {
	ctx := context.Background()
	exp := tracetest.NewInMemoryExporter()
	tr, err := tracing.New(ctx, &tracingapi.TracingConfiguration{SamplingRatePerMillion: ptr.To[int32](0)},
		tracing.Options{Exporter: exp, Profiles: []string{"default-scheduler", "gpu"}, Version: "v0.1.0"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	scheduled := scheduledRecord("web", "uid-1")
	if id := tr.Trace(podOf(scheduled, nil), scheduled); id != "" {
		t.Errorf("scheduled attempt sampled at rate 0: %q", id)
	}
	unschedulable := unschedulableRecord("db", "uid-2")
	id := tr.Trace(podOf(unschedulable, nil), unschedulable)
	if id == "" {
		t.Fatalf("unschedulable attempt not sampled")
	}
	if err := tr.ForceFlush(ctx); err != nil {
		t.Fatalf("ForceFlush: %v", err)
	}
	spans := exp.GetSpans()
	if diff := cmp.Diff(unschedulableTree, tree(spans.Snapshots())); diff != "" {
		t.Errorf("exported spans (-want +got):\n%s", diff)
	}
	for _, s := range spans {
		if s.SpanContext.TraceID().String() != id {
			t.Errorf("span %s in trace %s, want %s", s.Name, s.SpanContext.TraceID(), id)
		}
		if s.InstrumentationScope.Name != tracing.ScopeName || s.InstrumentationScope.Version != "v0.1.0" {
			t.Errorf("span %s has scope %+v", s.Name, s.InstrumentationScope)
		}
	}
	if len(spans) > 0 {
		res := attrs(spans[0].Resource.Attributes())
		want := map[attribute.Key]any{
			"service.name":      "schedscope-scheduler",
			"service.version":   "v0.1.0",
			tracing.ProfilesKey: []string{"default-scheduler", "gpu"},
		}
		if diff := cmp.Diff(want, subset(res, want)); diff != "" {
			t.Errorf("resource (-want +got):\n%s", diff)
		}
		if res["host.name"] == nil {
			t.Errorf("resource has no host.name: %v", res)
		}
	}
	if err := tr.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if got := tr.DroppedSpans(); got != 0 {
		t.Errorf("DroppedSpans() = %d before Shutdown, want 0", got)
	}
	// Nothing is traced after Shutdown.
	exported := len(exp.GetSpans())
	if id := tr.Trace(podOf(unschedulable, nil), unschedulable); id != "" {
		t.Errorf("Trace after Shutdown returned %q, want \"\"", id)
	}
	if got := len(exp.GetSpans()); got != exported {
		t.Errorf("%d spans exported after Shutdown", got-exported)
	}
}

// blockingExporter never finishes an export before its context ends.
type blockingExporter struct{ calls chan struct{} }

func (e *blockingExporter) ExportSpans(ctx context.Context, _ []sdktrace.ReadOnlySpan) error {
	select {
	case e.calls <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return ctx.Err()
}

func (e *blockingExporter) Shutdown(context.Context) error { return nil }

// TestStuckExporterDoesNotBlock checks that Trace returns and spans are
// dropped or never made, not queued without bound, while the exporter
// hangs, and that Shutdown gives up when its context ends.
func TestStuckExporterDoesNotBlock(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	exp := &blockingExporter{calls: make(chan struct{}, 1)}
	const queueSize = 16
	tr, err := tracing.New(context.Background(), &tracingapi.TracingConfiguration{SamplingRatePerMillion: ptr.To[int32](1_000_000)},
		tracing.Options{Exporter: exp, QueueSize: queueSize})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	rec := scheduledRecord("web", "uid")
	spansPerAttempt := uint64(len(rec.Points) + 4)
	const attempts = 1000
	traced := uint64(0)
	for range attempts {
		if tr.Trace(podOf(rec, nil), rec) != "" {
			traced++
		}
	}
	// At most one batch is in the exporter and queueSize spans wait; the
	// rest were dropped, or never made because the queue was full.
	const maxBatch = 512
	if skipped := tr.SkippedAttempts(); skipped != attempts-traced || skipped == 0 {
		t.Errorf("SkippedAttempts() = %d, want the %d attempts not traced, and some", skipped, attempts-traced)
	}
	if kept := traced*spansPerAttempt - tr.DroppedSpans(); kept > maxBatch+queueSize {
		t.Errorf("%d spans made, %d dropped: %d kept, want at most %d: the queue is not bounded", traced*spansPerAttempt, tr.DroppedSpans(), kept, maxBatch+queueSize)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := tr.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown with a stuck exporter = %v, want %v", err, context.DeadlineExceeded)
	}
}

// TestCollectorDown points the OTLP exporter at a closed loopback port.
func TestCollectorDown(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := lis.Addr().String()
	if err := lis.Close(); err != nil {
		t.Fatal(err)
	}
	tr, err := tracing.New(context.Background(), &tracingapi.TracingConfiguration{
		Endpoint: &endpoint, SamplingRatePerMillion: ptr.To[int32](1_000_000),
	}, tracing.Options{QueueSize: 64})
	if err != nil {
		t.Fatalf("New with an unreachable collector: %v", err)
	}
	traced := uint64(0)
	for i := range 1000 {
		rec := unschedulableRecord("web", "uid")
		rec.Attempt = i + 1
		if tr.Trace(podOf(rec, nil), rec) != "" {
			traced++
		}
	}
	if traced == 0 || tr.SkippedAttempts() != 1000-traced {
		t.Errorf("%d of 1000 attempts traced, SkippedAttempts() = %d: want the queue to fill, and every attempt after that skipped and counted", traced, tr.SkippedAttempts())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown: %v", err)
	}
}

// flakyExporter fails its exports while failing is set, and counts the
// spans of the others.
type flakyExporter struct {
	failing  atomic.Bool
	exported atomic.Int64
}

func (e *flakyExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.failing.Load() {
		return errors.New("collector unavailable")
	}
	e.exported.Add(int64(len(spans)))
	return nil
}

func (e *flakyExporter) Shutdown(context.Context) error { return nil }

// TestFailingExportsSkipTracesAndProbe checks that once an export fails,
// attempts are not traced (their spans could not be exported) except one a
// second, whose export finds the collector back; then every attempt is
// traced again.
func TestFailingExportsSkipTracesAndProbe(t *testing.T) {
	ctx := context.Background()
	exp := &flakyExporter{}
	exp.failing.Store(true)
	tr, err := tracing.New(ctx, &tracingapi.TracingConfiguration{SamplingRatePerMillion: ptr.To[int32](1_000_000)}, tracing.Options{Exporter: exp})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer func() { _ = tr.Shutdown(ctx) }()
	rec := scheduledRecord("web", "uid")
	trace := func() bool { return tr.Trace(podOf(rec, nil), rec) != "" }
	flush := func() {
		if err := tr.ForceFlush(ctx); err != nil {
			t.Fatalf("ForceFlush: %v", err)
		}
	}

	if !trace() {
		t.Fatal("the first attempt was not traced: no export has failed yet")
	}
	flush()
	if tr.FailedSpans() == 0 {
		t.Fatal("the export to the failing collector was not counted as failed")
	}
	for i := range 100 {
		if trace() {
			t.Fatalf("attempt %d after a failed export was traced, want it skipped", i+1)
		}
	}
	if got := tr.SkippedAttempts(); got != 100 {
		t.Errorf("SkippedAttempts() = %d, want 100", got)
	}

	// A second later one attempt is traced to probe the collector; it is
	// still down, so the next ones are skipped again.
	time.Sleep(1100 * time.Millisecond)
	if !trace() {
		t.Fatal("no attempt traced a second after the failed export: the collector is never probed")
	}
	if trace() {
		t.Error("two attempts traced in the same second while exports fail")
	}
	flush()

	// The collector is back: the next probe's export succeeds, and every
	// attempt is traced again.
	exp.failing.Store(false)
	time.Sleep(1100 * time.Millisecond)
	if !trace() {
		t.Fatal("no probe a second after the last failed export")
	}
	flush()
	for i := range 10 {
		if !trace() {
			t.Fatalf("attempt %d after a successful export was skipped", i+1)
		}
	}
	flush()
	if want := int64(11 * (len(rec.Points) + 4)); exp.exported.Load() != want {
		t.Errorf("%d spans exported once the collector was back, want %d (11 attempts)", exp.exported.Load(), want)
	}
}

// TestNewBoundsAttributeLength gives an attempt a message far longer than
// any span should carry: every exported string attribute stays within
// MaxAttributeLength.
func TestNewBoundsAttributeLength(t *testing.T) {
	ctx := context.Background()
	exp := tracetest.NewInMemoryExporter()
	tr, err := tracing.New(ctx, &tracingapi.TracingConfiguration{SamplingRatePerMillion: ptr.To[int32](1000000)}, tracing.Options{Exporter: exp})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer func() { _ = tr.Shutdown(ctx) }()
	rec := unschedulableRecord("huge", "uid-huge")
	rec.Message = strings.Repeat("node(s) had untolerated taint {x: y}. ", 10000)
	if id := tr.Trace(podOf(rec, nil), rec); id == "" {
		t.Fatal("attempt not sampled at 100%")
	}
	if err := tr.ForceFlush(ctx); err != nil {
		t.Fatalf("ForceFlush: %v", err)
	}
	var longest int
	for _, s := range exp.GetSpans() {
		for _, kv := range s.Attributes {
			if kv.Value.Type() == attribute.STRING {
				longest = max(longest, len(kv.Value.AsString()))
			}
		}
	}
	if longest != tracing.MaxAttributeLength {
		t.Errorf("longest string attribute is %d bytes, want it cut to %d", longest, tracing.MaxAttributeLength)
	}
}
