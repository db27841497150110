package tracing

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"k8s.io/component-base/version"
	"k8s.io/klog/v2"
	"k8s.io/utils/lru"

	"github.com/schedscope/schedscope/pkg/record"
)

const (
	// ScopeName is the instrumentation scope of schedscope's spans.
	ScopeName = "github.com/schedscope/schedscope/pkg/scheduler/tracing"
	// ServiceName is the service.name of the scheduler's traces.
	ServiceName = "schedscope-scheduler"
	// TraceparentAnnotation, set on a pod to a W3C traceparent
	// ("00-<trace-id>-<span-id>-<flags>"), links every scheduling attempt of
	// the pod to that span, e.g. to the span of the deployment tool that
	// created the pod; with the role TraceparentParent (Options.Traceparent)
	// the span is the attempt's parent instead. A malformed value is ignored.
	TraceparentAnnotation = "schedscope.io/traceparent"
)

// Defaults of Options.
const (
	DefaultSlowThreshold    = time.Second
	DefaultQueueSize        = 4096
	DefaultPreviousAttempts = 10000

	batchSize     = 512
	batchTimeout  = time.Second
	exportTimeout = 10 * time.Second
	// maxReconnectDelay bounds the wait between reconnections to a
	// collector that went away.
	maxReconnectDelay = 5 * time.Second
	// MaxAttributeLength bounds each string a span carries (attribute and
	// event values, each element of a list, status descriptions), in bytes:
	// pod data and plugin messages reach spans, and a span must stay small
	// whatever a pod carries. cut enforces it; the SDK's own limit, set to
	// it below, counts characters and only backs it up.
	MaxAttributeLength = 4096
)

// Options tune a Tracer. The zero value gives the defaults.
type Options struct {
	// SlowThreshold: an attempt that spent longer than this in the
	// scheduler (queue wait excluded) is always sampled. 0 means
	// DefaultSlowThreshold, a negative value turns the rule off.
	SlowThreshold time.Duration
	// QueueSize bounds the spans waiting for export; when it is full,
	// further spans are dropped and counted. 0 means DefaultQueueSize.
	QueueSize int
	// PreviousAttempts bounds the pods whose last traced attempt is
	// remembered, to link the next attempt to it. 0 means
	// DefaultPreviousAttempts.
	PreviousAttempts int
	// Traceparent is the role of a pod's TraceparentAnnotation,
	// Config.Traceparent. Empty means TraceparentLink.
	Traceparent TraceparentRole
	// FollowTraceparentSampling lets the sampled flag of a pod's
	// TraceparentAnnotation decide whether its attempts are traced, instead
	// of the sampling rate. It needs Traceparent TraceparentParent.
	FollowTraceparentSampling bool
	// Profiles are the scheduler's profile names, set on the resource.
	Profiles []string
	// Version is the service.version; empty means the binary's version.
	Version string
	// ClusterName is the resource's k8s.cluster.name; empty sets none.
	ClusterName string
	// InstanceID is the resource's service.instance.id; empty means a new
	// random UUID, so that each process is told apart.
	InstanceID string
	// Transport secures the connection to the collector.
	Transport Transport
	// Protocol is the OTLP protocol, Config.Protocol. Empty means the one
	// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or else OTEL_EXPORTER_OTLP_PROTOCOL
	// names, or else gRPC.
	Protocol Protocol

	// Exporter, if set, replaces the OTLP exporter; it still sits behind
	// the bounded queue.
	Exporter sdktrace.SpanExporter
	// TracerProvider, if set, replaces the whole pipeline: the Tracer
	// creates its spans there and neither samples, queues, exports nor shuts
	// it down. Give it NewSampler to keep schedscope's sampling rules.
	TracerProvider trace.TracerProvider
}

// Tracer turns finished scheduling attempts into traces. Its methods are
// safe for concurrent use, and a nil *Tracer traces nothing.
type Tracer struct {
	tracer     trace.Tracer
	provider   *sdktrace.TracerProvider
	queue      *queueProcessor
	propagator propagation.TextMapPropagator
	// asParent makes a pod's traceparent the parent of its attempts rather
	// than a link.
	asParent bool
	// previous maps a pod UID to the root span of its last traced attempt.
	previous *lru.Cache

	malformed atomic.Uint64
	skipped   atomic.Uint64
	shutdown  atomic.Bool
}

// previousAttempt is what a Tracer remembers of a pod's last traced attempt.
type previousAttempt struct {
	span    trace.SpanContext
	attempt int
}

// New returns a Tracer exporting over OTLP with cfg's sampling rate, to
// cfg's endpoint or the one the OTEL_EXPORTER_OTLP_* variables set. A nil
// cfg means tracing is off: New returns a nil Tracer.
func New(ctx context.Context, cfg *tracingapi.TracingConfiguration, opts Options) (*Tracer, error) {
	if cfg == nil {
		return nil, nil
	}
	if err := validateConfig(cfg); err != nil {
		return nil, fmt.Errorf("invalid tracing configuration: %w", err)
	}
	if opts.Traceparent == "" {
		opts.Traceparent = TraceparentLink
	}
	if err := validateTraceparentRole(opts.Traceparent, field.NewPath(traceparentField)); err != nil {
		return nil, fmt.Errorf("invalid tracing configuration: %w", err)
	}
	if opts.FollowTraceparentSampling && opts.Traceparent != TraceparentParent {
		return nil, fmt.Errorf("following the sampled flag of a pod's traceparent needs %s: %s in the tracing configuration", traceparentField, TraceparentParent)
	}
	if opts.SlowThreshold == 0 {
		opts.SlowThreshold = DefaultSlowThreshold
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.PreviousAttempts <= 0 {
		opts.PreviousAttempts = DefaultPreviousAttempts
	}
	if opts.Version == "" {
		opts.Version = version.Get().GitVersion
	}
	t := &Tracer{
		propagator: propagation.TraceContext{},
		asParent:   opts.Traceparent == TraceparentParent,
		previous:   lru.New(opts.PreviousAttempts),
	}
	provider := opts.TracerProvider
	if provider == nil {
		res, err := newResource(ctx, opts)
		if err != nil {
			return nil, err
		}
		exporter := opts.Exporter
		if exporter == nil {
			if exporter, err = newExporter(ctx, cfg, opts.Protocol, opts.Transport); err != nil {
				return nil, err
			}
		}
		logger := klog.LoggerWithName(klog.FromContext(ctx), "tracing")
		t.queue = newQueueProcessor(logger, exporter, opts.QueueSize, batchSize, batchTimeout, exportTimeout)
		limits := sdktrace.NewSpanLimits()
		limits.AttributeValueLengthLimit = MaxAttributeLength
		t.provider = sdktrace.NewTracerProvider(
			sdktrace.WithRawSpanLimits(limits),
			sdktrace.WithSampler(NewSampler(cfg.SamplingRatePerMillion, opts.SlowThreshold, opts.FollowTraceparentSampling)),
			sdktrace.WithSpanProcessor(t.queue),
			sdktrace.WithResource(res),
		)
		provider = t.provider
	}
	t.tracer = provider.Tracer(ScopeName, trace.WithInstrumentationVersion(opts.Version), trace.WithSchemaURL(semconv.SchemaURL))
	return t, nil
}

// Trace exports the spans of rec, an attempt of pod, and returns the trace
// ID, or "" when the attempt is not traced: not sampled, or skipped
// because its spans could not be exported (see SkippedAttempts). It never
// blocks on the collector. pod may be nil; it is read only for
// TraceparentAnnotation.
func (t *Tracer) Trace(pod *v1.Pod, rec *record.Attempt) string {
	if t == nil || rec == nil || t.shutdown.Load() {
		return ""
	}
	if t.queue != nil && !t.queue.Admit() {
		t.skipped.Add(1)
		return ""
	}
	ctx := context.Background()
	var links []trace.Link
	if caller := t.callerSpan(pod); caller.IsValid() {
		if t.asParent {
			ctx = trace.ContextWithRemoteSpanContext(ctx, caller)
		} else {
			links = append(links, trace.Link{SpanContext: caller, Attributes: []attribute.KeyValue{CallerKey.Bool(true)}})
		}
	}
	if prev, ok := t.previous.Get(rec.Pod.UID); ok {
		p := prev.(previousAttempt)
		links = append(links, trace.Link{
			SpanContext: p.span,
			Attributes:  []attribute.KeyValue{PreviousAttemptKey.Int(p.attempt)},
		})
	}
	root := buildTrace(ctx, t.tracer, rec, links)
	if !root.IsSampled() {
		return ""
	}
	if rec.Pod.UID != "" {
		if rec.Result == record.ResultScheduled {
			// The pod has no further attempt to link.
			t.previous.Remove(rec.Pod.UID)
		} else {
			t.previous.Add(rec.Pod.UID, previousAttempt{span: root, attempt: rec.Attempt})
		}
	}
	return root.TraceID().String()
}

// callerSpan returns the remote span of pod's TraceparentAnnotation, or an
// invalid span context when there is none or it is malformed.
func (t *Tracer) callerSpan(pod *v1.Pod) trace.SpanContext {
	if pod == nil {
		return trace.SpanContext{}
	}
	value, ok := pod.Annotations[TraceparentAnnotation]
	if !ok {
		return trace.SpanContext{}
	}
	ctx := t.propagator.Extract(context.Background(), propagation.MapCarrier{"traceparent": value})
	caller := trace.SpanContextFromContext(ctx)
	if !caller.IsValid() {
		t.malformed.Add(1)
	}
	return caller
}

// MalformedTraceparents counts the pods whose TraceparentAnnotation could
// not be parsed; their attempts were traced without the caller's span.
func (t *Tracer) MalformedTraceparents() uint64 {
	if t == nil {
		return 0
	}
	return t.malformed.Load()
}

// SkippedAttempts counts the attempts not traced because their spans
// could not have been exported: the export queue was full, or exports were
// failing (a collector unreachable, hanging or restarting; one attempt a
// second is still traced, to find out when it is back). Making spans only
// to drop them would cost scheduling time for nothing. Under a sampling
// rate below 100% some of these attempts would not have been sampled
// anyway. It is 0 with Options.TracerProvider.
func (t *Tracer) SkippedAttempts() uint64 {
	if t == nil {
		return 0
	}
	return t.skipped.Load()
}

// DroppedSpans counts the spans dropped because the export queue was full
// (or the Tracer was shut down). It is 0 with Options.TracerProvider.
func (t *Tracer) DroppedSpans() uint64 {
	if t == nil || t.queue == nil {
		return 0
	}
	return t.queue.Dropped()
}

// FailedSpans counts the spans whose export to the collector failed.
func (t *Tracer) FailedSpans() uint64 {
	if t == nil || t.queue == nil {
		return 0
	}
	return t.queue.Failed()
}

// ForceFlush exports the spans queued so far.
func (t *Tracer) ForceFlush(ctx context.Context) error {
	if t == nil || t.provider == nil {
		return nil
	}
	return t.provider.ForceFlush(ctx)
}

// Shutdown exports the queued spans and releases the exporter, giving up
// when ctx ends. Afterwards, Trace traces nothing.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.shutdown.Store(true)
	if t.provider == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}
