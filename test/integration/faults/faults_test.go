// Package faults injects faults into real components — a killed sidecar, a
// killed leader, a restarted kube-apiserver, an unavailable etcd — while
// schedscope-scheduler schedules a workload, and checks what the
// reliability requirements say must hold: no pod lost or bound twice, the
// sidecar recovering without a restart, and every record either stored or
// counted as lost.
package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/test/framework"
)

const (
	profile = "schedscope"
	// schedulerConfig runs one profile; leader election is set per test.
	schedulerConfig = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: " + profile + "\n"
	// noLeaderElection is for tests of a single scheduler.
	noLeaderElection = "--leader-elect=false"
)

func startScheduler(t *testing.T, cp *framework.ControlPlane, name string, extra ...string) *framework.Scheduler {
	t.Helper()
	s, err := cp.StartScheduler(context.Background(), name, "schedscope-scheduler", schedulerConfig, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	return s
}

func startSidecar(t *testing.T, cp *framework.ControlPlane, name string, s *framework.Scheduler) *framework.Sidecar {
	t.Helper()
	sc, err := cp.StartSidecar(context.Background(), name, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Stop() })
	return sc
}

func createNamespace(t *testing.T, cp *framework.ControlPlane, name string) {
	t.Helper()
	if _, err := cp.Client.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// podName names the i-th pod of a workload phase.
func podName(phase string) func(int) string {
	return func(i int) string { return fmt.Sprintf("%s-%04d", phase, i) }
}

// createPodsAsync creates n pods in the background; the returned channel
// yields the result.
func createPodsAsync(cp *framework.ControlPlane, ns string, n int, name func(int) string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- framework.CreatePods(context.Background(), cp.Client, ns, profile, n, name) }()
	return done
}

// lastSeq returns the epoch and newest sequence of a scheduler's stream.
func lastSeq(t *testing.T, s *framework.Scheduler) (string, uint64) {
	t.Helper()
	epoch, seq, err := framework.NewestRecord(s.StreamURL)
	if err != nil {
		t.Fatal(err)
	}
	return epoch, seq
}

// poll waits for cond, failing the test with what after timeout.
func poll(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond()
	}); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// waitCaughtUp waits until the sidecar has stored, or counted as lost,
// every record of its scheduler's stream up to seq of epoch, and returns
// its status.
func waitCaughtUp(t *testing.T, sc *framework.Sidecar, epoch string, seq uint64) *framework.SidecarStatus {
	t.Helper()
	var st *framework.SidecarStatus
	poll(t, 2*time.Minute, fmt.Sprintf("%s to reach sequence %d of epoch %s", sc.Name, seq, epoch), func() (bool, error) {
		var err error
		if st, err = sc.Status(); err != nil {
			return false, nil
		}
		return st.Follower.Cursor.Epoch == epoch && st.Follower.Cursor.Seq == seq, nil
	})
	return st
}

// storedPods returns the pods of namespace ns the sidecar holds records
// of, by name, checking that each has exactly one record: a first
// attempt that scheduled it.
func storedPods(t *testing.T, sc *framework.Sidecar, ns string) map[string]v1alpha1.PodStatus {
	t.Helper()
	pods, err := sc.Pods(ns)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]v1alpha1.PodStatus, len(pods))
	for _, p := range pods {
		if p.Latest.Result != v1alpha1.ResultScheduled || p.Latest.Attempt != 1 {
			t.Errorf("%s: pod %s: latest record is attempt %d, %s (%s at %s), want attempt 1, scheduled", sc.Name, p.Pod.Name, p.Latest.Attempt, p.Latest.Result, p.Latest.Message, p.Latest.FailedPoint)
		}
		out[p.Pod.Name] = p
	}
	return out
}
