package jaeger

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/scheduler/tracing"
	"github.com/schedscope/schedscope/pkg/stream"
	"github.com/schedscope/schedscope/test/framework"
)

// TestScheduledPodInJaeger runs the real chain: a pod created on a real
// kube-apiserver is scheduled by schedscope-scheduler, which traces the
// attempt to a real Jaeger. The trace, found in Jaeger by the pod's name,
// must be the one the decision record names, a trace of the scheduler's
// own linked to the caller's span from the pod's traceparent annotation,
// with the queue wait, the extension points and the binding cycle inside
// the attempt. The scheduler finds Jaeger through the configuration
// file's endpoint, over OTLP gRPC, or through OTEL_EXPORTER_OTLP_ENDPOINT
// in its environment, over OTLP/HTTP.
func TestScheduledPodInJaeger(t *testing.T) {
	const header = "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: 1000000\n"
	for _, tt := range []struct {
		name string
		// config returns the tracing configuration file and the
		// scheduler's environment for Jaeger j.
		config func(j *jaegerProcess) (file string, env map[string]string)
	}{
		{
			name: "grpc endpoint from the file",
			config: func(j *jaegerProcess) (string, map[string]string) {
				return header + "endpoint: " + j.otlpGRPC + "\n", nil
			},
		},
		{
			name: "http endpoint from the environment",
			config: func(j *jaegerProcess) (string, map[string]string) {
				return header + "protocol: http/protobuf\n", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + j.otlpHTTP}
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			j := startJaeger(t)
			file, env := tt.config(j)
			for name, value := range env {
				t.Setenv(name, value)
			}
			testScheduledPodInJaeger(t, j, file)
		})
	}
}

// testScheduledPodInJaeger schedules a pod with schedscope-scheduler
// tracing to j as the tracing configuration file config says, and checks
// its trace in j.
func testScheduledPodInJaeger(t *testing.T, j *jaegerProcess, config string) {
	ctx := context.Background()
	dir := t.TempDir()
	cp, err := framework.StartControlPlane(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	tracingConfig := filepath.Join(dir, "tracing.yaml")
	if err := os.WriteFile(tracingConfig, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	schedulerConfig := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: false\nprofiles:\n- schedulerName: schedscope\n"
	sched, err := cp.StartScheduler(ctx, "schedscope-scheduler", "schedscope-scheduler", schedulerConfig, "--tracing-config-file="+tracingConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Stop()

	for _, n := range []struct {
		name   string
		taints []v1.Taint
	}{{"jaeger-node", nil}, {"jaeger-tainted", []v1.Taint{{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule}}}, {"jaeger-node-2", nil}} {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name}, Spec: v1.NodeSpec{Taints: n.taints}}
		capacity := v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi")}
		if err := framework.CreateNode(ctx, cp.Client, node, capacity); err != nil {
			t.Fatal(err)
		}
	}

	const (
		callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		callerSpan  = "00f067aa0ba902b7"
	)
	from := time.Now().Add(-time.Minute)
	pod, err := cp.Client.CoreV1().Pods("default").Create(ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "traced-web", Annotations: map[string]string{
			tracing.TraceparentAnnotation: "00-" + callerTrace + "-" + callerSpan + "-01",
		}},
		Spec: v1.PodSpec{SchedulerName: "schedscope", Containers: []v1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	var rec *stream.Record
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := framework.ListRecords(sched.StreamURL)
		if err != nil {
			return false, err
		}
		for _, r := range l.Items {
			if r.Attempt.Pod.UID == string(pod.UID) && r.Attempt.Result == record.ResultScheduled {
				rec = &r
			}
		}
		return rec != nil, nil
	}); err != nil {
		t.Fatalf("no scheduled record of %s: %v", pod.Name, err)
	}
	if rec.TraceID == "" || sameTraceID(rec.TraceID, callerTrace) {
		t.Errorf("record's trace ID %q, want one of the scheduler's, not the caller's %s", rec.TraceID, callerTrace)
	}

	var found jaegerTrace
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		traces, err := j.findTraces(ctx, map[string]string{"k8s.pod.name": pod.Name}, from, time.Now().Add(time.Minute))
		if err != nil {
			return false, err
		}
		for _, tr := range traces {
			if _, ok := tr.span(tracing.SpanBindingCycle); ok && sameTraceID(tr.TraceID, rec.TraceID) {
				found = tr
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("Jaeger has no complete trace %s of %s: %v", rec.TraceID, pod.Name, err)
	}
	root, ok := found.span(tracing.SpanAttempt)
	if !ok {
		t.Fatalf("trace has no %s span: %v", tracing.SpanAttempt, found.tree())
	}
	linked := false
	for _, ref := range root.References {
		linked = linked || (sameTraceID(ref.TraceID, callerTrace) && ref.SpanID == callerSpan)
	}
	if !linked {
		t.Errorf("root's references %+v do not reach the caller's span %s/%s", root.References, callerTrace, callerSpan)
	}
	if got := root.tag("k8s.node.name"); got != rec.Attempt.SelectedNode {
		t.Errorf("root k8s.node.name = %v, want the selected node %s", got, rec.Attempt.SelectedNode)
	}
	for _, name := range []string{tracing.SpanQueueWait, tracing.SpanSchedulingCycle, record.PreFilter, record.Filter, record.Score, record.Reserve, record.Permit, tracing.SpanBindingCycle, record.Bind} {
		s, ok := found.span(name)
		if !ok {
			t.Errorf("trace has no %s span: %v", name, found.tree())
			continue
		}
		// Jaeger rounds each span's start and duration to microseconds.
		const rounding = 2 * time.Microsecond
		if s.start().Before(root.start().Add(-rounding)) || s.end().After(root.end().Add(rounding)) {
			t.Errorf("%s [%s, %s] is not inside the attempt [%s, %s]", name, s.start(), s.end(), root.start(), root.end())
		}
	}
	queue, _ := found.span(tracing.SpanQueueWait)
	cycle, _ := found.span(tracing.SpanSchedulingCycle)
	binding, _ := found.span(tracing.SpanBindingCycle)
	if sum, total := queue.duration()+cycle.duration()+binding.duration(), root.duration(); sum > total+time.Millisecond {
		t.Errorf("queue wait %s + scheduling cycle %s + binding cycle %s = %s exceed the attempt's %s", queue.duration(), cycle.duration(), binding.duration(), sum, total)
	}
	var lines []string
	for _, sp := range found.Spans {
		lines = append(lines, fmt.Sprintf("%-18s +%-10s %s", sp.OperationName, sp.start().Sub(root.start()), sp.duration()))
	}
	sort.Strings(lines)
	t.Logf("trace %s of %s, as Jaeger returned it (span, start in the attempt, duration):\n%s", found.TraceID, pod.Name, strings.Join(lines, "\n"))
}
