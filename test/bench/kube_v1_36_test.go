//go:build kube1.36

package bench

import (
	"fmt"
	"time"

	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
	"k8s.io/kubernetes/test/utils/ktesting"
)

// tContext is the test context of scheduler_perf's hooks in Kubernetes v1.36.
type tContext = ktesting.TContext

// podsSchedulingTimeout is the harness's option that waits d for a
// workload's pods to be scheduled: v1.36's harness has none.
func podsSchedulingTimeout(d time.Duration) (perf.SchedulerPerfOption, error) {
	return nil, fmt.Errorf("v1.36's harness has no option for the pods' scheduling timeout (%v)", d)
}
