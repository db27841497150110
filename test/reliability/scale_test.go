//go:build reliability

package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/stream"
	"github.com/schedscope/schedscope/test/framework"
)

const (
	nodeCount = 5000
	podCount  = 10000
	// Each scheduler runs the default profile under its own name.
	plainProfile = "plain"
	scopeProfile = "schedscope"
	// workers bounds the concurrent requests that create nodes and delete
	// pods.
	workers = 32
)

// TestScale5000Nodes10000Pods schedules 10000 pods onto 5000 Ready nodes,
// first with plain kube-scheduler, then, once those pods are deleted, with
// schedscope-scheduler and its sidecar; both run the default profile. Each
// scheduler starts with its 10000 pods already pending, so that it works
// at its own pace, not at the pace the pods are created. The test checks
// that every pod is bound exactly once, and that no record is lost
// between schedscope and the sidecar's store, counted end to end: the
// attempts the scheduler made (upstream's scheduler_schedule_attempts_total),
// the records it emitted (the stream's last sequence) and the records the
// sidecar stored or counted as lost must agree, with none dropped before
// the stream and none lost after it, while hostile readers ask the
// sidecar's API for its most expensive answers (abuse_test.go) and /readyz
// stays fast. It reports both schedulers' peak resident memory, their bind
// times and rates, the sidecar's lag and peak memory, and the abusive
// requests' answers.
//
// The stream buffer keeps its default size: a sidecar that falls further
// behind than the buffer holds loses records, and the test fails with the
// rates measured.
func TestScale5000Nodes10000Pods(t *testing.T) {
	cp := framework.StartTestControlPlane(t)
	client := fastClient(t, cp)

	began := time.Now()
	framework.CreateNodes(t, client, nodeCount)
	t.Logf("%d Ready nodes created in %v", nodeCount, time.Since(began).Round(time.Millisecond))

	// The baseline: plain kube-scheduler. Its pods are deleted before
	// schedscope's are created, so that both schedulers start from 5000
	// nodes and 10000 pending pods.
	plainRun := createPods(t, client, "plain", plainProfile)
	plainRun.started = time.Now()
	plain := startScheduler(t, cp, "kube-scheduler", plainProfile)
	waitBound(t, plainRun, plain, nil)
	plainMem := memory(t, plain.Process)
	plainCPU := cpuTime(t, plain.Process)
	plainAttempts := settledAttempts(t, plain, plainProfile)
	checkRun(t, plainRun, plainAttempts)
	t.Logf("plain kube-scheduler: %s; peak RSS %s", plainRun, mib(plainMem.Peak))
	deleted := time.Now()
	deletePods(t, client, plainRun)
	t.Logf("%d pods of plain kube-scheduler deleted in %v", podCount, time.Since(deleted).Round(time.Millisecond))
	plain.Stop()
	plainRun.pods.Stop()

	// schedscope-scheduler with its sidecar, started right after it: the
	// sidecar's first list must still find the first record in the
	// buffer, or the records before it count as lost. Bookmarks every
	// second let the stream client's Head read the stream's last sequence
	// quickly.
	scopeRun := createPods(t, client, "schedscope", scopeProfile)
	scopeRun.started = time.Now()
	scope := startScheduler(t, cp, "schedscope-scheduler", scopeProfile, "--record-stream-bookmark-interval=1s")
	sc, err := cp.StartSidecar(t.Context(), "schedscope-sidecar", scope)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sc.Stop)
	// Hostile readers ask the sidecar for its most expensive answers for
	// as long as the burst lasts: ingest must lose nothing meanwhile.
	abusers := startAbuse(sc.URL, cp.Config.BearerToken, framework.ViewerToken)
	// Scheduling may have begun: the list holds its first records, if any.
	initial, err := framework.ListRecords(scope.StreamURL)
	if err != nil {
		t.Fatal(err)
	}
	if initial.Epoch == "" {
		t.Fatalf("schedscope-scheduler's stream has no epoch: %+v", initial)
	}
	epoch := initial.Epoch
	schedPid := scope.Pid()

	// While the pods are bound, sample how far the sidecar's store is
	// behind the bindings (a record follows its pod's binding closely).
	var maxLag, lagSamples int
	waitBound(t, scopeRun, scope, func(bound int) {
		st, err := sc.Status()
		if err != nil {
			return
		}
		lagSamples++
		maxLag = max(maxLag, bound-int(st.Follower.Cursor.Seq))
	})
	if scope.Exited() || scope.Pid() != schedPid {
		t.Fatalf("schedscope-scheduler restarted or exited during the run:\n%s", scope.Tail())
	}

	t.Logf("schedscope-scheduler: %s", scopeRun)

	// Each attempt becomes a record a moment after it is counted: wait
	// until the stream's last sequence and the drops account for every
	// attempt upstream counted, then until the sidecar's cursor reaches
	// that sequence, each record before it stored or counted as lost.
	var (
		settled                bool
		head, dropped, evicted float64
		scopeAttempts          map[string]float64
		st                     *framework.SidecarStatus
		caughtUp               time.Time
	)
	if err := poll(t, 200*time.Millisecond, 10*time.Minute, func(ctx context.Context) (bool, error) {
		if sc.Exited() {
			return false, fmt.Errorf("the sidecar exited: %v\n%s", sc.Wait(0), sc.Tail())
		}
		if !settled {
			families := scrape(t, scope)
			scopeAttempts = framework.ScheduleAttempts(families, scopeProfile)
			dropped = counter(t, families, "schedscope_record_dropped_total")
			evicted = counter(t, families, "schedscope_record_buffer_evicted_total")
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			c, err := stream.NewClient(scope.StreamURL, nil)
			if err != nil {
				return false, err
			}
			seq, err := c.Head(ctx, epoch)
			if err != nil {
				return false, err
			}
			head = float64(seq)
			settled = scopeAttempts["scheduled"] >= podCount && head+dropped == total(scopeAttempts)
		}
		s, err := sc.Status()
		if err != nil {
			return false, nil
		}
		st = s
		caughtUp = time.Now()
		return settled && st.Follower.Cursor.Epoch == epoch && st.Follower.Cursor.Seq == uint64(head), nil
	}); err != nil {
		if !settled {
			t.Fatalf("waiting for every attempt to be emitted or dropped: %v; attempts %v, emitted %.0f, dropped %.0f", err, scopeAttempts, head, dropped)
		}
		t.Fatalf("waiting for the sidecar to reach sequence %.0f of epoch %s: %v; last status %+v", head, epoch, err, st)
	}
	emitted := uint64(head)
	abusers.stop(t)
	scopeMem, scopeCPU := memory(t, scope.Process), cpuTime(t, scope.Process)
	sidecarMem, sidecarCPU := memory(t, sc.Process), cpuTime(t, sc.Process)
	stored, lost := uint64(st.Store.Attempts), st.Follower.Cursor.Lost

	checkRun(t, scopeRun, scopeAttempts)
	if dropped != 0 {
		t.Errorf("schedscope_record_dropped_total %.0f: attempts that never became records", dropped)
	}
	ingest := float64(stored) / caughtUp.Sub(scopeRun.firstBind).Seconds()
	if stored+lost != emitted {
		t.Errorf("records emitted %d != stored %d + lost %d", emitted, stored, lost)
	}
	if lost != 0 {
		t.Errorf("%d of %d records lost between the scheduler and the sidecar's store (%d relists): the sidecar stored %.1f records/s from the first binding on, while the scheduler bound %.1f pods/s; its lag behind the bindings reached %d records, the stream buffers %d",
			lost, emitted, st.Follower.Relists, ingest, scopeRun.rate(), maxLag, stream.DefaultBufferSize)
	}
	checkStored(t, sc, scopeRun, epoch)
	if sidecarMem.Peak > maxSidecarRSS {
		t.Errorf("the sidecar's peak RSS %s under abuse, want at most %s", mib(sidecarMem.Peak), mib(maxSidecarRSS))
	}

	t.Logf("peak RSS: schedscope-scheduler %s, plain kube-scheduler %s: ratio %.2f, overhead %s (the stream buffer holds %d records, %.0f evicted); the sidecar's peak RSS %s",
		mib(scopeMem.Peak), mib(plainMem.Peak), float64(scopeMem.Peak)/float64(plainMem.Peak), mib(scopeMem.Peak-plainMem.Peak), stream.DefaultBufferSize, evicted, mib(sidecarMem.Peak))
	t.Logf("bind time from the scheduler's start to the last binding: schedscope %v, plain %v: ratio %.2f; from the first binding to the last: schedscope %.1f pods/s, plain %.1f pods/s: ratio %.2f",
		scopeRun.bindTime().Round(time.Millisecond), plainRun.bindTime().Round(time.Millisecond), scopeRun.bindTime().Seconds()/plainRun.bindTime().Seconds(),
		scopeRun.rate(), plainRun.rate(), scopeRun.rate()/plainRun.rate())
	t.Logf("CPU time, start to caught up: schedscope-scheduler %v (%.1f ms a pod), plain kube-scheduler to its last binding %v (%.1f ms a pod): ratio %.2f; the sidecar %v (%.1f ms a record)",
		scopeCPU.Round(10*time.Millisecond), msPer(scopeCPU, podCount), plainCPU.Round(10*time.Millisecond), msPer(plainCPU, podCount), scopeCPU.Seconds()/plainCPU.Seconds(),
		sidecarCPU.Round(10*time.Millisecond), msPer(sidecarCPU, int(stored)))
	perAttempt := "not reported"
	if st.Store.Attempts > 0 {
		perAttempt = fmt.Sprintf("%.1f kB", float64(st.Store.Bytes)/float64(st.Store.Attempts)/1000)
	}
	t.Logf("records: attempts %.0f, emitted %d = stored %d + lost %d, dropped %.0f; the sidecar caught up %v after the last binding, its lag behind the bindings reached %d records (%d samples, one a second), it stored %.1f records/s from the first binding on; the last record is %.1f kB of JSON in the stream; stored (zstd) bytes per attempt %s",
		total(scopeAttempts), emitted, stored, lost, dropped, caughtUp.Sub(scopeRun.lastBind).Round(time.Millisecond), maxLag, lagSamples, ingest, float64(recordSize(t, scope, epoch, emitted))/1000, perAttempt)
	t.Logf("total %v", time.Since(began).Round(time.Second))
}

// run is one scheduler's pass over the workload.
type run struct {
	ns   string
	pods *framework.PodWatch
	// created is how long creating the pods took; started is when the
	// scheduler was started; firstBind and lastBind are when the informer
	// saw the first and the last pod bound.
	created                      time.Duration
	started, firstBind, lastBind time.Time
}

// bindTime is the time from the scheduler's start to the last binding.
func (r *run) bindTime() time.Duration { return r.lastBind.Sub(r.started) }

// rate is the pods bound per second from the first binding to the last.
func (r *run) rate() float64 { return (podCount - 1) / r.lastBind.Sub(r.firstBind).Seconds() }

func (r *run) String() string {
	return fmt.Sprintf("%d pending pods (created in %v) all bound %v after the scheduler was started, the first after %v: %.1f pods/s from the first binding to the last",
		podCount, r.created.Round(time.Millisecond), r.bindTime().Round(time.Millisecond), r.firstBind.Sub(r.started).Round(time.Millisecond), r.rate())
}

// checkRun checks that the scheduler made exactly one attempt per pod of
// r, which bound it: a second binding of a bound pod would fail, and count
// as an error.
func checkRun(t *testing.T, r *run, attempts map[string]float64) {
	t.Helper()
	if want := map[string]float64{"scheduled": podCount, "unschedulable": 0, "error": 0}; !maps.Equal(attempts, want) {
		t.Errorf("%s: the scheduler counted attempts %v, want %v", r.ns, attempts, want)
	}
}

// checkStored checks that the sidecar holds one record of each pod of r,
// its first attempt, which bound the pod to the node it is on.
func checkStored(t *testing.T, sc *framework.Sidecar, r *run, epoch string) {
	t.Helper()
	pods, err := sc.Pods(r.ns)
	if err != nil {
		t.Fatal(err)
	}
	wrong := 0
	for _, p := range pods {
		node := r.pods.Node(p.Pod.Name)
		l := p.Latest
		if l.Epoch == epoch && l.Attempt == 1 && l.Result == v1alpha1.ResultScheduled && l.SelectedNode == node && node != "" {
			continue
		}
		if wrong++; wrong <= 10 {
			t.Errorf("the sidecar's latest record of pod %s: epoch %s, attempt %d, %s on %q (%s); want epoch %s, attempt 1, scheduled on %q",
				p.Pod.Name, l.Epoch, l.Attempt, l.Result, l.SelectedNode, l.Message, epoch, node)
		}
	}
	if wrong > 10 {
		t.Errorf("... and %d more pods with a wrong record", wrong-10)
	}
	if len(pods) != podCount {
		t.Errorf("the sidecar holds records of %d pods of %s, want %d", len(pods), r.ns, podCount)
	}
}

// createPods creates podCount pending pods for profile in a new namespace
// ns, workers at a time, with an informer following them. The pods request
// nothing: a node's pod capacity is what limits them.
func createPods(t *testing.T, client kubernetes.Interface, ns, profile string) *run {
	t.Helper()
	if _, err := client.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := &run{ns: ns, pods: watchPods(t, client, ns)}
	began := time.Now()
	g, ctx := errgroup.WithContext(t.Context())
	g.SetLimit(workers)
	for i := range podCount {
		g.Go(func() error {
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: podName(i), Namespace: ns},
				Spec:       v1.PodSpec{SchedulerName: profile, Containers: []v1.Container{{Name: "pause", Image: framework.PauseImage}}},
			}
			if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating pod %s/%s: %w", ns, pod.Name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	r.created = time.Since(began)
	if bound := r.pods.Bound(); bound != 0 {
		t.Fatalf("%d pods of %s bound before their scheduler started", bound, ns)
	}
	return r
}

// waitBound waits until the informer has seen every pod of r bound by s.
// tick, if set, runs every second meanwhile with the number bound.
func waitBound(t *testing.T, r *run, s *framework.Scheduler, tick func(bound int)) {
	t.Helper()
	if err := poll(t, time.Second, 30*time.Minute, func(context.Context) (bool, error) {
		if s.Exited() {
			return false, fmt.Errorf("%s exited: %v\n%s", s.Name, s.Wait(0), s.Tail())
		}
		bound := r.pods.Bound()
		if tick != nil {
			tick(bound)
		}
		return bound == podCount, nil
	}); err != nil {
		bound := r.pods.Bound()
		t.Fatalf("%s: %d of %d pods bound: %v", r.ns, bound, podCount, err)
	}
	r.firstBind, r.lastBind = r.pods.BindTimes()
}

// deletePods deletes the pods of r, workers at a time, with grace period 0
// (no kubelet runs to end them, and no controller-manager to empty a
// deleted namespace), and waits until the informer has seen them go.
func deletePods(t *testing.T, client kubernetes.Interface, r *run) {
	t.Helper()
	g, ctx := errgroup.WithContext(t.Context())
	g.SetLimit(workers)
	now := metav1.DeleteOptions{GracePeriodSeconds: new(int64)}
	for i := range podCount {
		g.Go(func() error {
			if err := client.CoreV1().Pods(r.ns).Delete(ctx, podName(i), now); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting pod %s/%s: %w", r.ns, podName(i), err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := poll(t, 200*time.Millisecond, 5*time.Minute, func(context.Context) (bool, error) {
		return r.pods.Len() == 0, nil
	}); err != nil {
		t.Fatalf("%d pods of %s left after deleting them: %v", r.pods.Len(), r.ns, err)
	}
}

func podName(i int) string { return fmt.Sprintf("pod-%05d", i) }

// fastClient returns framework.FastClient of the control plane.
func fastClient(t *testing.T, cp *framework.ControlPlane) kubernetes.Interface {
	t.Helper()
	c, err := framework.FastClient(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// watchPods starts a framework.PodWatch of namespace ns, stopped when the
// test ends.
func watchPods(t *testing.T, client kubernetes.Interface, ns string) *framework.PodWatch {
	t.Helper()
	w, err := framework.WatchPods(t.Context(), client, ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// startScheduler starts binary with the default profile under profile.
func startScheduler(t *testing.T, cp *framework.ControlPlane, binary, profile string, extra ...string) *framework.Scheduler {
	t.Helper()
	s, err := cp.StartScheduler(t.Context(), binary, binary, framework.SchedulerConfig(profile), extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func memory(t *testing.T, p *framework.Process) framework.Memory {
	t.Helper()
	m, err := p.Memory()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func cpuTime(t *testing.T, p *framework.Process) time.Duration {
	t.Helper()
	d, err := p.CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func msPer(d time.Duration, n int) float64 { return d.Seconds() * 1000 / float64(n) }

// recordSize returns the size of the JSON of record seq of the stream, as
// a list of that record alone serves it.
func recordSize(t *testing.T, s *framework.Scheduler, epoch string, seq uint64) int {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("%s?%s=%d&%s=%s", s.StreamURL, stream.ParamSince, seq-1, stream.ParamEpoch, epoch))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l struct {
		Items []struct {
			Object json.RawMessage `json:"object"`
		} `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatalf("record %d of the stream: %s: %v", seq, resp.Status, err)
	}
	if len(l.Items) != 1 {
		t.Fatalf("record %d of the stream: %d items", seq, len(l.Items))
	}
	return len(l.Items[0].Object)
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// scrape returns the metric families a scheduler serves now.
func scrape(t *testing.T, s *framework.Scheduler) map[string]*dto.MetricFamily {
	t.Helper()
	_, families, err := framework.Scrape(s.MetricsURL)
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// settledAttempts returns framework.ScheduleAttempts once the scheduler has counted
// podCount scheduled attempts: it counts each a moment after the binding.
func settledAttempts(t *testing.T, s *framework.Scheduler, profile string) map[string]float64 {
	t.Helper()
	var attempts map[string]float64
	// On timeout the last count is returned, for checkRun to report.
	_ = poll(t, 200*time.Millisecond, 30*time.Second, func(context.Context) (bool, error) {
		attempts = framework.ScheduleAttempts(scrape(t, s), profile)
		return attempts["scheduled"] >= podCount, nil
	})
	return attempts
}

func total(attempts map[string]float64) float64 {
	var n float64
	for _, v := range attempts {
		n += v
	}
	return n
}

// counter returns the value of an unlabelled counter, failing the test
// when the scheduler does not serve it.
func counter(t *testing.T, families map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	v, err := framework.Counter(families, name)
	if err != nil {
		t.Fatalf("the scheduler: %v", err)
	}
	return v
}

// poll waits with wait.PollUntilContextTimeout until cond holds.
func poll(t *testing.T, interval, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	return wait.PollUntilContextTimeout(t.Context(), interval, timeout, true, cond)
}
