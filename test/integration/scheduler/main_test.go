package scheduler

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/test/framework"
)

// Profiles of the scheduler under test.
const (
	profileDefault = "schedscope"
	profileBinpack = "schedscope-binpack"
)

// schedulerConfig has the upstream default profile and a bin-packing one.
const schedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: schedscope
- schedulerName: schedscope-binpack
  plugins:
    score:
      disabled:
      - name: NodeResourcesBalancedAllocation
      - name: ImageLocality
      enabled:
      - name: NodeResourcesFit
        weight: 5
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - name: cpu
          weight: 1
        - name: memory
          weight: 1
`

var (
	controlPlane *framework.ControlPlane
	client       kubernetes.Interface
	sched        *framework.Scheduler
	// receiver gets the scheduler's traces, sampled at 100%.
	receiver *framework.OTLPReceiver
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "schedscope-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	controlPlane, err = framework.StartControlPlane(ctx, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer controlPlane.Stop()
	client = controlPlane.Client
	receiver, err = framework.StartOTLPReceiver()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer receiver.Stop()
	tracingConfig := filepath.Join(dir, "tracing.yaml")
	if err := os.WriteFile(tracingConfig, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: "+receiver.Addr+"\nsamplingRatePerMillion: 1000000\n"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sched, err = controlPlane.StartScheduler(ctx, "schedscope-scheduler", "schedscope-scheduler", schedulerConfig, "--record-buffer-size=20000", "--record-buffer-bytes=1073741824", "--tracing-config-file="+tracingConfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer sched.Stop()
	code := m.Run()
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "logs kept in %s\n", dir)
	}
	return code
}

// waitForRecord waits for a record of pod uid with the given result and
// returns it with every earlier record of the pod.
func waitForRecord(t *testing.T, uid types.UID, result record.Result) (*record.Attempt, []*record.Attempt) {
	t.Helper()
	return waitForRecordOf(t, sched, uid, result)
}

// waitForRecordOf is waitForRecord on the stream of scheduler s.
func waitForRecordOf(t *testing.T, s *framework.Scheduler, uid types.UID, result record.Result) (*record.Attempt, []*record.Attempt) {
	t.Helper()
	var found *record.Attempt
	var all []*record.Attempt
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		l, err := framework.ListRecords(s.StreamURL)
		if err != nil {
			return false, err
		}
		all = all[:0]
		for _, r := range l.Items {
			if a := r.Attempt; a.Pod.UID == string(uid) {
				all = append(all, a)
				if a.Result == result {
					found = a
				}
			}
		}
		return found != nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for a %q record of pod %s (have %d records of it): %v", result, uid, len(all), err)
	}
	return found, all
}

// nodeSpec describes a test node.
type nodeSpec struct {
	name          string
	cpu, memory   string
	labels        map[string]string
	taints        []v1.Taint
	unschedulable bool
	images        []v1.ContainerImage
}

func createNodes(t *testing.T, specs ...nodeSpec) {
	t.Helper()
	ctx := context.Background()
	for _, s := range specs {
		n := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: s.name, Labels: map[string]string{v1.LabelHostname: s.name}},
			Spec:       v1.NodeSpec{Taints: s.taints, Unschedulable: s.unschedulable},
		}
		for k, v := range s.labels {
			n.Labels[k] = v
		}
		n.Status.Images = s.images
		if err := framework.CreateNode(ctx, client, n, v1.ResourceList{
			v1.ResourceCPU:    resource.MustParse(s.cpu),
			v1.ResourceMemory: resource.MustParse(s.memory),
		}); err != nil {
			t.Fatal(err)
		}
		name := s.name
		t.Cleanup(func() {
			_ = client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
}

// createNamespace creates a namespace that is deleted with the test.
func createNamespace(t *testing.T) string {
	t.Helper()
	ns, err := client.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "scenario-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.CoreV1().Pods(ns.Name).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{})
		_ = client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// pauseImage is the image of test pods that do not name one.
const pauseImage = "registry.k8s.io/pause:3.10"

func createPod(t *testing.T, pod *v1.Pod) *v1.Pod {
	t.Helper()
	if len(pod.Spec.Containers) == 0 {
		pod.Spec.Containers = []v1.Container{{Name: "pause", Image: pauseImage}}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Image == "" {
			pod.Spec.Containers[i].Image = pauseImage
		}
	}
	created, err := client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	return created
}

// waitForBinding waits until pod is bound and returns its node.
func waitForBinding(t *testing.T, pod *v1.Pod) string {
	t.Helper()
	var node string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = p.Spec.NodeName
		return node != "", nil
	})
	if err != nil {
		t.Fatalf("waiting for pod %s/%s to be bound: %v", pod.Namespace, pod.Name, err)
	}
	return node
}

// verdictOf returns the Filter verdict group holding node.
func verdictOf(r *record.Attempt, node string) *record.VerdictGroup {
	for i := range r.Filter {
		for _, n := range r.Filter[i].Nodes {
			if n == node {
				return &r.Filter[i]
			}
		}
	}
	return nil
}

// scoreOf returns a node's score line and the index of plugin in it.
func scoreOf(t *testing.T, r *record.Attempt, node, plugin string) (record.NodeScore, int) {
	t.Helper()
	if r.Scores == nil {
		t.Fatalf("record has no scores: %+v", r)
	}
	idx := -1
	for i, p := range r.Scores.Plugins {
		if p.Name == plugin {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("plugin %s not among score plugins %+v", plugin, r.Scores.Plugins)
	}
	for _, n := range r.Scores.Nodes {
		if n.Node == node {
			return n, idx
		}
	}
	t.Fatalf("node %s not scored; scored: %+v", node, r.Scores.Nodes)
	return record.NodeScore{}, 0
}

// expectTrace waits for the spans of rec's trace, as the stream of sched
// carries it beside rec, and checks the attempt is traced whole: the
// attempt, its queue wait, every extension point the record holds, and for
// a bound pod the binding cycle with Bind.
func expectTrace(t *testing.T, rec *record.Attempt) {
	t.Helper()
	traceID := traceIDOf(t, rec)
	if traceID == "" {
		t.Errorf("record of attempt %d of %s has no trace ID", rec.Attempt, rec.Pod.Name)
		return
	}
	want := map[string]bool{"SchedulingAttempt": true, "QueueWait": true, "SchedulingCycle": true}
	for _, p := range rec.Points {
		want[p.Point] = true
	}
	if rec.Result == record.ResultScheduled {
		want["BindingCycle"], want[record.Bind] = true, true
	}
	var names map[string]bool
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		names = map[string]bool{}
		for _, s := range receiver.Trace(traceID) {
			names[s.Name] = true
		}
		for n := range want {
			if !names[n] {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("trace %s of %s has spans %v, want at least %v", traceID, rec.Pod.Name, names, want)
	}
}

// traceIDOf returns the trace ID the stream of sched carries beside rec.
func traceIDOf(t *testing.T, rec *record.Attempt) string {
	t.Helper()
	l, err := framework.ListRecords(sched.StreamURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range l.Items {
		if r.Attempt.Pod.UID == rec.Pod.UID && r.Attempt.Attempt == rec.Attempt {
			return r.TraceID
		}
	}
	t.Fatalf("the stream no longer holds attempt %d of %s", rec.Attempt, rec.Pod.Name)
	return ""
}
