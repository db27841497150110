//go:build compat && kube1.35

package bench

import (
	"testing"

	"k8s.io/kubernetes/pkg/scheduler"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
)

// perfHooks are the harness's hooks an upstream test sets: v1.35's
// harness has none its tests set.
type perfHooks struct{}

// runUpstream runs the workload file of the working directory as upstream's
// test does with setup, observed by o unless it is nil; started is called
// with each workload's context before it runs.
//
// v1.35's harness has no hook that hands over the scheduler it starts; the
// test binary is built with the overlay of hack/perfhook, which adds one
// (SetStartedSchedulerFn).
func runUpstream(t *testing.T, setup upstreamSetup, o *observer, started func(tContext)) {
	if setup.timeout > 0 {
		t.Fatalf("v1.35's harness has no option for the pods' scheduling timeout (%v)", setup.timeout)
	}
	perf.SetStartedSchedulerFn(func(tCtx tContext, sched *scheduler.Scheduler) error {
		started(tCtx)
		if o == nil {
			return nil
		}
		return o.install(tCtx, sched)
	})
	defer perf.SetStartedSchedulerFn(nil)
	perf.RunIntegrationPerfScheduling(t, "performance-config.yaml")
}
