//go:build process && !kube1.35

package bench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/schedscope/schedscope/test/bench/processrun"
	"github.com/schedscope/schedscope/test/framework"
)

var (
	processWorkloadName = flag.String("schedscope-process-workload", "SchedulingBasic/5000Nodes_10000Pods", "TestProcessCost: the workload (TestCase/Workload) of -schedscope-workload-file")
	processParams       = flag.String("schedscope-process-params", "", "TestProcessCost: name=count,... overriding the workload's parameters (initNodes=50,measurePods=100 for a smoke run)")
	processModes        = flag.String("schedscope-process-modes", "plain,recording,tracing", "TestProcessCost: comma-separated modes, run in turn: plain, recording, tracing, shadow, shadow-10")
	processCount        = flag.Int("schedscope-process-count", 3, "TestProcessCost: runs of each mode, interleaved")
	profiles            = flag.String("schedscope-process-profiles", "", "TestProcessCost: a directory to save each scheduler's profiles in, taken when half the measured pods are bound: its heap (RUN.heap.pb.gz), then 10 seconds of CPU (RUN.cpu.pb.gz); none if empty")
)

const (
	// defaultProfile is the scheduler name of the default profile, which
	// the workloads' pods ask for.
	defaultProfile = "default-scheduler"
	// measuredNamespace holds the measured pods; the pods created before
	// them, bound, are in initNamespace.
	measuredNamespace = "measured"
	initNamespace     = "init"
	// workers bounds the concurrent requests that create nodes and pods.
	workers = 32
)

// TestProcessCost measures the scheduler in a process of its own: for an
// upstream workload (-schedscope-workload-file, -schedscope-process-workload)
// it builds the workload's cluster once on a real etcd and kube-apiserver,
// then, for each run and mode in turn, creates the measured pods pending
// and starts a fresh scheduler process with the test case's scheduler
// configuration and feature gates (else the default profile): plain
// kube-scheduler; schedscope-scheduler with its sidecar following the
// record stream into SQLite (recording); the same tracing every attempt
// to an OTLP receiver (tracing); and the same as recording with the
// bin-packing profile of config/scheduler-binpack.yaml as a shadow of the
// live profile, run for every attempt (shadow) or every tenth (shadow-10). The sidecar and the receiver run in their
// own processes, so the scheduler's CPU time and peak RSS, read from
// /proc/<pid>/stat and /proc/<pid>/status, are its own. A run fails unless
// every pod is bound once, and in the observed modes every attempt became
// a record the sidecar stored and a trace the receiver got, none dropped or
// lost. Each run is a JSON line in -schedscope-result-file.
func TestProcessCost(t *testing.T) {
	params, err := parseParams(*processParams)
	if err != nil {
		t.Fatalf("-schedscope-process-params: %v", err)
	}
	dir, err := schedulerPerfDir()
	if err != nil {
		t.Fatal(err)
	}
	w, err := loadProcessWorkload(filepath.Join(dir, *workloadFile), *processWorkloadName, params)
	if err != nil {
		t.Fatal(err)
	}
	if *profiles != "" {
		if err := os.MkdirAll(*profiles, 0o755); err != nil {
			t.Fatalf("-schedscope-process-profiles: %v", err)
		}
	}
	modes := strings.Split(*processModes, ",")
	for _, m := range modes {
		if _, ok := processModeBinaries[m]; !ok {
			t.Fatalf("-schedscope-process-modes: %q: want plain, recording, tracing, shadow or shadow-10", m)
		}
	}
	cp := framework.StartTestControlPlane(t)
	client, err := framework.FastClient(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	nodes := createWorkloadNodes(t, client, w)
	createInitPods(t, client, w, nodes)
	t.Logf("%s: %d nodes and %d bound pods created in %v", w.name, len(nodes), initPodCount(w), time.Since(began).Round(time.Millisecond))
	createNamespace(t, client, measuredNamespace)
	for i := range *processCount {
		// Each round starts with the next mode, so that no mode always
		// follows the same one.
		for j := range modes {
			mode := modes[(i+j)%len(modes)]
			r := runProcess(t, cp, client, w, mode, fmt.Sprintf("%s-%d", mode, i+1))
			t.Logf("%s %s run %d: %.1f pods/s, CPU %.2f ms a pod (%.2f s at startup), peak RSS %.0f MiB; attempts %.0f, records %d = stored %d + lost %d, dropped %.0f; traces %d (%d spans), spans lost %.0f, skipped %.0f; batching %v; sidecar CPU %.2f s, peak RSS %.0f MiB; receiver CPU %.2f s; run %.0f s",
				w.name, mode, i+1, r.Throughput, r.CPUSeconds*1000/float64(r.Pods), r.StartupCPUSeconds, float64(r.PeakRSSBytes)/(1<<20), r.Attempts,
				r.Records, r.RecordsStored, r.RecordsLost, r.Dropped, r.Traces, r.Spans, r.SpansLost, r.TracesSkipped, r.BatchAttempts,
				r.SidecarCPUSeconds, float64(r.SidecarPeakRSSBytes)/(1<<20), r.SinkCPUSeconds, r.Seconds)
			writeProcessRun(t, r)
		}
	}
	t.Logf("total %v", time.Since(began).Round(time.Second))
}

// processModeBinaries is the scheduler each mode runs.
var processModeBinaries = map[string]string{
	"plain": "kube-scheduler", "recording": "schedscope-scheduler", "tracing": "schedscope-scheduler",
	"shadow": "schedscope-scheduler", "shadow-10": "schedscope-scheduler",
}

// shadowSampleEvery is, for the modes that run a shadow profile, how many
// of the live profile's attempts one shadow run is made for.
var shadowSampleEvery = map[string]int{"shadow": 1, "shadow-10": 10}

// runProcess runs one scheduler process over the measured pods in mode.
func runProcess(t *testing.T, cp *framework.ControlPlane, client kubernetes.Interface, w *processWorkload, mode, name string) processrun.Run {
	t.Helper()
	began := time.Now()
	n := w.measured.count
	r := processrun.Run{Mode: mode, Workload: w.name, Pods: n}
	createPods(t, client, n, func(i int) *v1.Pod { return w.measured.make(i, fmt.Sprintf("%05d", i), measuredNamespace, "") })
	pods, err := framework.WatchPods(t.Context(), client, measuredNamespace)
	if err != nil {
		t.Fatal(err)
	}
	defer pods.Stop()
	if bound := pods.Bound(); bound != 0 {
		t.Fatalf("%d measured pods bound before their scheduler started", bound)
	}
	p := startProcesses(t, cp, w, mode, name)
	defer p.stop()
	profiled := *profiles == ""
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Minute, true, func(context.Context) (bool, error) {
		if p.sched.Exited() {
			return false, fmt.Errorf("%s exited: %v\n%s", name, p.sched.Wait(0), p.sched.Tail())
		}
		bound := pods.Bound()
		if !profiled && bound >= n/2 {
			profiled = true
			saveProfile(t, p.sched, "heap", filepath.Join(*profiles, name+".heap.pb.gz"))
			saveProfile(t, p.sched, "profile?seconds=10", filepath.Join(*profiles, name+".cpu.pb.gz"))
		}
		return bound == n, nil
	}); err != nil {
		t.Fatalf("%s: %d of %d pods bound: %v", name, pods.Bound(), n, err)
	}
	if first, last := pods.BindTimes(); n > 1 && last.After(first) {
		r.Throughput = float64(n-1) / last.Sub(first).Seconds()
	}
	p.waitDone(t, n)
	p.measure(t, &r)
	p.check(t, &r)
	p.stop()
	pods.Stop()
	deleteMeasured(t, client)
	r.Seconds = time.Since(began).Seconds()
	return r
}

// saveProfile saves a profile of sched's process (its /debug/pprof/ of
// kind) in path.
func saveProfile(t *testing.T, sched *framework.Scheduler, kind, path string) {
	t.Helper()
	profile, err := framework.GetWithToken(strings.TrimSuffix(sched.MetricsURL, "/metrics") + "/debug/pprof/" + kind)
	if err != nil {
		t.Fatalf("%s's profile: %v", sched.Name, err)
	}
	if err := os.WriteFile(path, profile, 0o644); err != nil {
		t.Fatal(err)
	}
}

// processes are the processes of one run: the scheduler, and the sidecar
// and the OTLP receiver of the modes that have them (else nil).
type processes struct {
	sched   *framework.Scheduler
	sidecar *framework.Sidecar
	sink    *framework.OTLPSink
	// shadow is the shadow profile of the shadow modes.
	shadow string
	// startup is the scheduler's CPU time, in seconds, when it was ready.
	startup float64
}

// startProcesses starts the processes of mode and reads the scheduler's
// CPU time once it is ready.
func startProcesses(t *testing.T, cp *framework.ControlPlane, w *processWorkload, mode, name string) *processes {
	t.Helper()
	ctx := t.Context()
	p := &processes{}
	var extra []string
	if w.featureGates != "" {
		extra = append(extra, "--feature-gates="+w.featureGates)
	}
	config := w.schedulerConfig
	var err error
	if every, ok := shadowSampleEvery[mode]; ok {
		var flags []string
		if config, p.shadow, flags, err = withShadow(config, every); err != nil {
			t.Fatal(err)
		}
		extra = append(extra, flags...)
	}
	if mode == "tracing" {
		if p.sink, err = framework.StartOTLPSink(ctx, cp.Dir, name+"-otlpsink"); err != nil {
			t.Fatal(err)
		}
		config := filepath.Join(cp.Dir, name+"-tracing.yaml")
		if err := os.WriteFile(config, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: "+p.sink.Addr+"\nsamplingRatePerMillion: 1000000\n"), 0o644); err != nil {
			p.stop()
			t.Fatal(err)
		}
		extra = append(extra, "--tracing-config-file="+config)
	}
	if p.sched, err = cp.StartScheduler(ctx, name, processModeBinaries[mode], config, extra...); err != nil {
		p.stop()
		t.Fatal(err)
	}
	if err := p.sched.WaitReady(ctx); err != nil {
		p.stop()
		t.Fatal(err)
	}
	p.startup = cpuSeconds(t, p.sched.Process)
	if mode != "plain" {
		// Started right away: its first list must still find the first
		// record in the stream's buffer.
		if p.sidecar, err = cp.StartSidecar(ctx, name+"-sidecar", p.sched); err != nil {
			p.stop()
			t.Fatal(err)
		}
	}
	return p
}

// stop stops every process of the run; it may be called more than once.
func (p *processes) stop() {
	if p.sidecar != nil {
		p.sidecar.Stop()
	}
	if p.sched != nil {
		p.sched.Stop()
	}
	if p.sink != nil {
		p.sink.Stop()
	}
}

// waitDone waits until the scheduler's work on the n measured pods, which
// are bound, is done: it counted an attempt for each; the sidecar has
// stored a record of each attempt, or the scheduler counted it dropped;
// the receiver got a trace of each. It asks the scheduler only for its
// metrics, rarely, so that the waiting costs it little: the sidecar and
// the receiver answer the rest.
func (p *processes) waitDone(t *testing.T, n int) {
	t.Helper()
	var attempts, dropped float64
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, families, err := framework.Scrape(p.sched.MetricsURL)
		if err != nil {
			return false, nil
		}
		a := framework.ScheduleAttempts(families, defaultProfile)
		attempts = a["scheduled"] + a["unschedulable"] + a["error"]
		if p.sidecar != nil {
			if dropped, err = framework.Counter(families, "schedscope_record_dropped_total"); err != nil {
				return false, err
			}
		}
		return a["scheduled"] >= float64(n), nil
	})
	if err != nil {
		t.Fatalf("%s: waiting for %d scheduled attempts: %v (%.0f attempts)", p.sched.Name, n, err, attempts)
	}
	var seq uint64
	if p.sidecar != nil {
		if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Minute, true, func(context.Context) (bool, error) {
			st, err := p.sidecar.Status()
			if err != nil {
				return false, nil
			}
			seq = st.Follower.Cursor.Seq
			return float64(seq)+dropped >= attempts, nil
		}); err != nil {
			t.Fatalf("%s: waiting for the sidecar to store %.0f records (%.0f dropped): %v; it reached sequence %d", p.sched.Name, attempts-dropped, dropped, err, seq)
		}
	}
	var traces int64
	if p.sink != nil {
		// A lost span or a skipped attempt is a trace that never comes:
		// check says which after the wait.
		_ = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			stats, err := p.sink.Stats()
			traces = stats.Traces
			return err == nil && float64(traces) >= attempts, nil
		})
	}
}

// measure reads the CPU time and peak RSS of the run's processes.
func (p *processes) measure(t *testing.T, r *processrun.Run) {
	t.Helper()
	r.CPUSeconds = cpuSeconds(t, p.sched.Process) - p.startup
	r.StartupCPUSeconds = p.startup
	mem, err := p.sched.Memory()
	if err != nil {
		t.Fatal(err)
	}
	r.PeakRSSBytes = mem.Peak
	if p.sidecar != nil {
		r.SidecarCPUSeconds = cpuSeconds(t, p.sidecar.Process)
		if mem, err := p.sidecar.Memory(); err == nil {
			r.SidecarPeakRSSBytes = mem.Peak
		}
	}
	if p.sink != nil {
		r.SinkCPUSeconds = cpuSeconds(t, p.sink.Process)
		if mem, err := p.sink.Memory(); err == nil {
			r.SinkPeakRSSBytes = mem.Peak
		}
	}
}

// check reads what the run's processes counted, once measured, and checks
// that the scheduler made one attempt for each pod, which bound it, and in
// the observed modes that each attempt became a record the sidecar stored
// and, tracing, a trace the receiver got: none dropped or lost.
func (p *processes) check(t *testing.T, r *processrun.Run) {
	t.Helper()
	_, families, err := framework.Scrape(p.sched.MetricsURL)
	if err != nil {
		t.Fatal(err)
	}
	attempts := framework.ScheduleAttempts(families, defaultProfile)
	r.Attempts = attempts["scheduled"] + attempts["unschedulable"] + attempts["error"]
	durations := families["scheduler_scheduling_algorithm_duration_seconds"]
	r.AlgorithmP50Seconds = framework.HistogramQuantile(durations, nil, 0.5)
	r.AlgorithmP99Seconds = framework.HistogramQuantile(durations, nil, 0.99)
	if every, ok := shadowSampleEvery[r.Mode]; ok {
		r.ShadowRuns = framework.Sum(families["schedscope_shadow_attempts_total"], map[string]string{"profile": defaultProfile, "shadow": p.shadow})
		if want := float64(r.Pods / every); r.ShadowRuns < want {
			t.Errorf("%s: %.0f shadow runs of %d attempts sampled every %d: want at least %.0f", p.sched.Name, r.ShadowRuns, r.Pods, every, want)
		}
	}
	if want := float64(r.Pods); attempts["scheduled"] != want || r.Attempts != want {
		t.Errorf("%s: attempts %v, want %d scheduled and no other", p.sched.Name, attempts, r.Pods)
	}
	for _, result := range []string{"hint_used", "hint_not_used", "no_hint"} {
		if n := framework.Sum(families["scheduler_batch_attempts_total"], map[string]string{"profile": defaultProfile, "result": result}); n != 0 {
			if r.BatchAttempts == nil {
				r.BatchAttempts = map[string]float64{}
			}
			r.BatchAttempts[result] = n
		}
	}
	if p.sidecar == nil {
		return
	}
	if r.Dropped, err = framework.Counter(families, "schedscope_record_dropped_total"); err != nil {
		t.Fatal(err)
	}
	epoch, newest, err := framework.NewestRecord(p.sched.StreamURL)
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.sidecar.Status()
	if err != nil {
		t.Fatal(err)
	}
	r.Records, r.RecordsStored, r.RecordsLost = newest, uint64(st.Store.Attempts), st.Follower.Cursor.Lost
	if r.Dropped != 0 || r.RecordsLost != 0 || float64(r.Records) != r.Attempts || r.RecordsStored != r.Records || st.Follower.Cursor.Epoch != epoch {
		t.Errorf("%s: %.0f attempts, records emitted %d (epoch %s), stored %d, lost %d, dropped %.0f (the sidecar's epoch %s): want every attempt stored",
			p.sched.Name, r.Attempts, r.Records, epoch, r.RecordsStored, r.RecordsLost, r.Dropped, st.Follower.Cursor.Epoch)
	}
	if p.sink == nil {
		return
	}
	if r.SpansLost, err = spansLost(families); err != nil {
		t.Fatal(err)
	}
	if r.TracesSkipped, err = framework.Counter(families, "schedscope_trace_attempts_skipped_total"); err != nil {
		t.Fatal(err)
	}
	stats, err := p.sink.Stats()
	if err != nil {
		t.Fatal(err)
	}
	r.Traces, r.Spans = stats.Traces, stats.Spans
	if r.SpansLost != 0 || r.TracesSkipped != 0 || float64(r.Traces) != r.Attempts {
		t.Errorf("%s: traces received %d of %.0f attempts, spans lost %.0f, attempts skipped %.0f: want every attempt traced", p.sched.Name, r.Traces, r.Attempts, r.SpansLost, r.TracesSkipped)
	}
}

// spansLost is the spans the scheduler dropped or failed to export.
func spansLost(families map[string]*dto.MetricFamily) (float64, error) {
	dropped, err := framework.Counter(families, "schedscope_trace_spans_dropped_total")
	if err != nil {
		return 0, err
	}
	failed, err := framework.Counter(families, "schedscope_trace_spans_export_failed_total")
	return dropped + failed, err
}

func cpuSeconds(t *testing.T, p *framework.Process) float64 {
	t.Helper()
	d, err := p.CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	return d.Seconds()
}

// createWorkloadNodes creates the workload's nodes and returns their names.
func createWorkloadNodes(t *testing.T, client kubernetes.Interface, w *processWorkload) []string {
	t.Helper()
	names := make([]string, w.nodes)
	g, ctx := errgroup.WithContext(t.Context())
	g.SetLimit(workers)
	for i := range w.nodes {
		node := w.makeNode(i)
		names[i] = node.Name
		g.Go(func() error {
			// A node's status may be set when it is created.
			if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating node %s: %w", node.Name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	return names
}

// createInitPods creates the pods the workload creates before the measured
// ones, bound to the nodes in turn.
func createInitPods(t *testing.T, client kubernetes.Interface, w *processWorkload, nodes []string) {
	t.Helper()
	createNamespace(t, client, initNamespace)
	next := 0
	for b, batch := range w.init {
		offset := next
		createPods(t, client, batch.count, func(i int) *v1.Pod {
			return batch.make(i, fmt.Sprintf("%d-%05d", b, i), initNamespace, nodes[(offset+i)%len(nodes)])
		})
		next += batch.count
	}
}

func createNamespace(t *testing.T, client kubernetes.Interface, ns string) {
	t.Helper()
	if _, err := client.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func initPodCount(w *processWorkload) int {
	n := 0
	for _, b := range w.init {
		n += b.count
	}
	return n
}

// createPods creates pod(0) ... pod(n-1), workers at a time.
func createPods(t *testing.T, client kubernetes.Interface, n int, pod func(int) *v1.Pod) {
	t.Helper()
	g, ctx := errgroup.WithContext(t.Context())
	g.SetLimit(workers)
	for i := range n {
		p := pod(i)
		g.Go(func() error {
			if _, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating pod %s/%s: %w", p.Namespace, p.Name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// deleteMeasured deletes the measured pods and the scheduler's events
// about them, and waits until the pods are gone: the next run starts from
// the same cluster.
func deleteMeasured(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	now := metav1.DeleteOptions{GracePeriodSeconds: new(int64)}
	// Deleting 20000 pods takes the kube-apiserver longer than its request
	// timeout: it goes on deleting after the call fails, and the call is
	// repeated until none is left.
	var lastErr error
	if err := wait.PollUntilContextTimeout(t.Context(), time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		lastErr = client.CoreV1().Pods(measuredNamespace).DeleteCollection(ctx, now, metav1.ListOptions{})
		if lastErr == nil {
			lastErr = client.EventsV1().Events(measuredNamespace).DeleteCollection(ctx, now, metav1.ListOptions{})
		}
		list, err := client.CoreV1().Pods(measuredNamespace).List(ctx, metav1.ListOptions{Limit: 1})
		return lastErr == nil && err == nil && len(list.Items) == 0, nil
	}); err != nil {
		t.Fatalf("deleting the measured pods and their events: %v (last: %v)", err, lastErr)
	}
}

func writeProcessRun(t *testing.T, r processrun.Run) {
	t.Helper()
	if *resultFile == "" {
		return
	}
	line, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(*resultFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "%s\n", line); err != nil {
		t.Fatal(err)
	}
}

// withShadow returns config with config/scheduler-binpack.yaml's profile
// added, its schedulerName, and the scheduler's flags that make it a
// shadow of config's first profile, sampled every every attempts.
func withShadow(config string, every int) (string, string, []string, error) {
	var live map[string]any
	if err := yaml.Unmarshal([]byte(config), &live); err != nil {
		return "", "", nil, fmt.Errorf("the workload's scheduler configuration: %w", err)
	}
	binpack, shadow, err := framework.BinpackProfile()
	if err != nil {
		return "", "", nil, err
	}
	profiles, _ := live["profiles"].([]any)
	if len(profiles) == 0 {
		return "", "", nil, errors.New("want a live profile in the workload's configuration; it has none")
	}
	first, _ := profiles[0].(map[string]any)
	liveName, _ := first["schedulerName"].(string)
	if liveName == "" {
		liveName = defaultProfile
	}
	live["profiles"] = append(profiles, binpack)
	out, err := yaml.Marshal(live)
	if err != nil {
		return "", "", nil, err
	}
	return string(out), shadow, []string{"--shadow-profile=" + shadow + "=" + liveName, fmt.Sprintf("--shadow-sample-every=%d", every)}, nil
}
