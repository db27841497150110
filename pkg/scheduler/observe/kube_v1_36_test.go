//go:build kube1.36

package observe

import (
	"context"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	v1 "k8s.io/api/core/v1"
	"k8s.io/api/scheduling/v1alpha2"
	fwk "k8s.io/kube-scheduler/framework"
)

// leftAlonePluginLists are the framework's plugin lists observePlugins
// knowingly leaves as they are.
var leftAlonePluginLists = []string{
	"preEnqueuePlugins", "queueSortPlugins", "batchablePlugins", "enqueueExtensions", "extenders",
	"podGroupPostFilterPlugins", "placementGeneratePlugins", "placementScorePlugins",
}

// podGroupPostFilterPart has v1.36's PodGroupPostFilter, an interface of
// k8s.io/kubernetes' framework.
type podGroupPostFilterPart struct{ b *shapeBase }

func (p podGroupPostFilterPart) PodGroupPostFilter(context.Context, *v1alpha2.PodGroup, []*v1.Pod, func(context.Context) *fwk.Status) *fwk.Status {
	p.b.called("PodGroupPostFilter")
	return fwk.NewStatus(fwk.Unschedulable)
}

type placementGeneratePart struct{ b *shapeBase }

func (p placementGeneratePart) GeneratePlacements(context.Context, fwk.PodGroupCycleState, fwk.PodGroupInfo, *fwk.Placement) (*fwk.GeneratePlacementsResult, *fwk.Status) {
	return nil, nil
}

type placementScorePart struct{ b *shapeBase }

func (p placementScorePart) ScorePlacement(context.Context, fwk.PodGroupCycleState, fwk.PodGroupInfo, *fwk.PodGroupAssignments) (int64, *fwk.Status) {
	return 1, nil
}

func (p placementScorePart) PlacementScoreExtensions() fwk.PlacementScoreExtensions { return nil }

func (p queueSortPart) Less(x, y fwk.QueuedPodInfo) bool {
	return (corev1helpers.PodPriority(x.GetPodInfo().GetPod()) > corev1helpers.PodPriority(y.GetPodInfo().GetPod())) != p.b.varied
}
