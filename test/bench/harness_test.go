//go:build !kube1.35

package bench

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
)

var (
	mode           = flag.String("schedscope-mode", "plain", "plain, recording, tracing, collector-down or collector-slow")
	workloadFile   = flag.String("schedscope-workload-file", "misc/performance-config.yaml", "upstream workload file, relative to k8s.io/kubernetes/test/integration/scheduler_perf")
	resultFile     = flag.String("schedscope-result-file", "", "append one JSON line per run: mode, peak heap, records, spans")
	requireRecords = flag.Bool("schedscope-require-records", false, "fail unless the observed modes recorded an attempt for every scheduled pod (for the smoke run)")
)

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
		o := newObserver(b, res, *mode)
		perf.RunBenchmarkPerfScheduling(b, upstream, topic, nil, perf.WithNodeUpdateFn(o.nodeUpdate))
		o.finish()
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

// nodeUpdate is the harness's node-update hook: it installs the observation
// on the scheduler whose nodes are updated.
func (o *observer) nodeUpdate(tCtx tContext, sched *scheduler.Scheduler, _ *perf.Workload, _ *v1.NodeList) error {
	return o.install(tCtx, sched)
}
