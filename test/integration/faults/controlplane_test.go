package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/test/framework"
)

// TestControlPlaneOutage takes the control plane away while the scheduler
// has pods to schedule: kube-apiserver restarted, or etcd stopped for a
// few seconds and started again on the same data. The scheduler and the
// sidecar must ride it out in the same processes; every pod, created before
// or after the outage, must be bound; and the sidecar must store the
// records of the pods created after it, losing none.
//
// The scheduler runs without leader election: a leader that cannot renew
// its lease for the renew deadline exits by design, and a restart is what
// this test rules out.
func TestControlPlaneOutage(t *testing.T) {
	const (
		podsBefore = 300
		podsAfter  = 300
		ns         = "outage"
	)
	for _, tt := range []struct {
		name string
		// fault takes the control plane away and returns once the
		// kube-apiserver is ready again.
		fault func(ctx context.Context, cp *framework.ControlPlane) error
	}{
		{"kube-apiserver restarted", func(ctx context.Context, cp *framework.ControlPlane) error {
			return cp.RestartAPIServer(ctx)
		}},
		{"etcd unavailable", func(ctx context.Context, cp *framework.ControlPlane) error {
			cp.StopEtcd()
			// The fault is the time etcd is away: nothing to wait for.
			time.Sleep(5 * time.Second)
			if err := cp.StartEtcd(ctx); err != nil {
				return err
			}
			return cp.WaitAPIServer(ctx)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cp := framework.StartTestControlPlane(t)
			sched := startScheduler(t, cp, "schedscope-scheduler", noLeaderElection)
			sc := startSidecar(t, cp, "schedscope-sidecar", sched)
			framework.CreateNodes(t, cp.Client, 10)
			createNamespace(t, cp, ns)
			schedPid, sidecarPid := sched.Pid(), sc.Pid()

			if err := framework.CreatePods(t.Context(), cp.Client, ns, profile, podsBefore, podName("before")); err != nil {
				t.Fatal(err)
			}
			// Mid-workload: the fault strikes once scheduling has begun.
			poll(t, time.Minute, "the first records", func() (bool, error) {
				_, seq := lastSeq(t, sched)
				return seq >= 20, nil
			})
			boundBefore, _, err := framework.CountBound(t.Context(), cp.Client, ns)
			if err != nil {
				t.Fatal(err)
			}
			faultAt := time.Now()
			if err := tt.fault(t.Context(), cp); err != nil {
				t.Fatal(err)
			}
			recovered := time.Now()
			t.Logf("%s with %d of %d pods bound; the kube-apiserver was ready again after %v", tt.name, boundBefore, podsBefore, recovered.Sub(faultAt).Round(time.Millisecond))

			if err := framework.CreatePods(t.Context(), cp.Client, ns, profile, podsAfter, podName("after")); err != nil {
				t.Fatal(err)
			}
			if err := framework.WaitForBound(t.Context(), cp.Client, ns, podsBefore+podsAfter, 3*time.Minute); err != nil {
				t.Fatalf("after the outage: %v", err)
			}
			allBound := time.Now()
			for _, p := range []*framework.Process{sched.Process, sc.Process} {
				if p.Exited() {
					t.Fatalf("%s exited:\n%s", p.Name, p.Tail())
				}
			}
			if sched.Pid() != schedPid || sc.Pid() != sidecarPid {
				t.Fatalf("PIDs changed: scheduler %d -> %d, sidecar %d -> %d", schedPid, sched.Pid(), sidecarPid, sc.Pid())
			}

			epoch, emitted := lastSeq(t, sched)
			st := waitCaughtUp(t, sc, epoch, emitted)
			stored, lost := uint64(st.Store.Attempts), st.Follower.Cursor.Lost
			pods, err := sc.Pods(ns)
			if err != nil {
				t.Fatal(err)
			}
			scheduledAfter, failed := 0, 0
			for _, p := range pods {
				failed += p.Latest.Attempt - 1
				if p.Latest.Result != v1alpha1.ResultScheduled {
					t.Errorf("pod %s: latest stored record is %s (%s), want scheduled", p.Pod.Name, p.Latest.Result, p.Latest.Message)
				}
				if p.Latest.Result == v1alpha1.ResultScheduled && strings.HasPrefix(p.Pod.Name, "after-") {
					scheduledAfter++
				}
			}
			t.Logf("all %d pods bound %v after the recovery; same PIDs (scheduler %d, sidecar %d); records emitted %d = stored %d + lost %d; pods with records %d, of which created after the outage %d/%d; attempts retried %d",
				podsBefore+podsAfter, allBound.Sub(recovered).Round(time.Millisecond), schedPid, sidecarPid, emitted, stored, lost, len(pods), scheduledAfter, podsAfter, failed)
			if lost != 0 || stored != emitted {
				t.Errorf("records emitted %d, stored %d, lost %d: want every record stored", emitted, stored, lost)
			}
			if len(pods) != podsBefore+podsAfter {
				t.Errorf("the sidecar holds records of %d pods, want %d", len(pods), podsBefore+podsAfter)
			}
			if scheduledAfter != podsAfter {
				t.Errorf("the sidecar holds scheduled records of %d pods created after the outage, want %d", scheduledAfter, podsAfter)
			}
		})
	}
}
