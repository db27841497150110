package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	v1 "k8s.io/api/core/v1"
	k8smetrics "k8s.io/component-base/metrics"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"k8s.io/kubernetes/pkg/scheduler"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"
	"sigs.k8s.io/yaml"

	schedmetrics "github.com/schedscope/schedscope/pkg/metrics"
	"github.com/schedscope/schedscope/pkg/plugins/observe"
	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/stream"
	"github.com/schedscope/schedscope/pkg/tracing"
	"github.com/schedscope/schedscope/test/integration/cluster"
)

var (
	mode           = flag.String("schedscope-mode", "plain", "plain, recording, tracing, collector-down or collector-slow")
	workloadFile   = flag.String("schedscope-workload-file", "misc/performance-config.yaml", "upstream workload file, relative to k8s.io/kubernetes/test/integration/scheduler_perf")
	resultFile     = flag.String("schedscope-result-file", "", "append one JSON line per run: mode, peak heap, records, spans")
	requireRecords = flag.Bool("schedscope-require-records", false, "fail unless the observed modes recorded an attempt for every scheduled pod (for the smoke run)")
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

func BenchmarkPerfScheduling(b *testing.B) {
	dir, err := schedulerPerfDir()
	if err != nil {
		b.Fatal(err)
	}
	upstream := filepath.Join(dir, *workloadFile)
	topic := strings.Split(*workloadFile, "/")[0]
	// The harness resolves template paths against the working directory,
	// as upstream runs it from the workload file's directory.
	b.Chdir(filepath.Dir(upstream))
	res := &result{Mode: *mode, Workload: *workloadFile}
	heap := startHeapSampler()
	defer func() {
		res.PeakHeapBytes = heap.stop()
		writeResult(b, res)
	}()

	switch *mode {
	case "plain":
		perf.RunBenchmarkPerfScheduling(b, upstream, topic, nil)
	case "recording", "tracing", "collector-down", "collector-slow":
		observed, err := observedWorkloadFile(upstream, b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		o := newObserver(b, res, *mode)
		registry, _, err := o.recorder.Observe(nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		perf.RunBenchmarkPerfScheduling(b, observed, topic, registry, perf.WithNodeUpdateFn(o.install))
		if *requireRecords && (res.Records == 0 || res.RecordsRead != res.Records) {
			b.Fatalf("recorded %d attempts, the stream reader read %d: want every attempt recorded and read", res.Records, res.RecordsRead)
		}
		if *requireRecords && *mode == "tracing" && res.SpansReceived == 0 {
			b.Fatal("the OTLP receiver received no span")
		}
		if *requireRecords && (*mode == "collector-down" || *mode == "collector-slow") && res.SpansLost == 0 {
			b.Fatal("no span was counted lost with the collector down")
		}
	default:
		b.Fatalf("-schedscope-mode=%q: want plain, recording, tracing, collector-down or collector-slow", *mode)
	}
}

// schedulerPerfDir is the upstream harness's directory in the module cache.
func schedulerPerfDir() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		return "", fmt.Errorf("locating k8s.io/kubernetes: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "test", "integration", "scheduler_perf"), nil
}

// observedWorkloadFile writes a copy of the upstream workload file into dir
// whose test cases use the observed form of their scheduler configuration
// (the default one when they name none). Template paths are made absolute
// so that they still point at upstream's templates; nothing else changes.
func observedWorkloadFile(upstream, dir string) (string, error) {
	data, err := os.ReadFile(upstream)
	if err != nil {
		return "", err
	}
	var cases []map[string]any
	if err := yaml.Unmarshal(data, &cases); err != nil {
		return "", fmt.Errorf("parsing %s: %w", upstream, err)
	}
	base := filepath.Dir(upstream)
	for i, tc := range cases {
		absolutePaths(tc, base)
		configPath, _ := tc["schedulerConfigPath"].(string)
		observed, err := observe.ObservedConfigFile(configPath)
		if err != nil {
			return "", err
		}
		out := filepath.Join(dir, fmt.Sprintf("scheduler-config-%d.yaml", i))
		if err := os.WriteFile(out, observed, 0o644); err != nil {
			return "", err
		}
		tc["schedulerConfigPath"] = out
	}
	data, err = yaml.Marshal(cases)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "performance-config.yaml")
	return path, os.WriteFile(path, data, 0o644)
}

// absolutePaths rewrites every template and config path below v relative to base.
func absolutePaths(v any, base string) {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if s, ok := x.(string); ok && (strings.HasSuffix(k, "Path") || strings.HasSuffix(k, "PathTemplate")) && !filepath.IsAbs(s) && s != "" {
				t[k] = filepath.Join(base, s)
				continue
			}
			if k == "templatePaths" {
				if list, ok := x.([]any); ok {
					for i, p := range list {
						if s, ok := p.(string); ok && !filepath.IsAbs(s) {
							list[i] = filepath.Join(base, s)
						}
					}
				}
				continue
			}
			absolutePaths(x, base)
		}
	case []any:
		for _, x := range t {
			absolutePaths(x, base)
		}
	}
}

// observer is schedscope's observation, wired as schedscope-scheduler wires it.
type observer struct {
	b        *testing.B
	res      *result
	recorder *observe.Recorder
	buffer   *stream.Buffer
	tracer   *tracing.Tracer
	sink     *otlpSink
	silent   *cluster.SilentCollector

	once    sync.Once
	cancel  context.CancelFunc
	done    sync.WaitGroup
	records atomic.Int64
	read    atomic.Int64
}

// newObserver wires the observation of a mode: recording; tracing, to a
// live OTLP receiver; collector-down, tracing to a closed port;
// collector-slow, tracing to a collector that accepts connections and
// never answers.
func newObserver(b *testing.B, res *result, mode string) *observer {
	o := &observer{b: b, res: res, buffer: stream.NewBuffer(stream.DefaultBufferSize, uuid.NewString())}
	// The scheduler's metrics, as it exports them: unregistered, they
	// would observe nothing.
	m := schedmetrics.New(schedmetrics.Sources{})
	m.RegisterTo(k8smetrics.NewKubeRegistry())
	o.recorder = observe.NewRecorder(observe.Options{Sink: o.buffer, OnRecord: func(a *record.Attempt) {
		m.ObserveRecord(a)
		o.records.Add(1)
	}})
	if mode != "recording" {
		var endpoint string
		if mode == "tracing" {
			sink, err := startOTLPSink()
			if err != nil {
				b.Fatal(err)
			}
			o.sink = sink
			endpoint = sink.addr
		} else if mode == "collector-slow" {
			silent, err := cluster.StartSilentCollector()
			if err != nil {
				b.Fatal(err)
			}
			o.silent = silent
			endpoint = silent.Addr
		} else {
			port, err := cluster.FreePort()
			if err != nil {
				b.Fatal(err)
			}
			endpoint = fmt.Sprintf("127.0.0.1:%d", port)
		}
		rate := int32(1_000_000)
		t, err := tracing.New(context.Background(), &tracingapi.TracingConfiguration{Endpoint: &endpoint, SamplingRatePerMillion: &rate}, tracing.Options{})
		if err != nil {
			b.Fatal(err)
		}
		o.tracer = t
		o.recorder.SetTracer(t)
	}
	return o
}

// install is the harness's node-update hook: on its first call it installs
// the framework wrapper on the scheduler, starts the recorder and serves
// the record stream to a watcher, all stopped when the workload ends, before
// the harness checks that no goroutine is left.
func (o *observer) install(tCtx ktesting.TContext, sched *scheduler.Scheduler, _ *perf.Workload, _ *v1.NodeList) error {
	o.once.Do(func() {
		tCtx.Cleanup(o.stop)
		o.recorder.Install(sched)
		ctx, cancel := context.WithCancel(context.Background())
		o.cancel = cancel
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tCtx.Fatal(err)
		}
		srv := &http.Server{Handler: stream.NewServer(o.buffer, time.Second)}
		o.done.Add(3)
		go func() { defer o.done.Done(); o.recorder.Run(ctx) }()
		go func() { defer o.done.Done(); _ = srv.Serve(ln) }()
		go func() { defer o.done.Done(); <-ctx.Done(); _ = srv.Close() }()
		go o.watch(ctx, "http://"+ln.Addr().String()+stream.Path)
	})
	return nil
}

// watch reads the record stream until ctx is done, counting the records.
// It does not decode them: that is the sidecar's work, in its own process,
// while this process is the scheduler's.
func (o *observer) watch(ctx context.Context, url string) {
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
			o.read.Add(1)
		}
	}
}

func (o *observer) stop() {
	// Let the worker and the watcher drain what the last pods produced.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && (o.recorder.QueueLength() > 0 || o.read.Load() < o.records.Load()) {
		time.Sleep(10 * time.Millisecond)
	}
	if o.cancel != nil {
		o.cancel()
	}
	o.done.Wait()
	if o.tracer != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = o.tracer.Shutdown(ctx)
		o.res.SpansLost = o.tracer.DroppedSpans() + o.tracer.FailedSpans()
		o.res.TracesSkipped = o.tracer.SkippedAttempts()
	}
	o.res.Records, o.res.RecordsRead, o.res.Dropped = o.records.Load(), o.read.Load(), o.recorder.Dropped()
	if o.silent != nil {
		o.silent.Stop()
	}
	if o.sink != nil {
		spans, err := o.sink.stop()
		if err != nil {
			o.b.Error(err)
		}
		o.res.SpansReceived = spans
	}
}

// otlpSink is a live OTLP receiver in its own process (hack/otlpsink), as
// a collector is: its work is not the scheduler's.
type otlpSink struct {
	addr string
	cmd  *exec.Cmd
	out  *bufio.Reader
}

func startOTLPSink() (*otlpSink, error) {
	binary, err := cluster.Binary("otlpsink")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the OTLP sink: %w", err)
	}
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	addr, found := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !found {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("the OTLP sink did not start: %q: %v", line, err)
	}
	return &otlpSink{addr: addr, cmd: cmd, out: out}, nil
}

// stop ends the sink and returns the spans it received.
func (s *otlpSink) stop() (int64, error) {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	var count struct{ Spans int64 }
	decodeErr := json.NewDecoder(s.out).Decode(&count)
	if err := s.cmd.Wait(); err != nil {
		return 0, fmt.Errorf("the OTLP sink: %w", err)
	}
	if decodeErr != nil {
		return 0, fmt.Errorf("reading the OTLP sink's span count: %w", decodeErr)
	}
	return count.Spans, nil
}

// heapSampler tracks the peak of live heap objects.
type heapSampler struct {
	stopCh chan struct{}
	peak   atomic.Uint64
	done   chan struct{}
}

func startHeapSampler() *heapSampler {
	h := &heapSampler{stopCh: make(chan struct{}), done: make(chan struct{})}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	go func() {
		defer close(h.done)
		ticker := time.NewTicker(50 * time.Millisecond)
		defer ticker.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > h.peak.Load() {
				h.peak.Store(v)
			}
			select {
			case <-h.stopCh:
				return
			case <-ticker.C:
			}
		}
	}()
	return h
}

func (h *heapSampler) stop() uint64 {
	close(h.stopCh)
	<-h.done
	return h.peak.Load()
}

func writeResult(b *testing.B, res *result) {
	if *resultFile == "" {
		b.Logf("result: %+v", *res)
		return
	}
	line, _ := json.Marshal(res)
	f, err := os.OpenFile(*resultFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "%s\n", line)
}
