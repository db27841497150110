//go:build !kube1.35 && !kube1.36

package observe

import (
	"context"

	fwk "k8s.io/kube-scheduler/framework"
)

// leftAlonePluginLists are the framework's plugin lists observePlugins
// knowingly leaves as they are.
var leftAlonePluginLists = []string{
	"preEnqueuePlugins", "queueSortPlugins", "batchablePlugins", "enqueueExtensions", "extenders",
	"podGroupPostFilterPlugins", "placementGeneratePlugins", "placementFeasiblePlugins", "placementScorePlugins",
}

type podGroupPostFilterPart struct{ b *shapeBase }

func (p podGroupPostFilterPart) PodGroupPostFilter(context.Context, fwk.PodGroupCycleState, fwk.PodGroupInfo, fwk.PodGroupSchedulingFunc) (*fwk.PodGroupPostFilterResult, *fwk.Status) {
	p.b.called("PodGroupPostFilter")
	return nil, fwk.NewStatus(fwk.Unschedulable)
}

type placementGeneratePart struct{ b *shapeBase }

func (p placementGeneratePart) GeneratePlacements(context.Context, fwk.PodGroupCycleState, fwk.PodGroupInfo, *fwk.Placement) (*fwk.GeneratePlacementsResult, *fwk.Status) {
	return nil, nil
}

type placementScorePart struct{ b *shapeBase }

func (p placementScorePart) ScorePlacement(context.Context, fwk.PlacementCycleState, fwk.PodGroupInfo, *fwk.PodGroupAssignments) (int64, *fwk.Status) {
	return 1, nil
}

func (p placementScorePart) PlacementScoreExtensions() fwk.PlacementScoreExtensions { return nil }

func (p queueSortPart) Less(x, y fwk.QueuedEntityInfo) bool {
	return (x.GetPriority() > y.GetPriority()) != p.b.varied
}
