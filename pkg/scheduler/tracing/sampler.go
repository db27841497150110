package tracing

import (
	"fmt"
	"math/rand/v2"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/schedscope/schedscope/pkg/record"
)

// NewSampler returns the sampler of schedscope's traces. It samples
// ratePerMillion of the attempts (nil means 0), and it always samples an
// attempt that did not schedule its pod or whose latency, queue wait
// excluded, exceeds slow (0 or less: no latency rule).
//
// The rate never reads a trace ID a pod chose. A root without a parent has
// a trace ID the SDK drew at random, and the rate decides on it
// (TraceIDRatioBased). A root under a remote parent, a pod's
// TraceparentAnnotation made the parent (TraceparentParent), has
// the caller's trace ID, which whoever creates the pod writes: the rate
// decides there by a random draw of the scheduler's own. The remote
// parent's sampled flag decides instead only when followRemoteParent is
// set: it would otherwise force tracing at any rate.
//
// Because a trace is built after the attempt finished, its root span starts
// with the result and the latency as attributes, and the sampler decides on
// them. Child spans carry neither, so they follow the root's decision.
func NewSampler(ratePerMillion *int32, slow time.Duration, followRemoteParent bool) sdktrace.Sampler {
	var rate int32
	if ratePerMillion != nil {
		rate = *ratePerMillion
	}
	fraction := float64(rate) / 1e6
	ratio := sdktrace.TraceIDRatioBased(fraction)
	base := sdktrace.ParentBased(ratio)
	if !followRemoteParent {
		draw := randomSampler{fraction: fraction}
		base = sdktrace.ParentBased(ratio, sdktrace.WithRemoteParentSampled(draw), sdktrace.WithRemoteParentNotSampled(draw))
	}
	return &sampler{
		base: base,
		slow: slow,
		desc: fmt.Sprintf("SchedscopeSampler{ratio=%g,slow=%s,followRemoteParent=%t}", fraction, slow, followRemoteParent),
	}
}

type sampler struct {
	base sdktrace.Sampler
	slow time.Duration
	desc string
}

var _ sdktrace.Sampler = &sampler{}

// ShouldSample implements sdktrace.Sampler.
func (s *sampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if s.forced(p) {
		return sdktrace.SamplingResult{
			Decision:   sdktrace.RecordAndSample,
			Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState(),
		}
	}
	return s.base.ShouldSample(p)
}

// forced reports whether the span is the root of an attempt that must be
// sampled whatever the rate.
func (s *sampler) forced(p sdktrace.SamplingParameters) bool {
	for _, kv := range p.Attributes {
		switch kv.Key {
		case ResultKey:
			if r := record.Result(kv.Value.AsString()); r != "" && r != record.ResultScheduled {
				return true
			}
		case LatencyKey:
			if s.slow > 0 && kv.Value.AsFloat64() > s.slow.Seconds() {
				return true
			}
		}
	}
	return false
}

// Description implements sdktrace.Sampler.
func (s *sampler) Description() string { return s.desc }

// randomSampler samples fraction of the spans by a random draw, whatever
// their trace ID.
type randomSampler struct {
	fraction float64
}

var _ sdktrace.Sampler = randomSampler{}

// ShouldSample implements sdktrace.Sampler.
func (r randomSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	decision := sdktrace.Drop
	if rand.Float64() < r.fraction {
		decision = sdktrace.RecordAndSample
	}
	return sdktrace.SamplingResult{Decision: decision, Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState()}
}

// Description implements sdktrace.Sampler.
func (r randomSampler) Description() string {
	return fmt.Sprintf("RandomSampler{%g}", r.fraction)
}
