//go:build kube1.35

package observe

import (
	"context"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// This file is the part of observe that holds for Kubernetes v1.35 alone:
// the scheduling algorithm is given the pod without its queue entry, and
// the framework's event recorder is an EventRecorder, and RunPermitPlugins
// returns only a status.

// eventRecorder is the type of the event recorders a profile.RecorderFactory
// makes, which the framework keeps.
type eventRecorder = events.EventRecorder

// observeSchedulePod records each run of sched's scheduling algorithm. The
// pod's queue entry (its attempts, when it was queued) is the one NextPod
// returned last: the scheduler pops a pod and runs its scheduling cycle on
// one goroutine, one pod at a time.
func (r *Recorder) observeSchedulePod(sched *scheduler.Scheduler) {
	var popped atomic.Pointer[framework.QueuedPodInfo]
	nextPod := sched.NextPod
	sched.NextPod = func(logger klog.Logger) (*framework.QueuedPodInfo, error) {
		podInfo, err := nextPod(logger)
		popped.Store(podInfo)
		return podInfo, err
	}
	schedulePod := sched.SchedulePod
	sched.SchedulePod = func(ctx context.Context, f framework.Framework, state fwk.CycleState, pod *v1.Pod) (scheduler.ScheduleResult, error) {
		return r.schedulePod(ctx, f, state, queuedInfo(popped.Load(), pod), func() (scheduler.ScheduleResult, error) {
			return schedulePod(ctx, f, state, pod)
		})
	}
}

// queuedInfo is popped when it is pod's queue entry; otherwise (the
// algorithm called for a pod the queue did not give) an entry for pod
// queued now, at its first attempt.
func queuedInfo(popped *framework.QueuedPodInfo, pod *v1.Pod) *framework.QueuedPodInfo {
	if popped != nil && popped.Pod != nil && popped.Pod.UID == pod.UID {
		return popped
	}
	podInfo, _ := framework.NewPodInfo(pod)
	return &framework.QueuedPodInfo{PodInfo: podInfo, Timestamp: time.Now(), Attempts: 1}
}

func (f *observedFramework) RunPermitPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	start := time.Now()
	s := f.Framework.RunPermitPlugins(ctx, state, pod, nodeName)
	permitted(state, start, s)
	return s
}
