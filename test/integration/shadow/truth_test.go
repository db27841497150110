package shadow

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/test/framework"
)

const (
	truthNamespace = "truth"
	// truthLive is the live profile: the default plugins.
	truthLive = "truth"
	truthSeed = 20261208
	// minCompared is how many pods must have a shadow run to compare.
	minCompared = 200
	// maxNotCompared bounds the shadow runs left uncompared: with one pod
	// at a time nothing changes the snapshot during a run, so none is
	// expected.
	maxNotCompared = numPods / 50
)

// TestShadowTruth proves that a shadow predicts what plain kube-scheduler
// running the shadow's configuration decides from the same cluster state.
// schedscope-scheduler schedules a seeded workload of 300 pods on 24 nodes
// (makeNodes, makePods) one pod at a time with the default profile live
// and the bin-packing profile of config/scheduler-binpack.yaml as its
// shadow. Then plain kube-scheduler, with the bin-packing profile alone,
// decides each pod in turn on the same nodes with the pods before it bound
// where the live profile put them. Its node must be the shadow's or one of
// equal top score in the shadow's record (a tie, which kube-scheduler breaks
// at random and the shadow towards the live node), and it must find no node
// exactly when the shadow found none. The workload must make the shadow
// disagree with the live profile, at least minCompared pods must be
// compared, and at most maxNotCompared not.
func TestShadowTruth(t *testing.T) {
	ctx := context.Background()
	cp := framework.StartTestControlPlane(t)
	client, err := framework.FastClient(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	withLive, alone, binpack := binpackConfigs(t)
	rng := rand.New(rand.NewPCG(truthSeed, truthSeed))
	for _, n := range makeNodes(rng) {
		if err := framework.CreateNode(ctx, client, n, n.Status.Capacity); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: truthNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := makePods(rng, truthNamespace, truthLive)
	attempts := liveAttempts(ctx, t, cp, client, withLive, binpack, pods)

	if err := framework.DeletePods(ctx, client, truthNamespace); err != nil {
		t.Fatal(err)
	}
	plain, err := cp.StartScheduler(ctx, "kube-scheduler", "kube-scheduler", alone)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Stop()
	if err := plain.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	// kube-scheduler handles a pod's events in the order of its watch, so
	// the pods placed before a pod are in its cache when it queues the pod.
	c := truthCounts{outcomes: map[record.ShadowOutcome]int{}}
	for i, p := range pods {
		candidate := p.DeepCopy()
		candidate.Spec.SchedulerName = binpack
		node, err := decide(ctx, client, candidate)
		if err != nil {
			t.Fatalf("plain kube-scheduler and pod %s: %v\n%s", p.Name, err, plain.Tail())
		}
		c.compare(t, p.Name, attempts[i].Shadows[0], node)
		if live := attempts[i].SelectedNode; node == "" || node != live {
			place(ctx, t, client, p, live)
		}
	}
	compared := numPods - c.notCompared
	t.Logf("%d pods: %d compared (%d on the shadow's node, %d on a node of equal top score, %d unschedulable to both), %d not compared; the shadow's outcomes against the live profile %v",
		numPods, compared, c.exact, c.ties, c.unschedulableBoth, c.notCompared, c.outcomes)
	if c.outcomes[record.ShadowOtherNode] == 0 {
		t.Errorf("the shadow never chose another node than the live profile: the workload proves nothing")
	}
	if compared < minCompared || c.notCompared > maxNotCompared {
		t.Errorf("%d pods compared and %d not: want at least %d and at most %d", compared, c.notCompared, minCompared, maxNotCompared)
	}
}

// binpackConfigs returns two configurations of the bin-packing profile of
// config/scheduler-binpack.yaml, without leader election: beside the
// default profile truthLive, and alone; and its schedulerName.
func binpackConfigs(t *testing.T) (withLive, alone, binpack string) {
	t.Helper()
	profile, binpack, err := framework.BinpackProfile()
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{
		"apiVersion":     "kubescheduler.config.k8s.io/v1",
		"kind":           "KubeSchedulerConfiguration",
		"leaderElection": map[string]any{"leaderElect": false},
	}
	render := func(profiles ...any) string {
		cfg["profiles"] = profiles
		out, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	return render(map[string]any{"schedulerName": truthLive}, profile), render(profile), binpack
}

// liveAttempts schedules pods one at a time with schedscope-scheduler,
// shadow shadowing truthLive in config, and returns the record of each
// pod's first attempt, in order. A pod found unschedulable is deleted, so
// that each pod meets the nodes with only the pods before it bound.
func liveAttempts(ctx context.Context, t *testing.T, cp *framework.ControlPlane, client kubernetes.Interface, config, shadow string, pods []*v1.Pod) []*record.Attempt {
	t.Helper()
	s, err := cp.StartScheduler(ctx, "schedscope-scheduler", "schedscope-scheduler", config,
		"--shadow-profile="+shadow+"="+truthLive, "--record-buffer-size=20000")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if err := s.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	bound := map[string]string{}
	for _, p := range pods {
		node, err := decide(ctx, client, p.DeepCopy())
		if err != nil {
			t.Fatalf("schedscope-scheduler and pod %s: %v\n%s", p.Name, err, s.Tail())
		}
		if node == "" {
			deletePod(ctx, t, client, p)
		}
		bound[p.Name] = node
	}

	first := map[string]*record.Attempt{}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		l, err := framework.ListRecords(s.StreamURL)
		if err != nil {
			return false, err
		}
		for _, r := range l.Items {
			if r.Attempt.Pod.Namespace == truthNamespace && r.Attempt.Attempt == 1 {
				first[r.Attempt.Pod.Name] = r.Attempt
			}
		}
		return len(first) == len(pods), nil
	})
	if err != nil {
		t.Fatalf("records of the first attempts of %d of %d pods: %v", len(first), len(pods), err)
	}
	attempts := make([]*record.Attempt, len(pods))
	for i, p := range pods {
		a := first[p.Name]
		if a.SelectedNode != bound[p.Name] {
			t.Fatalf("pod %s: bound to %q, its record says %q", p.Name, bound[p.Name], a.SelectedNode)
		}
		if len(a.Shadows) != 1 || a.Shadows[0].Profile != shadow {
			t.Fatalf("pod %s: shadow runs %+v, want one of %s", p.Name, a.Shadows, shadow)
		}
		attempts[i] = a
	}
	return attempts
}

// decide creates pod and waits until it is bound, returning its node, or
// found unschedulable, returning "".
func decide(ctx context.Context, client kubernetes.Interface, pod *v1.Pod) (string, error) {
	if _, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	var node string
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = got.Spec.NodeName
		return node != "" || unschedulable(got), nil
	})
	if err != nil {
		return "", fmt.Errorf("neither bound nor found unschedulable: %w", err)
	}
	return node, nil
}

func unschedulable(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled {
			return c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable
		}
	}
	return false
}

// place leaves pod where the live profile put it: bound to node, or, when
// node is "", absent.
func place(ctx context.Context, t *testing.T, client kubernetes.Interface, pod *v1.Pod, node string) {
	t.Helper()
	deletePod(ctx, t, client, pod)
	if node == "" {
		return
	}
	bound := pod.DeepCopy()
	bound.Spec.NodeName = node
	if _, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, bound, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding pod %s to %s: %v", pod.Name, node, err)
	}
}

// deletePod deletes pod at once: no kubelet runs to end it gracefully.
func deletePod(ctx context.Context, t *testing.T, client kubernetes.Interface, pod *v1.Pod) {
	t.Helper()
	err := client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting pod %s: %v", pod.Name, err)
	}
}

// truthCounts counts how the shadow's runs compare with plain
// kube-scheduler's decisions.
type truthCounts struct {
	// exact: plain kube-scheduler bound the pod to the shadow's node.
	exact int
	// ties: to another node of the same top score in the shadow's record.
	ties int
	// unschedulableBoth: neither found a node.
	unschedulableBoth int
	// notCompared: the shadow's run was not compared with the live attempt.
	notCompared int
	// outcomes are the shadow's outcomes against the live profile.
	outcomes map[record.ShadowOutcome]int
}

// compare counts how plain kube-scheduler's node for pod ("" for none)
// compares with the shadow's run, and fails the test where they differ.
func (c *truthCounts) compare(t *testing.T, pod string, run record.ShadowRun, plain string) {
	t.Helper()
	c.outcomes[run.Outcome]++
	if run.Outcome == record.ShadowNotCompared {
		c.notCompared++
		return
	}
	s := run.Attempt
	if s == nil {
		t.Errorf("pod %s: the shadow's run (%s) has no attempt", pod, run.Outcome)
		return
	}
	chosen := ""
	if s.Result == record.ResultScheduled {
		chosen = s.SelectedNode
	}
	switch {
	case chosen == "" && plain == "":
		c.unschedulableBoth++
	case chosen == "":
		t.Errorf("pod %s: the shadow found no node (%s), plain kube-scheduler bound it to %s", pod, s.Message, plain)
	case plain == "":
		t.Errorf("pod %s: the shadow chose %s (%s), plain kube-scheduler found no node", pod, chosen, shadowScore(s, chosen))
	case chosen == plain:
		c.exact++
	default:
		top, topOK := totalScore(s, chosen)
		other, otherOK := totalScore(s, plain)
		if topOK && otherOK && top == other {
			c.ties++
			return
		}
		t.Errorf("pod %s: the shadow chose %s (%s), plain kube-scheduler bound it to %s (%s)",
			pod, chosen, shadowScore(s, chosen), plain, shadowScore(s, plain))
	}
}

// totalScore is a's total score of node, if a scored it.
func totalScore(a *record.Attempt, node string) (int64, bool) {
	if a.Scores == nil {
		return 0, false
	}
	for _, n := range a.Scores.Nodes {
		if n.Node == node {
			return n.Total, true
		}
	}
	return 0, false
}

// shadowScore says what the shadow's record a scored node.
func shadowScore(a *record.Attempt, node string) string {
	if total, ok := totalScore(a, node); ok {
		return fmt.Sprintf("shadow's score %d", total)
	}
	return "not scored by the shadow"
}
