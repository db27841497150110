package tracing_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"k8s.io/utils/ptr"

	"github.com/schedscope/schedscope/pkg/tracing"
)

// BenchmarkTrace measures the recorder worker's cost of tracing one
// attempt, sampled (spans built and handed to a processor that drops them)
// and not sampled.
func BenchmarkTrace(b *testing.B) {
	for _, bm := range []struct {
		name string
		rate int32
	}{
		{name: "sampled", rate: 1_000_000},
		{name: "not sampled", rate: 0},
	} {
		b.Run(bm.name, func(b *testing.B) {
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(tracing.NewSampler(&bm.rate, 0)))
			defer func() { _ = tp.Shutdown(context.Background()) }()
			tr, err := tracing.New(context.Background(), &tracingapi.TracingConfiguration{SamplingRatePerMillion: ptr.To(bm.rate)},
				tracing.Options{TracerProvider: tp})
			if err != nil {
				b.Fatal(err)
			}
			rec := scheduledRecord("web", "uid")
			pod := podOf(rec, nil)
			b.ReportAllocs()
			for b.Loop() {
				tr.Trace(pod, rec)
			}
		})
	}
}
