package tracing

import (
	"context"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// slowExporter takes delay per export, as a collector that answers late
// or not at all, and records the size of every batch. Its first export
// waits for release.
type slowExporter struct {
	delay   time.Duration
	release chan struct{}

	mu    sync.Mutex
	sizes []int
}

func (e *slowExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	first := len(e.sizes) == 0
	e.sizes = append(e.sizes, len(spans))
	e.mu.Unlock()
	if first {
		<-e.release
	}
	select {
	case <-time.After(e.delay):
	case <-ctx.Done():
	}
	return nil
}

func (e *slowExporter) Shutdown(context.Context) error { return nil }

func (e *slowExporter) batches() []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]int(nil), e.sizes...)
}

// TestQueueFullBatchesBehindSlowExports checks that a backlog drains in
// full batches while each export takes longer than the batch timeout: the
// tick that waited during an export must not send a batch of one span,
// which would halve the spans a slow collector gets before they are
// dropped.
func TestQueueFullBatchesBehindSlowExports(t *testing.T) {
	const (
		batchSize = 8
		spans     = 10 * batchSize
	)
	exp := &slowExporter{delay: 20 * time.Millisecond, release: make(chan struct{})}
	q := newQueueProcessor(klog.Background(), exp, 2*spans, batchSize, 2*time.Millisecond, time.Second)
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(q))
	defer func() { _ = provider.Shutdown(context.Background()) }()
	tracer := provider.Tracer("test")
	for range spans {
		_, s := tracer.Start(context.Background(), "span")
		s.End()
	}
	close(exp.release)
	var sizes []int
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		sizes = exp.batches()
		total := 0
		for _, n := range sizes {
			total += n
		}
		return total == spans, nil
	}); err != nil {
		t.Fatalf("batches exported %v, want %d spans in all: %v", sizes, spans, err)
	}
	// The first batch may have been sent by a tick before every span was
	// queued, and the last holds what is left; every other one is full.
	for i := 1; i < len(sizes)-1; i++ {
		if sizes[i] != batchSize {
			t.Fatalf("batches exported %v: batch %d has %d spans with more queued, want %d", sizes, i, sizes[i], batchSize)
		}
	}
	if q.Dropped() != 0 {
		t.Errorf("Dropped() = %d, want 0", q.Dropped())
	}
}
