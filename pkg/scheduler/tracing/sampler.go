package tracing

import (
	"fmt"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/schedscope/schedscope/pkg/record"
)

// NewSampler returns the sampler of schedscope's traces. It samples
// ratePerMillion of the attempts (nil means 0), and it always samples an
// attempt that did not schedule its pod or whose latency, queue wait
// excluded, exceeds slow (0 or less: no latency rule). A remote parent, a
// pod's TraceparentAnnotation, decides instead of the rate only when
// followRemoteParent is set: the annotation is written by whoever creates
// the pod, and its sampled flag would otherwise force tracing at any rate.
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
		base = sdktrace.ParentBased(ratio, sdktrace.WithRemoteParentSampled(ratio), sdktrace.WithRemoteParentNotSampled(ratio))
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
