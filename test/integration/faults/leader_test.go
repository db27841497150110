package faults

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedscope/schedscope/test/framework"
)

// leaseName is the lease the replicas compete for, in kube-system.
const leaseName = "schedscope-scheduler"

// leaderElection is kube-scheduler's leader election with durations short
// enough for a takeover in seconds, and a renew deadline long enough that
// a leader on a loaded machine keeps its lease: a leader that cannot renew
// exits, as kube-scheduler does (its lease request times out at half the
// deadline; at 2s, a busy apiserver under the race detector made the new
// leader give up).
var leaderElection = []string{
	"--leader-elect=true", "--leader-elect-resource-name=" + leaseName, "--leader-elect-resource-namespace=kube-system",
	"--leader-elect-lease-duration=8s", "--leader-elect-renew-deadline=6s", "--leader-elect-retry-period=1s",
}

// TestLeaderKilled runs two schedscope-scheduler replicas with leader
// election, each with its own sidecar following its own stream, as in the
// manifests' pod. The leader is killed (SIGKILL) mid-workload: the other
// must take over, every pod must be scheduled exactly once, and the new
// leader's sidecar must store its records — it was following the
// replica's stream, empty, all along. The killed replica is then
// restarted, as the kubelet would: its sidecar detects the new epoch and
// finds the stream of a replica that is not leading: empty.
func TestLeaderKilled(t *testing.T) {
	const (
		pods = 1000
		// beforeKill pods are created before the leader dies, the rest
		// after: the new leader has work whatever the first one got done.
		beforeKill = 500
		killAfter  = 300 // records of the first leader
		ns         = "leader"
	)
	cp := framework.StartTestControlPlane(t)
	a := startScheduler(t, cp, "scheduler-a", leaderElection...)
	var holderA string
	poll(t, time.Minute, "scheduler-a to acquire the lease", func() (bool, error) {
		holderA = leaseHolder(t, cp)
		return holderA != "", nil
	})
	b := startScheduler(t, cp, "scheduler-b", leaderElection...)
	sa := startSidecar(t, cp, "sidecar-a", a)
	sb := startSidecar(t, cp, "sidecar-b", b)
	framework.CreateNodes(t, cp.Client, 10)
	createNamespace(t, cp, ns)

	start := time.Now()
	created := createPodsAsync(cp, ns, beforeKill, podName("pod"))
	poll(t, time.Minute, "the leader to schedule", func() (bool, error) {
		_, seq := lastSeq(t, a)
		return seq >= killAfter, nil
	})
	// The replica that is not leading serves its stream, empty, and its
	// sidecar follows it.
	epochB, seqB := lastSeq(t, b)
	if seqB != 0 {
		t.Fatalf("scheduler-b, not leading, emitted %d records", seqB)
	}
	poll(t, time.Minute, "sidecar-b to follow scheduler-b's empty stream", func() (bool, error) {
		st, err := sb.Status()
		// Nothing to store yet, so no cursor: the open watch is the sign.
		return err == nil && st.Follower.Watching, nil
	})
	epochA1, _ := lastSeq(t, a)
	a.Kill()
	killedAt := time.Now()
	_, killedSeq := lastSeq(t, b)
	late := createPodsAsync(cp, ns, pods-beforeKill, podName("late"))

	// Takeover: the lease changes hands and scheduler-b emits records.
	var leaseMoved, firstRecord time.Time
	poll(t, time.Minute, "scheduler-b to take over", func() (bool, error) {
		if leaseMoved.IsZero() {
			if h := leaseHolder(t, cp); h != "" && h != holderA {
				leaseMoved = time.Now()
			}
		}
		if _, seq := lastSeq(t, b); seq > 0 && firstRecord.IsZero() {
			firstRecord = time.Now()
		}
		return !leaseMoved.IsZero() && !firstRecord.IsZero(), nil
	})
	bound, _, err := framework.CountBound(t.Context(), cp.Client, ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("leader scheduler-a killed (SIGKILL) %v into the workload after %d records; lease moved to scheduler-b %v later, its first record %v after the kill (b's sequence at the kill: %d); %d of %d pods bound by then",
		killedAt.Sub(start).Round(time.Millisecond), killAfter, leaseMoved.Sub(killedAt).Round(time.Millisecond), firstRecord.Sub(killedAt).Round(time.Millisecond), killedSeq, bound, pods)

	for _, c := range []<-chan error{created, late} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	if err := framework.WaitForBound(t.Context(), cp.Client, ns, pods, 3*time.Minute); err != nil {
		t.Fatalf("after the takeover: %v", err)
	}
	allBound := time.Now()

	// The killed replica comes back, as the kubelet restarts a container:
	// a new epoch, and an empty stream, for it does not lead.
	if err := a.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	epochA2, seqA2 := lastSeq(t, a)
	if epochA2 == epochA1 || seqA2 != 0 {
		t.Errorf("restarted scheduler-a: epoch %s (was %s), %d records; want a new epoch and none", epochA2, epochA1, seqA2)
	}
	stA := waitCaughtUp(t, sa, epochA2, 0)
	if stA.Follower.EpochChanges < 1 {
		t.Errorf("sidecar-a did not detect the epoch change: %+v", stA.Follower)
	}

	_, emittedB := lastSeq(t, b)
	stB := waitCaughtUp(t, sb, epochB, emittedB)
	storedB, lostB := uint64(stB.Store.Attempts), stB.Follower.Cursor.Lost
	if storedB+lostB != emittedB || lostB != 0 {
		t.Errorf("scheduler-b emitted %d records; sidecar-b stored %d, lost %d: want all stored", emittedB, storedB, lostB)
	}

	// Exactly once: every record is a first attempt that bound its pod
	// (a second binding of a bound pod would fail, and be recorded as
	// failed); no pod has records in both sidecars; a pod without any
	// record was bound by scheduler-a in its last moments, whose records
	// died with it.
	byA, byB := storedPods(t, sa, ns), storedPods(t, sb, ns)
	list, err := cp.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unrecorded := 0
	for _, p := range list.Items {
		_, inA := byA[p.Name]
		_, inB := byB[p.Name]
		switch {
		case inA && inB:
			t.Errorf("pod %s was scheduled by both replicas", p.Name)
		case !inA && !inB:
			unrecorded++
			// The condition's time has a resolution of a second.
			if at, ok := scheduledAt(p); !ok || at.After(killedAt.Truncate(time.Second).Add(time.Second)) {
				t.Errorf("pod %s has no record, yet was bound at %v, after scheduler-a was killed at %v", p.Name, at, killedAt)
			}
		}
		if inA && byA[p.Name].Latest.SelectedNode != p.Spec.NodeName || inB && byB[p.Name].Latest.SelectedNode != p.Spec.NodeName {
			t.Errorf("pod %s is bound to %s, not the node its record selected", p.Name, p.Spec.NodeName)
		}
	}
	t.Logf("all %d pods bound %v after the start, each once: %d by scheduler-a (in sidecar-a), %d by scheduler-b (in sidecar-b), %d by scheduler-a without a record before its death; scheduler-b emitted %d records = stored %d + lost %d; sidecar-a saw %d epoch change(s), restarted scheduler-a's stream holds %d records",
		pods, allBound.Sub(start).Round(time.Millisecond), len(byA), len(byB), unrecorded, emittedB, storedB, lostB, stA.Follower.EpochChanges, seqA2)
	if len(list.Items) != pods || len(byA)+len(byB)+unrecorded != pods {
		t.Errorf("%d pods, %d+%d recorded and %d unrecorded, want %d", len(list.Items), len(byA), len(byB), unrecorded, pods)
	}
	if len(byB) == 0 {
		t.Error("sidecar-b stored no pod scheduled by the new leader")
	}
}

func leaseHolder(t *testing.T, cp *framework.ControlPlane) string {
	t.Helper()
	l, err := cp.Client.CoordinationV1().Leases("kube-system").Get(t.Context(), leaseName, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// scheduledAt is when the pod's PodScheduled condition became true.
func scheduledAt(p v1.Pod) (time.Time, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionTrue {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}
