package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	k8smetrics "k8s.io/component-base/metrics"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"k8s.io/kubernetes/pkg/scheduler"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"

	"github.com/schedscope/schedscope/pkg/record"
	schedmetrics "github.com/schedscope/schedscope/pkg/scheduler/metrics"
	"github.com/schedscope/schedscope/pkg/scheduler/observe"
	"github.com/schedscope/schedscope/pkg/scheduler/tracing"
	"github.com/schedscope/schedscope/pkg/stream"
	"github.com/schedscope/schedscope/test/framework"
	"github.com/schedscope/schedscope/test/freeport"
)

// result is what a run reports beside the harness's own data items.
type result struct {
	Mode          string `json:"mode"`
	Workload      string `json:"workload"`
	PeakHeapBytes uint64 `json:"peakHeapBytes"`
	Records       int64  `json:"records"`
	RecordsRead   int64  `json:"recordsRead"`
	Dropped       uint64 `json:"dropped"`
	SpansReceived int64  `json:"spansReceived"`
	SpansLost     uint64 `json:"spansLost"`
	TracesSkipped uint64 `json:"tracesSkipped"`
}

// schedulerPerfDir is the upstream harness's directory in the module cache.
func schedulerPerfDir() (string, error) {
	// The harness's own source file, in the module cache of the
	// k8s.io/kubernetes release this test is built with.
	pc := reflect.ValueOf(perf.StaticNodeTemplate).Pointer()
	file, _ := runtime.FuncForPC(pc).FileLine(pc)
	if !filepath.IsAbs(file) {
		return "", fmt.Errorf("locating k8s.io/kubernetes' scheduler_perf: its source is at %q, not an absolute path (built with -trimpath?)", file)
	}
	return filepath.Dir(file), nil
}

// observer is schedscope's observation, wired as schedscope-scheduler wires
// it, of every scheduler the harness starts: one per workload.
type observer struct {
	b       testing.TB
	res     *result
	metrics *schedmetrics.Metrics
	// endpoint is where the observed schedulers export spans; empty when
	// the mode does not trace.
	endpoint string
	sink     *framework.OTLPSink
	silent   *framework.SilentCollector

	mu        sync.Mutex
	installed map[*scheduler.Scheduler]bool

	records       atomic.Int64
	read          atomic.Int64
	dropped       atomic.Uint64
	spansLost     atomic.Uint64
	tracesSkipped atomic.Uint64
}

// newObserver wires the observation of a mode: recording; tracing, to a
// live OTLP receiver; collector-down, tracing to a closed port;
// collector-slow, tracing to a collector that accepts connections and
// never answers.
func newObserver(b testing.TB, res *result, mode string) *observer {
	o := &observer{b: b, res: res, installed: map[*scheduler.Scheduler]bool{}}
	// The scheduler's metrics, as it exports them: unregistered, they
	// would observe nothing.
	o.metrics = schedmetrics.New()
	o.metrics.RegisterTo(k8smetrics.NewKubeRegistry(), schedmetrics.Sources{})
	if mode != "recording" {
		var endpoint string
		if mode == "tracing" {
			// A live receiver in its own process, as a collector is: its
			// work is not the scheduler's.
			sink, err := framework.StartOTLPSink(context.Background(), b.TempDir(), "otlpsink")
			if err != nil {
				b.Fatal(err)
			}
			o.sink = sink
			endpoint = sink.Addr
		} else if mode == "collector-slow" {
			silent, err := framework.StartSilentCollector()
			if err != nil {
				b.Fatal(err)
			}
			o.silent = silent
			endpoint = silent.Addr
		} else {
			port, err := freeport.Get()
			if err != nil {
				b.Fatal(err)
			}
			endpoint = fmt.Sprintf("127.0.0.1:%d", port)
		}
		o.endpoint = endpoint
	}
	return o
}

// install is called with each scheduler the harness starts, perhaps more
// than once. On its first call for a scheduler it installs the observation on it, starts the recorder and
// serves the record stream to a watcher, all stopped when the workload
// ends, before the harness checks that no goroutine is left. The harness
// builds the scheduler with its own event recorders, so the records name
// no preemption victims (see observe.Recorder.RecorderFactory).
func (o *observer) install(tCtx tContext, sched *scheduler.Scheduler) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.installed[sched] {
		return nil
	}
	o.installed[sched] = true
	s := &session{observer: o, buffer: stream.NewBuffer(stream.DefaultBufferSize, stream.DefaultBufferBytes, uuid.NewString())}
	// Each scheduler has a tracer of its own, as each scheduler process
	// does, ended with its workload: the harness checks that a workload
	// leaves no goroutine behind.
	opts := observe.Options{Sink: s.buffer, OnRecord: func(a *record.Attempt) {
		o.metrics.ObserveRecord(a)
		s.records.Add(1)
	}}
	if o.endpoint != "" {
		rate := int32(1_000_000)
		t, err := tracing.New(context.Background(), &tracingapi.TracingConfiguration{Endpoint: &o.endpoint, SamplingRatePerMillion: &rate}, tracing.Options{})
		if err != nil {
			return err
		}
		s.tracer, opts.Tracer = t, t
	}
	s.recorder = observe.NewRecorder(opts)
	if err := s.recorder.Install(sched); err != nil {
		return err
	}
	tCtx.Cleanup(s.stop)
	workerCtx, stopWorker := context.WithCancel(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	s.stopWorker, s.cancel = stopWorker, cancel
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: stream.NewServer(s.buffer, time.Second)}
	s.worker.Add(1)
	s.done.Add(3)
	go func() { defer s.worker.Done(); s.recorder.Run(workerCtx) }()
	go func() { defer s.done.Done(); _ = srv.Serve(ln) }()
	go func() { defer s.done.Done(); <-ctx.Done(); _ = srv.Close() }()
	go func() { defer s.done.Done(); s.watch(ctx, "http://"+ln.Addr().String()+stream.Path) }()
	return nil
}

// session is the observation of one scheduler.
type session struct {
	*observer
	recorder *observe.Recorder
	buffer   *stream.Buffer
	tracer   *tracing.Tracer // nil when the mode does not trace

	stopWorker context.CancelFunc // ends the recorder's worker
	worker     sync.WaitGroup
	cancel     context.CancelFunc // ends the stream server and the watcher
	done       sync.WaitGroup

	records atomic.Int64
	read    atomic.Int64
}

// watch reads the record stream until ctx is done, counting the records.
// It does not decode them: that is the sidecar's work, in its own process,
// while this process is the scheduler's.
func (s *session) watch(ctx context.Context, url string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"?watch=true&since=0", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 1<<20), 64<<20)
	added := []byte(`{"type":"` + stream.EventAdded + `"`)
	for lines.Scan() {
		if bytes.HasPrefix(lines.Bytes(), added) {
			s.read.Add(1)
		}
	}
}

// stop ends the observation of a scheduler when its workload is done. The
// scheduler still runs (the harness stops it later) and may still retry
// pods, so the worker is stopped first: from then on no record is added,
// and the watcher is given the time to read every record there is.
func (s *session) stop() {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && s.recorder.QueueLength() > 0 {
		time.Sleep(10 * time.Millisecond)
	}
	s.stopWorker()
	s.worker.Wait()
	for time.Now().Before(deadline) && s.read.Load() < s.records.Load() {
		time.Sleep(10 * time.Millisecond)
	}
	s.cancel()
	s.done.Wait()
	if s.tracer != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.tracer.Shutdown(ctx)
		s.observer.spansLost.Add(s.tracer.DroppedSpans() + s.tracer.FailedSpans())
		s.observer.tracesSkipped.Add(s.tracer.SkippedAttempts())
	}
	s.observer.records.Add(s.records.Load())
	s.observer.read.Add(s.read.Load())
	s.observer.dropped.Add(s.recorder.Dropped())
}

// finish ends the mode's collectors and fills in the result.
func (o *observer) finish() {
	o.res.SpansLost, o.res.TracesSkipped = o.spansLost.Load(), o.tracesSkipped.Load()
	o.res.Records, o.res.RecordsRead, o.res.Dropped = o.records.Load(), o.read.Load(), o.dropped.Load()
	if o.silent != nil {
		o.silent.Stop()
	}
	if o.sink != nil {
		stats, err := o.sink.Stats()
		if err != nil {
			o.b.Errorf("the OTLP sink's span count: %v", err)
		}
		o.res.SpansReceived = stats.Spans
		o.sink.Stop()
	}
}
