package faults

import (
	"strconv"
	"testing"
	"time"

	"github.com/schedscope/schedscope/test/framework"
)

// TestSidecarKilledDuringBurst kills the sidecar (SIGKILL) while the
// scheduler works through a burst of 2000 pods and restarts it once every
// pod is bound. The scheduler must not notice; the restarted sidecar must
// relist, store every record still in the scheduler's buffer, and count
// the records the buffer dropped meanwhile exactly: stored + lost is what
// the scheduler emitted. The buffer holds 500 records, a quarter of the
// burst, so that a gap is certain.
func TestSidecarKilledDuringBurst(t *testing.T) {
	const (
		pods       = 2000
		bufferSize = 500
		killAfter  = 200 // records stored before the kill
		ns         = "burst"
	)
	cp := framework.StartTestControlPlane(t)
	sched := startScheduler(t, cp, "schedscope-scheduler", noLeaderElection, "--record-buffer-size="+strconv.Itoa(bufferSize))
	sc := startSidecar(t, cp, "schedscope-sidecar", sched)
	framework.CreateNodes(t, cp.Client, 25)
	createNamespace(t, cp, ns)
	schedPid := sched.Pid()
	sidecarPid := sc.Pid()

	start := time.Now()
	created := createPodsAsync(cp, ns, pods, podName("burst"))
	var before uint64
	poll(t, time.Minute, "the sidecar to store records", func() (bool, error) {
		st, err := sc.Status()
		if err != nil {
			return false, nil
		}
		before = st.Follower.Cursor.Seq
		return before >= killAfter, nil
	})
	sc.Kill()
	killedAt := time.Now()
	_, atKill := lastSeq(t, sched)
	t.Logf("sidecar killed (SIGKILL) %v into the burst, having stored at least %d records; the scheduler was at sequence %d", killedAt.Sub(start).Round(time.Millisecond), before, atKill)

	if err := <-created; err != nil {
		t.Fatal(err)
	}
	if err := framework.WaitForBound(t.Context(), cp.Client, ns, pods, 3*time.Minute); err != nil {
		t.Fatalf("with the sidecar down: %v", err)
	}
	bound := time.Now()
	if sched.Exited() || sched.Pid() != schedPid {
		t.Fatalf("the scheduler did not survive the sidecar's death:\n%s", sched.Tail())
	}
	epoch, emitted := lastSeq(t, sched)
	buffered, err := framework.ListRecords(sched.StreamURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("all %d pods bound %v after the burst began, the sidecar down; the scheduler emitted %d records, its buffer holds %d (sequences %d-%d)",
		pods, bound.Sub(start).Round(time.Millisecond), emitted, len(buffered.Items), buffered.Oldest, buffered.Seq)
	if emitted < pods {
		t.Fatalf("the scheduler emitted %d records for %d pods", emitted, pods)
	}
	if emitted-atKill <= bufferSize {
		t.Fatalf("only %d records were emitted while the sidecar was down, fewer than the buffer holds: no gap to count", emitted-atKill)
	}

	if err := sc.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	if sc.Pid() == sidecarPid {
		t.Fatalf("the sidecar has its old PID %d: it was not restarted", sidecarPid)
	}
	restarted := time.Now()
	st := waitCaughtUp(t, sc, epoch, emitted)
	caughtUp := time.Now()
	stored := uint64(st.Store.Attempts)
	lost := st.Follower.Cursor.Lost
	t.Logf("sidecar restarted after %v down; caught up in %v: relists %d, records emitted %d = stored %d + lost %d (reported gap %d)",
		restarted.Sub(killedAt).Round(time.Millisecond), caughtUp.Sub(restarted).Round(time.Millisecond), st.Follower.Relists, emitted, stored, lost, st.Follower.LastGap)
	if st.Follower.Relists < 1 {
		t.Errorf("the sidecar did not relist after the gap: %+v", st.Follower)
	}
	if stored+lost != emitted {
		t.Errorf("records emitted %d != stored %d + lost %d", emitted, stored, lost)
	}
	if lost == 0 || st.Follower.LastGap != lost {
		t.Errorf("one gap of %d records, reported as %d, want one gap equal to the %d lost", st.Follower.LastGap, lost, lost)
	}
	// Records 1..stored-buffered were stored before the kill; the gap is
	// what lies between them and the oldest buffered record.
	if want := buffered.Oldest - 1 - (stored - uint64(len(buffered.Items))); lost != want {
		t.Errorf("lost %d, want %d: the records between the last stored before the kill and the oldest buffered (%d)", lost, want, buffered.Oldest)
	}
	// Every record still in the scheduler's buffer is stored.
	missing := 0
	for _, r := range buffered.Items {
		a := r.Attempt
		attempts, err := sc.Attempts(a.Pod.Namespace, a.Pod.Name)
		if err != nil {
			t.Fatalf("attempts of %s/%s: %v", a.Pod.Namespace, a.Pod.Name, err)
		}
		found := false
		for _, s := range attempts {
			found = found || s.Epoch == epoch && s.Seq == r.Seq
		}
		if !found {
			missing++
			t.Errorf("buffered record %d (pod %s, attempt %d) is not stored", r.Seq, a.Pod.Name, a.Attempt)
		}
	}
	t.Logf("all %d records in the scheduler's buffer are stored (%d missing)", len(buffered.Items), missing)
}
