package scheduler

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/stream"
	"github.com/schedscope/schedscope/test/framework"
	"github.com/schedscope/schedscope/test/freeport"
)

// TestCollectorDown traces every attempt to a collector that is not there:
// all 1000 pods must still be scheduled, and the lost spans counted. How
// long it takes, compared with tracing off, is measured by make bench.
func TestCollectorDown(t *testing.T) {
	const (
		profile = "collector-down"
		pods    = 1000
	)
	closed, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	s := startDedicatedScheduler(t, profile, "--tracing-config-file="+writeTracingConfig(t, fmt.Sprintf("127.0.0.1:%d", closed)))
	ns := createNamespace(t)
	// Ten nodes of 110 pods each hold the thousand.
	var nodes []nodeSpec
	for i := range 10 {
		nodes = append(nodes, nodeSpec{name: fmt.Sprintf("collector-%d", i), cpu: "100", memory: "100Gi"})
	}
	createNodes(t, nodes...)
	start := time.Now()
	for i := range pods {
		createPod(t, st.MakePod().Namespace(ns).Name(fmt.Sprintf("p-%04d", i)).SchedulerName(profile).Obj())
	}
	if err := framework.WaitForBound(context.Background(), client, ns, pods, 5*time.Minute); err != nil {
		t.Fatalf("not every pod was bound with the collector down: %v", err)
	}
	t.Logf("collector down: %d pods bound in %s", pods, time.Since(start).Round(time.Millisecond))
	err = wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		families, err := scrape(t, s.MetricsURL).Gather()
		if err != nil {
			return false, err
		}
		var lost float64
		for _, f := range families {
			if f.GetName() == "schedscope_trace_spans_dropped_total" || f.GetName() == "schedscope_trace_spans_export_failed_total" {
				lost += f.GetMetric()[0].GetCounter().GetValue()
			}
		}
		return lost > 0, nil
	})
	if err != nil {
		t.Errorf("no lost span was counted with the collector down: %v", err)
	}
	dropped, failed := lostSpans(t, s)
	t.Logf("collector down: %.0f spans dropped, %.0f export failed, %.0f attempts not traced (skipped)", dropped, failed, skippedTraces(t, s))
}

// TestCollectorSlow traces every attempt to a collector that accepts
// connections and never answers: the gRPC handshake never completes, so
// every export waits for its deadline. All 1000 pods must be bound as
// quickly as with the collector down, every attempt must have its record,
// every attempt not traced must be counted as skipped, and every span made
// must end up counted as dropped or failed, none unaccounted for.
func TestCollectorSlow(t *testing.T) {
	const (
		profile = "collector-slow"
		pods    = 1000
	)
	collector := startSilentCollector(t)
	s := startDedicatedScheduler(t, profile, "--record-buffer-size=20000", "--record-buffer-bytes=1073741824", "--tracing-config-file="+writeTracingConfig(t, collector.Addr))
	ns := createNamespace(t)
	var nodes []nodeSpec
	for i := range 10 {
		nodes = append(nodes, nodeSpec{name: fmt.Sprintf("collector-slow-%d", i), cpu: "100", memory: "100Gi"})
	}
	createNodes(t, nodes...)

	// Created as TestCollectorDown creates them, for comparable times.
	start := time.Now()
	for i := range pods {
		createPod(t, st.MakePod().Namespace(ns).Name(fmt.Sprintf("p-%04d", i)).SchedulerName(profile).Obj())
	}
	if err := framework.WaitForBound(t.Context(), client, ns, pods, 5*time.Minute); err != nil {
		t.Fatalf("not every pod was bound with the collector hanging: %v", err)
	}
	bound := time.Since(start)
	recs := waitForScheduledRecords(t, s, ns, "p-", pods)
	untraced := 0
	for _, rec := range recs {
		if rec.TraceID == "" {
			untraced++
		}
	}
	// Each attempt is traced at 100% sampling unless skipped.
	if skipped := skippedTraces(t, s); skipped != float64(untraced) {
		t.Errorf("%d of %d records have no trace ID, but %.0f attempts were counted as skipped", untraced, len(recs), skipped)
	}
	if untraced == 0 {
		t.Errorf("every attempt was traced while exports hung: the tracer made spans it could not export")
	}
	t.Logf("collector hanging: %d pods bound in %s, %d records, %d of them not traced (skipped)", pods, bound.Round(time.Millisecond), len(recs), untraced)

	// The queue drains one batch per export deadline; wait until every span
	// the scheduler made is counted as lost.
	var created int
	var dropped, failed float64
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, 4*time.Minute, true, func(context.Context) (bool, error) {
		_, created = tracedSpansOf(t, s)
		dropped, failed = lostSpans(t, s)
		if dropped+failed > float64(created) {
			return false, fmt.Errorf("%.0f spans counted as lost, more than the %d made", dropped+failed, created)
		}
		return dropped+failed == float64(created), nil
	})
	t.Logf("collector hanging: %d spans made, %.0f dropped, %.0f export failed, %s after the first pod was created; %d connections accepted and never answered",
		created, dropped, failed, time.Since(start).Round(time.Millisecond), collector.Accepted())
	if err != nil {
		t.Errorf("%d spans made, %.0f dropped + %.0f failed: not every span was counted as lost: %v", created, dropped, failed, err)
	}
	if failed == 0 {
		t.Errorf("no export failed against a collector that never answers")
	}
	expectAlive(t, s)
}

// TestCollectorRestart stops the collector and starts it again on the same
// address, with the scheduler running all along: spans arrive before the
// stop, are counted as lost while it is down, and arrive again once it is
// back, without restarting the scheduler. Every span made is received or
// counted as lost.
func TestCollectorRestart(t *testing.T) {
	const (
		profile = "collector-restart"
		batch   = 200
	)
	port, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	first, err := framework.StartOTLPReceiverAt(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Stop()
	s := startDedicatedScheduler(t, profile, "--record-buffer-size=20000", "--record-buffer-bytes=1073741824", "--tracing-config-file="+writeTracingConfig(t, addr))
	ns := createNamespace(t)
	var nodes []nodeSpec
	for i := range 8 {
		nodes = append(nodes, nodeSpec{name: fmt.Sprintf("collector-restart-%d", i), cpu: "100", memory: "100Gi"})
	}
	createNodes(t, nodes...)
	createBatch := func(prefix string, n, boundBefore int) time.Duration {
		t.Helper()
		start := time.Now()
		if err := framework.CreatePods(t.Context(), client, ns, profile, n, func(i int) string { return fmt.Sprintf("%s%04d", prefix, i) }); err != nil {
			t.Fatal(err)
		}
		if err := framework.WaitForBound(t.Context(), client, ns, boundBefore+n, 2*time.Minute); err != nil {
			t.Fatalf("batch %s: %v", prefix, err)
		}
		return time.Since(start)
	}

	// 1. The collector is up: every trace arrives whole.
	took := createBatch("a-", batch, 0)
	expectReceived(t, first, waitForScheduledRecords(t, s, ns, "a-", batch))
	if dropped, failed := lostSpans(t, s); dropped+failed != 0 {
		t.Errorf("collector up: %.0f spans dropped, %.0f failed, want none", dropped, failed)
	}
	t.Logf("collector up: %d pods bound in %s, %d spans received", batch, took.Round(time.Millisecond), first.SpanCount())

	// 2. The collector is down: the pods are bound and the spans counted
	// as lost.
	first.Stop()
	received := first.SpanCount()
	took = createBatch("b-", batch, batch)
	waitForScheduledRecords(t, s, ns, "b-", batch)
	var dropped, failed float64
	if err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		dropped, failed = lostSpans(t, s)
		return failed > 0, nil
	}); err != nil {
		t.Fatalf("collector down: no failed export counted: %v", err)
	}
	t.Logf("collector down: %d pods bound in %s, %.0f spans dropped, %.0f failed so far", batch, took.Round(time.Millisecond), dropped, failed)

	// 3. The collector is back on the same address. Pods arrive one every
	// 100ms until a span does, then a burst whose traces must all arrive.
	second, err := framework.StartOTLPReceiverAt(addr)
	if err != nil {
		t.Fatalf("starting the collector again on %s: %v", addr, err)
	}
	defer second.Stop()
	restarted := time.Now()
	trickle := 0
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		if second.SpanCount() > 0 {
			return true, nil
		}
		createPod(t, st.MakePod().Namespace(ns).Name(fmt.Sprintf("c-%04d", trickle)).SchedulerName(profile).Obj())
		trickle++
		return false, nil
	}); err != nil {
		t.Fatalf("no span received within 3m of the collector's restart (%d pods created meanwhile): exports did not resume: %v", trickle, err)
	}
	resumed := time.Since(restarted)
	t.Logf("collector restarted: first span received %s after the restart (%d pods created meanwhile)", resumed.Round(time.Millisecond), trickle)
	took = createBatch("d-", batch, 2*batch+trickle)
	expectReceived(t, second, waitForScheduledRecords(t, s, ns, "d-", batch))
	t.Logf("collector back: %d pods bound in %s, all their traces received", batch, took.Round(time.Millisecond))

	// Every span made is received or counted as lost.
	var created int
	err = wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, created = tracedSpansOf(t, s)
		dropped, failed = lostSpans(t, s)
		received = first.SpanCount() + second.SpanCount()
		return float64(received)+dropped+failed == float64(created), nil
	})
	t.Logf("collector restart: %d spans made, %d received (%d before the stop, %d after the restart), %.0f dropped, %.0f export failed",
		created, received, first.SpanCount(), second.SpanCount(), dropped, failed)
	if err != nil {
		t.Errorf("%d spans made but %d received + %.0f dropped + %.0f failed: %v", created, received, dropped, failed, err)
	}
	expectAlive(t, s)
}

func startSilentCollector(t *testing.T) *framework.SilentCollector {
	t.Helper()
	c, err := framework.StartSilentCollector()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// writeTracingConfig writes a TracingConfiguration for endpoint at 100%
// sampling and returns its path.
func writeTracingConfig(t *testing.T, endpoint string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tracing.yaml")
	if err := os.WriteFile(path, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: "+endpoint+"\nsamplingRatePerMillion: 1000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// lostSpans returns schedscope_trace_spans_dropped_total and
// schedscope_trace_spans_export_failed_total from s's /metrics.
func lostSpans(t *testing.T, s *framework.Scheduler) (dropped, failed float64) {
	t.Helper()
	_, families, err := framework.Scrape(s.MetricsURL)
	if err != nil {
		t.Fatal(err)
	}
	return framework.Sum(families["schedscope_trace_spans_dropped_total"], nil), framework.Sum(families["schedscope_trace_spans_export_failed_total"], nil)
}

// skippedTraces returns schedscope_trace_attempts_skipped_total from s's
// /metrics.
func skippedTraces(t *testing.T, s *framework.Scheduler) float64 {
	t.Helper()
	_, families, err := framework.Scrape(s.MetricsURL)
	if err != nil {
		t.Fatal(err)
	}
	return framework.Sum(families["schedscope_trace_attempts_skipped_total"], nil)
}

// tracedSpans is the number of spans the tracer makes of rec, as the span
// model of docs/tracing.md has it: the attempt, its queue wait if it
// waited, the scheduling cycle, the binding cycle if there was one, and one
// span per extension point run.
func tracedSpans(rec stream.Record) int {
	if rec.TraceID == "" {
		return 0
	}
	a := rec.Attempt
	n := 2 + len(a.Points)
	if !a.Timing.Queued.IsZero() && a.Timing.QueueWait > 0 {
		n++
	}
	if a.Timing.BindingCycle > 0 {
		n++
	}
	return n
}

// tracedSpansOf returns the records of s, every one it made, and the spans
// traced for them.
func tracedSpansOf(t *testing.T, s *framework.Scheduler) ([]stream.Record, int) {
	t.Helper()
	l, err := framework.ListRecords(s.StreamURL)
	if err != nil {
		t.Fatal(err)
	}
	if l.Oldest > 1 {
		t.Fatalf("the record stream evicted records %d to %d: the spans made can no longer be counted", 1, l.Oldest-1)
	}
	spans := 0
	for _, rec := range l.Items {
		spans += tracedSpans(rec)
	}
	return l.Items, spans
}

// waitForScheduledRecords waits until s has a scheduled record for n pods
// of namespace ns whose name starts with prefix, and returns them by pod
// name.
func waitForScheduledRecords(t *testing.T, s *framework.Scheduler, ns, prefix string, n int) map[string]stream.Record {
	t.Helper()
	recs := map[string]stream.Record{}
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		l, err := framework.ListRecords(s.StreamURL)
		if err != nil {
			return false, err
		}
		clear(recs)
		for _, rec := range l.Items {
			if a := rec.Attempt; a.Pod.Namespace == ns && strings.HasPrefix(a.Pod.Name, prefix) && a.Result == record.ResultScheduled {
				recs[a.Pod.Name] = rec
			}
		}
		return len(recs) >= n, nil
	})
	if err != nil {
		t.Fatalf("%d of %d pods %s* have a scheduled record: %v", len(recs), n, prefix, err)
	}
	return recs
}

// expectReceived waits until r has received every span of the traces of
// recs, each of which must have been traced.
func expectReceived(t *testing.T, r *framework.OTLPReceiver, recs map[string]stream.Record) {
	t.Helper()
	var incomplete []string
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		counts := r.SpanCounts()
		incomplete = incomplete[:0]
		for name, rec := range recs {
			if rec.TraceID == "" {
				incomplete = append(incomplete, name+": not traced")
				continue
			}
			if got, want := counts[rec.TraceID], tracedSpans(rec); got != want {
				incomplete = append(incomplete, fmt.Sprintf("%s: %d of %d spans", name, got, want))
			}
		}
		return len(incomplete) == 0, nil
	})
	if err != nil {
		sort.Strings(incomplete)
		t.Errorf("%d of %d traces not received whole, e.g. %v: %v", len(incomplete), len(recs), incomplete[:min(5, len(incomplete))], err)
	}
}

// expectAlive checks that s still runs and answers /healthz.
func expectAlive(t *testing.T, s *framework.Scheduler) {
	t.Helper()
	if s.Exited() {
		t.Fatalf("the scheduler exited: %v\n%s", s.Wait(0), s.Tail())
	}
	if _, err := framework.GetWithToken(s.HealthURL); err != nil {
		t.Errorf("the scheduler is not healthy: %v", err)
	}
}

// TestTracingResourceOverTLS runs the scheduler with the tracing flags
// against a receiver that serves TLS and requires a client certificate:
// every span arrives, under the resource that the flags and the
// environment (OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME) give.
func TestTracingResourceOverTLS(t *testing.T) {
	const profile = "tracing-tls"
	pki, err := framework.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	collector, err := framework.StartOTLPReceiverTLS(pki)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(collector.Stop)
	// The scheduler inherits the test's environment.
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "k8s.pod.name=schedscope-0,deployment.environment.name=integration")
	t.Setenv("OTEL_SERVICE_NAME", "schedscope-scheduler-tls")
	s := startDedicatedScheduler(t, profile, "--tracing-config-file="+writeTracingConfig(t, collector.Addr),
		"--tracing-cluster-name=east-1", "--tracing-ca-file="+pki.CAFile,
		"--tracing-client-cert-file="+pki.ClientCertFile, "--tracing-client-key-file="+pki.ClientKeyFile)
	ns := createNamespace(t)
	createNodes(t, nodeSpec{name: "tracing-tls-node", cpu: "100", memory: "100Gi"})
	createPod(t, st.MakePod().Namespace(ns).Name("traced").SchedulerName(profile).Obj())
	recs := waitForScheduledRecords(t, s, ns, "traced", 1)
	expectReceived(t, collector, recs)

	got := collector.ResourceAttributes()
	if got["service.instance.id"] == "" || got["service.version"] == "" {
		t.Errorf("resource without service.instance.id or service.version: %v", got)
	}
	want := map[string]string{
		"service.name":                "schedscope-scheduler-tls",
		"k8s.cluster.name":            "east-1",
		"k8s.pod.name":                "schedscope-0",
		"deployment.environment.name": "integration",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("resource attribute %s = %q, want %q (resource %v)", k, got[k], v, got)
		}
	}
	if _, failed := lostSpans(t, s); failed != 0 {
		t.Errorf("%.0f spans failed to export over TLS", failed)
	}
}
