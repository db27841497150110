//go:build !kube1.35

package observe

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// This file is the part of observe that holds from Kubernetes v1.36 on: the
// scheduling algorithm is given the pod's queue entry, and the framework's
// event recorder is an EventRecorderLogger, and RunPermitPlugins returns
// each plugin's wait.

// eventRecorder is the type of the event recorders a profile.RecorderFactory
// makes, which the framework keeps.
type eventRecorder = events.EventRecorderLogger

func (v victimRecorder) WithLogger(logger klog.Logger) events.EventRecorderLogger {
	return victimRecorder{eventRecorder: v.eventRecorder.WithLogger(logger), recorder: v.recorder}
}

// observeSchedulePod records each run of sched's scheduling algorithm.
func (r *Recorder) observeSchedulePod(sched *scheduler.Scheduler) {
	schedulePod := sched.SchedulePod
	sched.SchedulePod = func(ctx context.Context, f framework.Framework, state fwk.CycleState, podInfo *framework.QueuedPodInfo) (scheduler.ScheduleResult, error) {
		return r.schedulePod(ctx, f, state, podInfo, func() (scheduler.ScheduleResult, error) {
			return schedulePod(ctx, f, state, podInfo)
		})
	}
}

func (f *observedFramework) RunPermitPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) (map[string]time.Duration, *fwk.Status) {
	start := time.Now()
	waits, s := f.Framework.RunPermitPlugins(ctx, state, pod, nodeName)
	permitted(state, start, s)
	return waits, s
}
