//go:build !kube1.35

package observe

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

func (p preBindPart) PreBindPreFlight(_ context.Context, _ fwk.CycleState, pod *v1.Pod, node string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	p.b.called("PreBindPreFlight %s %s", pod.Name, node)
	return nil, p.b.status("PreBindPreFlight", fwk.Skip)
}

// signPod asks f for pod's signature, the way the scheduling queue does.
func signPod(ctx context.Context, f fwk.Handle, pod *v1.Pod) fwk.PodSignature {
	return f.SignPod(ctx, pod)
}

// runPermit runs f's Permit plugins and says what they answered.
func runPermit(ctx context.Context, f framework.Framework, state fwk.CycleState, pod *v1.Pod, node string) string {
	waits, s := f.RunPermitPlugins(ctx, state, pod, node)
	return fmt.Sprint(waits, " ", s)
}

func (p probe) PreBindPreFlight(context.Context, fwk.CycleState, *v1.Pod, string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	p.calls.sample()
	return nil, nil
}
