//go:build compat && !kube1.35

package bench

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
)

// perfHooks are the harness's hooks an upstream test sets.
type perfHooks struct {
	preRun     perf.PreRunFn
	nodeUpdate perf.NodeUpdateFn
}

// runUpstream runs the workload file of the working directory as upstream's
// test does with setup, observed by o unless it is nil; started is called
// with each workload's context before it runs.
func runUpstream(t *testing.T, setup upstreamSetup, o *observer, started func(tContext)) {
	nodeUpdate := setup.hooks.nodeUpdate
	if o != nil {
		nodeUpdate = chainNodeUpdates(o.nodeUpdate, nodeUpdate)
	}
	preRun := func(tCtx tContext, w *perf.Workload) (func(), error) {
		started(tCtx)
		if setup.hooks.preRun == nil {
			return nil, nil
		}
		return setup.hooks.preRun(tCtx, w)
	}
	opts := []perf.SchedulerPerfOption{perf.WithPreRunFn(preRun)}
	if nodeUpdate != nil {
		opts = append(opts, perf.WithNodeUpdateFn(nodeUpdate))
	}
	if setup.timeout > 0 {
		opt, err := podsSchedulingTimeout(setup.timeout)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, opt)
	}
	perf.RunIntegrationPerfScheduling(t, "performance-config.yaml", opts...)
}

// chainNodeUpdates calls each set hook in order.
func chainNodeUpdates(fns ...perf.NodeUpdateFn) perf.NodeUpdateFn {
	return func(tCtx tContext, sched *scheduler.Scheduler, w *perf.Workload, nodes *v1.NodeList) error {
		for _, fn := range fns {
			if fn == nil {
				continue
			}
			if err := fn(tCtx, sched, w, nodes); err != nil {
				return err
			}
		}
		return nil
	}
}
