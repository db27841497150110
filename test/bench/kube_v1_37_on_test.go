//go:build !kube1.35 && !kube1.36

package bench

import (
	"time"

	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"
)

// tContext is the test context of scheduler_perf's hooks, which moved to
// test/utils/client-go/ktesting in Kubernetes v1.37.
type tContext = ktesting.TContext

// podsSchedulingTimeout is the harness's option that waits d for a
// workload's pods to be scheduled.
func podsSchedulingTimeout(d time.Duration) (perf.SchedulerPerfOption, error) {
	return perf.WithPodsSchedulingTimeout(d), nil
}
