package tracing

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"k8s.io/klog/v2"
)

// queueProcessor is a span processor that puts a bounded queue in front of
// an exporter. OnEnd never blocks: when the queue is full, the span is
// dropped and counted. One goroutine takes spans off the queue and exports
// them in batches, so a slow or unreachable collector only ever delays that
// goroutine. Admit tells the tracer whether spans made now can be
// exported at all, so that it does not make them for nothing.
type queueProcessor struct {
	exporter      sdktrace.SpanExporter
	batchSize     int
	batchTimeout  time.Duration
	exportTimeout time.Duration
	logger        klog.Logger

	queue    chan sdktrace.ReadOnlySpan
	flushReq chan chan struct{}
	stop     chan struct{}
	done     chan struct{}
	// ctx bounds every export; Shutdown cancels it when its own context
	// expires first.
	ctx    context.Context
	cancel context.CancelFunc

	stopOnce sync.Once
	stopped  atomic.Bool
	dropped  atomic.Uint64
	failed   atomic.Uint64

	// failing is set when an export fails and cleared when one succeeds;
	// lastProbe is when Admit last let a trace through while failing (Unix
	// nanoseconds).
	failing   atomic.Bool
	lastProbe atomic.Int64
}

// probeInterval is how often Admit lets one trace through while exports
// fail: its export tells when the collector is back.
const probeInterval = time.Second

var _ sdktrace.SpanProcessor = &queueProcessor{}

func newQueueProcessor(logger klog.Logger, exporter sdktrace.SpanExporter, queueSize, batchSize int, batchTimeout, exportTimeout time.Duration) *queueProcessor {
	ctx, cancel := context.WithCancel(context.Background())
	q := &queueProcessor{
		exporter:      exporter,
		batchSize:     batchSize,
		batchTimeout:  batchTimeout,
		exportTimeout: exportTimeout,
		logger:        logger,
		queue:         make(chan sdktrace.ReadOnlySpan, queueSize),
		flushReq:      make(chan chan struct{}),
		stop:          make(chan struct{}),
		done:          make(chan struct{}),
		ctx:           ctx,
		cancel:        cancel,
	}
	go q.run()
	return q
}

// Admit reports whether a trace made now has a chance to be exported: not
// while the queue is full, and, while exports fail, for only one trace
// every probeInterval. It never blocks.
func (q *queueProcessor) Admit() bool {
	if len(q.queue) == cap(q.queue) {
		return false
	}
	if !q.failing.Load() {
		return true
	}
	now := time.Now().UnixNano()
	last := q.lastProbe.Load()
	return now-last >= int64(probeInterval) && q.lastProbe.CompareAndSwap(last, now)
}

// OnStart implements sdktrace.SpanProcessor.
func (q *queueProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd implements sdktrace.SpanProcessor. It never blocks.
func (q *queueProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	if q.stopped.Load() {
		q.dropped.Add(1)
		return
	}
	select {
	case q.queue <- s:
	default:
		q.dropped.Add(1)
	}
}

func (q *queueProcessor) run() {
	defer close(q.done)
	ticker := time.NewTicker(q.batchTimeout)
	defer ticker.Stop()
	batch := make([]sdktrace.ReadOnlySpan, 0, q.batchSize)
	for {
		select {
		case s := <-q.queue:
			batch = append(batch, s)
			if len(batch) >= q.batchSize {
				batch = q.export(batch)
			}
		case <-ticker.C:
			// A tick that waited while an export was stuck must not send a
			// nearly empty batch: take what is queued first.
			batch = q.export(q.fill(batch))
		case ack := <-q.flushReq:
			batch = q.exportQueued(batch)
			close(ack)
		case <-q.stop:
			q.exportQueued(batch)
			return
		}
	}
}

// fill adds queued spans to batch, without waiting, until it is full.
func (q *queueProcessor) fill(batch []sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	for len(batch) < q.batchSize {
		select {
		case s := <-q.queue:
			batch = append(batch, s)
		default:
			return batch
		}
	}
	return batch
}

// exportQueued exports batch and every span queued now.
func (q *queueProcessor) exportQueued(batch []sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	for n := len(q.queue); n > 0; n-- {
		batch = append(batch, <-q.queue)
		if len(batch) >= q.batchSize {
			batch = q.export(batch)
		}
	}
	return q.export(batch)
}

// export exports batch and returns it emptied.
func (q *queueProcessor) export(batch []sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	if len(batch) == 0 {
		return batch
	}
	if q.ctx.Err() != nil {
		// Shutdown gave up: abandon the spans.
		q.dropped.Add(uint64(len(batch)))
		clear(batch)
		return batch[:0]
	}
	ctx, cancel := context.WithTimeout(q.ctx, q.exportTimeout)
	err := q.exporter.ExportSpans(ctx, batch)
	cancel()
	if err != nil {
		total := q.failed.Add(uint64(len(batch)))
		if !q.failing.Swap(true) {
			q.lastProbe.Store(time.Now().UnixNano())
		}
		q.logger.Error(err, "Exporting spans failed", "spans", len(batch), "failedTotal", total)
	} else if q.failing.Swap(false) {
		q.logger.Info("Exporting spans again")
	}
	clear(batch)
	return batch[:0]
}

// ForceFlush implements sdktrace.SpanProcessor: it exports every span
// queued so far.
func (q *queueProcessor) ForceFlush(ctx context.Context) error {
	if q.stopped.Load() {
		return nil
	}
	ack := make(chan struct{})
	select {
	case q.flushReq <- ack:
	case <-q.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown implements sdktrace.SpanProcessor: it exports the queued spans
// and shuts the exporter down, giving up when ctx ends.
func (q *queueProcessor) Shutdown(ctx context.Context) error {
	var err error
	q.stopOnce.Do(func() {
		q.stopped.Store(true)
		close(q.stop)
		select {
		case <-q.done:
		case <-ctx.Done():
			// Abandon the export in flight and the queued spans.
			q.cancel()
			<-q.done
			err = ctx.Err()
		}
		q.cancel()
		if shutdownErr := q.exporter.Shutdown(ctx); err == nil {
			err = shutdownErr
		}
	})
	return err
}

// Dropped counts the spans dropped because the queue was full, or the
// processor was shut down, or Shutdown gave up on them.
func (q *queueProcessor) Dropped() uint64 { return q.dropped.Load() }

// Failed counts the spans whose export failed.
func (q *queueProcessor) Failed() uint64 { return q.failed.Load() }
