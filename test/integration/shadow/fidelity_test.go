package shadow

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/test/framework"
)

const (
	namespace = "fidelity"
	// ownNamespace holds a pod that names the shadow.
	ownNamespace = "fidelity-own"
	live         = "fidelity"
	shadow       = "fidelity-shadow"
	seed         = 20261207
)

// config has the default profile twice: live, and its identical shadow.
const config = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: fidelity
- schedulerName: fidelity-shadow
`

// TestShadowFidelity schedules a seeded workload of 300 pods on 24 nodes
// (resources, node affinity, pod affinity and anti-affinity, topology
// spreading, taints, and a share that no node fits) with a shadow
// identical to the live profile in every attempt. Every compared attempt
// must be sameNode when the live profile found a node and neither when it
// did not, and an attempt not compared must say why. The scheduler's
// metrics count the outcomes, and a pod that names the shadow stays
// pending, counted.
func TestShadowFidelity(t *testing.T) {
	ctx := context.Background()
	cp := framework.StartTestControlPlane(t)
	client, err := framework.FastClient(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	for _, n := range makeNodes(rng) {
		if err := framework.CreateNode(ctx, client, n, n.Status.Capacity); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{namespace, ownNamespace} {
		if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	s, err := cp.StartScheduler(ctx, "schedscope-scheduler", "schedscope-scheduler", config,
		"--shadow-profile="+shadow+"="+live, "--record-buffer-size=20000")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if err := s.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}

	own := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "names-the-shadow", Namespace: ownNamespace},
		Spec:       v1.PodSpec{SchedulerName: shadow, Containers: []v1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}},
	}
	if _, err := client.CoreV1().Pods(ownNamespace).Create(ctx, own, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := makePods(rng, namespace, live)
	for _, p := range pods {
		if _, err := client.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	records := settledRecords(ctx, t, client, s)

	outcomes := map[record.ShadowOutcome]int{}
	scored := 0
	for _, rec := range records {
		if len(rec.Shadows) != 1 || rec.Shadows[0].Profile != shadow {
			t.Errorf("pod %s attempt %d: shadow runs %+v, want one of %s", rec.Pod.Name, rec.Attempt, rec.Shadows, shadow)
			continue
		}
		run := rec.Shadows[0]
		outcomes[run.Outcome]++
		liveFound := rec.SelectedNode != ""
		switch {
		case run.Outcome == record.ShadowNotCompared:
			if run.NotComparedReason == "" {
				t.Errorf("pod %s attempt %d: not compared, and no reason given", rec.Pod.Name, rec.Attempt)
			}
		case liveFound && run.Outcome != record.ShadowSameNode:
			t.Errorf("pod %s attempt %d: live chose %s, the identical shadow %s (%s; live node rank %d)",
				rec.Pod.Name, rec.Attempt, rec.SelectedNode, shadowNode(run), run.Outcome, run.LiveNodeRank)
		case !liveFound && run.Outcome != record.ShadowNeither:
			t.Errorf("pod %s attempt %d: live found no node (%s), the identical shadow: %s %s",
				rec.Pod.Name, rec.Attempt, rec.Message, run.Outcome, shadowNode(run))
		case liveFound && run.LiveNodeRank == 1:
			scored++
		}
	}
	t.Logf("%d attempts; shadow outcomes %v; %d with the live node ranked first by the shadow's scores", len(records), outcomes, scored)
	if outcomes[record.ShadowSameNode] < numPods/2 || outcomes[record.ShadowNeither] == 0 || scored == 0 {
		t.Errorf("shadow outcomes %v, %d scored: want most pods placed, some unschedulable, and scored choices", outcomes, scored)
	}
	checkMetrics(t, s, outcomes)
	got, err := client.CoreV1().Pods(ownNamespace).Get(ctx, own.Name, metav1.GetOptions{})
	if err != nil || got.Spec.NodeName != "" {
		t.Errorf("the pod that names the shadow is on node %q (%v); a shadow schedules no pod", got.Spec.NodeName, err)
	}
}

// checkMetrics checks that the scheduler counts the shadow's outcomes as
// the records have them, and the pod that names the shadow.
func checkMetrics(t *testing.T, s *framework.Scheduler, outcomes map[record.ShadowOutcome]int) {
	t.Helper()
	_, families, err := framework.Scrape(s.MetricsURL)
	if err != nil {
		t.Fatal(err)
	}
	counted := map[record.ShadowOutcome]int{}
	if f := families["schedscope_shadow_attempts_total"]; f != nil {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["profile"] != live || labels["shadow"] != shadow {
				t.Errorf("schedscope_shadow_attempts_total has a series of %v", labels)
			}
			counted[record.ShadowOutcome(labels["outcome"])] = int(m.GetCounter().GetValue())
		}
	}
	if diff := cmp.Diff(outcomes, counted); diff != "" {
		t.Errorf("schedscope_shadow_attempts_total by outcome, against the records (-records +metric):\n%s", diff)
	}
	ownPods := 0.0
	if f := families["schedscope_shadow_pods_total"]; f != nil && len(f.GetMetric()) == 1 {
		ownPods = f.GetMetric()[0].GetCounter().GetValue()
	}
	if ownPods != 1 {
		t.Errorf("schedscope_shadow_pods_total is %v, want 1: the pod that names the shadow", ownPods)
	}
}

func shadowNode(run record.ShadowRun) string {
	if run.Attempt == nil {
		return ""
	}
	return run.Attempt.SelectedNode
}

// settledRecords waits until every pod is bound or was found unschedulable
// in its latest attempt, and returns every attempt's record.
func settledRecords(ctx context.Context, t *testing.T, client kubernetes.Interface, s *framework.Scheduler) []*record.Attempt {
	t.Helper()
	var records []*record.Attempt
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := framework.ListRecords(s.StreamURL)
		if err != nil {
			return false, err
		}
		latest := map[string]*record.Attempt{}
		records = records[:0]
		for _, r := range l.Items {
			records = append(records, r.Attempt)
			latest[r.Attempt.Pod.Name] = r.Attempt
		}
		pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			rec := latest[p.Name]
			if rec == nil || p.Spec.NodeName == "" && rec.Result != record.ResultUnschedulable {
				return false, nil
			}
		}
		return len(pods.Items) == numPods, nil
	})
	if err != nil {
		t.Fatalf("waiting for the workload to settle: %v\n%s", err, s.Tail())
	}
	return records
}
