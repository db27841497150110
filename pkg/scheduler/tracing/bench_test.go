package tracing_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"k8s.io/utils/ptr"

	"github.com/schedscope/schedscope/pkg/scheduler/tracing"
)

// BenchmarkTrace measures the recorder worker's cost of tracing one
// attempt, sampled (spans built and handed to a processor that drops them)
// and not sampled; and, through the whole pipeline, with every export
// failing, as with a collector down: then attempts are skipped, but one a
// second, which is traced to probe the collector.
func BenchmarkTrace(b *testing.B) {
	for _, bm := range []struct {
		name string
		rate int32
	}{
		{name: "sampled", rate: 1_000_000},
		{name: "not sampled", rate: 0},
	} {
		b.Run(bm.name, func(b *testing.B) {
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(tracing.NewSampler(&bm.rate, 0, false)))
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
	b.Run("collector down", func(b *testing.B) {
		ctx := context.Background()
		exp := &flakyExporter{}
		exp.failing.Store(true)
		tr, err := tracing.New(ctx, &tracingapi.TracingConfiguration{SamplingRatePerMillion: ptr.To[int32](1_000_000)}, tracing.Options{Exporter: exp})
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = tr.Shutdown(ctx) }()
		rec := scheduledRecord("web", "uid")
		pod := podOf(rec, nil)
		tr.Trace(pod, rec)
		if err := tr.ForceFlush(ctx); err != nil || tr.FailedSpans() == 0 {
			b.Fatalf("the first export did not fail: %v", err)
		}
		b.ReportAllocs()
		for b.Loop() {
			tr.Trace(pod, rec)
		}
		b.ReportMetric(float64(tr.SkippedAttempts())/float64(b.N), "skipped/op")
	})
}
